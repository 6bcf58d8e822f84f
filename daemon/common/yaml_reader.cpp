// The shared YAML reader: positions, the scalar dialect and the checks every mapping gets (see yaml_reader.hpp).
#include "faultline/yaml_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <cctype>
#include <map>
#include <set>
#include <utility>

namespace faultline::yaml {

Position position_of(std::string_view file, const YAML::Mark& mark) {
  Position p;
  p.file = std::string(file);
  if (mark.is_null()) return p;
  p.line = mark.line >= 0 ? static_cast<std::uint32_t>(mark.line) + 1 : 0;
  p.column = mark.column >= 0 ? static_cast<std::uint32_t>(mark.column) + 1 : 0;
  return p;
}

std::string_view kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

std::optional<bool> parse_boolean(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return std::nullopt;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

namespace {

// A spelling someone may have meant as a boolean: YAML 1.1 words and capitalised forms.
bool looks_boolean(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  static constexpr std::string_view kWords[] = {"true", "false", "yes", "no", "on", "off", "y", "n"};
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

void Reader::error(const YAML::Node& node, std::string message) { error_at(pos(node), std::move(message)); }

void Reader::error_at(const Position& pos, std::string message) {
  diags_.push_back(Diagnostic{Diagnostic::Kind::error, pos, std::move(message)});
}

void Reader::warning(const YAML::Node& node, std::string message) {
  diags_.push_back(Diagnostic{Diagnostic::Kind::warning, pos(node), std::move(message)});
}

bool Reader::errors_since(std::size_t mark) const {
  return std::any_of(diags_.begin() + static_cast<std::ptrdiff_t>(mark), diags_.end(),
                     [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
}

namespace {

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

bool Reader::within_file_limit(std::size_t size) {
  if (size <= kMaxFileBytes) return true;
  error_at(Position{file_, 1, 1}, "the file is " + std::to_string(size) + " bytes; a rule or config file may have at most " +
                                      size_text(kMaxFileBytes));
  return false;
}

std::optional<std::string> Reader::read_file() {
  auto unreadable = [&](std::string why) -> std::optional<std::string> {
    diags_.push_back(Diagnostic{Diagnostic::Kind::error, Position{file_, 0, 0}, std::move(why), true});
    return std::nullopt;
  };
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) return unreadable(std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return unreadable("not a regular file");
  if (!within_file_limit(static_cast<std::size_t>(st.st_size))) return std::nullopt;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return unreadable(std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  // A file that grew since stat: what is beyond the size checked is refused too.
  if (in && in.peek() != std::ifstream::traits_type::eof() && !within_file_limit(kMaxFileBytes + 1)) return std::nullopt;
  if (in.bad()) return unreadable("read error");
  return text;
}

std::optional<YAML::Node> Reader::load(std::string_view text) {
  if (!within_file_limit(text.size())) return std::nullopt;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    error_at(position_of(file_, e.mark), e.msg);
    return std::nullopt;
  }
  check_tree(root, 0);
  return root;
}

namespace {

// A line that opens or closes a document: "---" or "..." at column 0, then a blank or the end of the line.
bool document_marker(std::string_view line) {
  if (line.size() < 3 || !(line.starts_with("---") || line.starts_with("..."))) return false;
  return line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r';
}

// Whether a piece of YAML holds anything but blanks and comments.
bool has_content(std::string_view piece) {
  for (std::size_t at = 0; at < piece.size();) {
    std::size_t end = piece.find('\n', at);
    if (end == std::string_view::npos) end = piece.size();
    std::string_view line = piece.substr(at, end - at);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

// Not YAML::LoadAll: yaml-cpp 0.7 (Debian 12) loops for ever, allocating, on a document it cannot start (a ','
// where a document would begin, also right after a root node: "[a],"; jbeder/yaml-cpp#1040, fixed upstream after
// 0.8). Each document (split at the "---" and "..." lines, which no scalar may hold) is parsed alone with YAML::Load,
// which reads one document and stops; its marks count from its first line (Reader::enter), so the cost is linear.
std::optional<std::vector<Reader::Document>> Reader::load_all(std::string_view text) {
  if (!within_file_limit(text.size())) return std::nullopt;
  struct Piece {
    std::size_t begin, end;
    std::uint32_t line;
  };
  std::vector<Piece> pieces;
  std::size_t begin = 0;
  std::uint32_t line = 0, begin_line = 0;
  for (std::size_t at = 0; at <= text.size(); ++line) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    if (document_marker(text.substr(at, end - at))) {
      pieces.push_back({begin, at, begin_line});
      begin = at;
      begin_line = line;
    }
    at = end + 1;
  }
  pieces.push_back({begin, text.size(), begin_line});
  std::vector<Document> docs;
  for (const Piece& piece : pieces) {
    Document doc;
    doc.text.assign(text.substr(piece.begin, piece.end - piece.begin));
    doc.first_line = piece.line;
    if (document_marker(std::string_view(doc.text).substr(0, doc.text.find('\n'))))
      doc.text.replace(0, 3, "   ");  // what follows the marker on its line is the document's
    if (!has_content(doc.text)) continue;
    enter(doc);
    try {
      doc.root = YAML::Load(doc.text);
    } catch (const YAML::Exception& e) {
      error_at(at(e.mark), e.msg);
      line_offset_ = 0;
      return std::nullopt;
    }
    const std::size_t first = doc.text.find_first_not_of(" \t\r\n");
    if (doc.root.IsNull() && first != std::string::npos && doc.text[first] == ',') {  // where LoadAll loops
      YAML::Mark mark;
      mark.pos = static_cast<int>(first);
      mark.line = static_cast<int>(std::count(doc.text.begin(), doc.text.begin() + static_cast<std::ptrdiff_t>(first), '\n'));
      const std::size_t line_start = first == 0 ? std::string::npos : doc.text.rfind('\n', first - 1);
      mark.column = static_cast<int>(line_start == std::string::npos ? first : first - line_start - 1);
      error_at(at(mark), "a YAML document cannot start with ','");
      line_offset_ = 0;
      return std::nullopt;
    }
    check_tree(doc.root, 0);
    docs.push_back(std::move(doc));
  }
  line_offset_ = 0;
  return docs;
}

void Reader::check_tree(const YAML::Node& node, int depth) {
  if (depth > 64) return;  // an alias cycle or a silly nesting: nothing left to learn
  if (node.IsScalar()) {
    if (node.Scalar().size() > kMaxScalarBytes)
      error(node, "a value of " + std::to_string(node.Scalar().size()) + " bytes ('" + excerpt(node.Scalar(), 40) +
                      "'); a value may have at most " + size_text(kMaxScalarBytes));
    return;
  }
  if (node.IsSequence()) {
    for (const auto& item : node) check_tree(item, depth + 1);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, Position, std::less<>> first;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;  // copies: the iterator yields a temporary
    const YAML::Node value = it->second;
    if (key.IsScalar() && key.Scalar().size() > kMaxScalarBytes) {
      check_tree(key, depth + 1);
    } else if (key.IsScalar()) {
      auto [at, inserted] = first.emplace(key.Scalar(), pos(key));
      if (!inserted) error(key, "duplicate key '" + excerpt(key.Scalar()) + "' (first at " + at->second.str() + ")");
    }
    check_tree(value, depth + 1);
  }
}

bool Reader::mapping(const YAML::Node& node, std::string_view where, const std::vector<Field>& fields) {
  if (node.IsNull()) return true;
  if (!node.IsMap()) {
    error(node, std::string(where) + ": expected a mapping, got " + std::string(kind_name(node)));
    return false;
  }
  std::set<std::string, std::less<>> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
    if (!key.IsScalar()) {
      error(key, std::string(where) + ": keys must be strings");
      continue;
    }
    const std::string& name = key.Scalar();
    if (!seen.insert(name).second) continue;  // a duplicate, reported when the document was loaded
    auto f = std::find_if(fields.begin(), fields.end(), [&](const Field& x) { return x.key == name; });
    if (f == fields.end()) {
      std::string known;
      for (const auto& x : fields) known += (known.empty() ? "" : ", ") + std::string(x.key);
      error(key, std::string(where) + ": unknown key '" + excerpt(name) + "' (known: " + known + ")");
      continue;
    }
    f->visit(it->second);
  }
  return true;
}

void Reader::check_keys(const YAML::Node& node, std::initializer_list<std::string_view> known,
                        std::string_view where) {
  if (!node.IsMap()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) {
      error(key, std::string(where) + ": keys must be strings");
      continue;
    }
    if (std::find(known.begin(), known.end(), key.Scalar()) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    error(key, std::string(where) + ": unknown key '" + excerpt(key.Scalar()) + "' (known: " + list + ")");
  }
}

bool Reader::scalar(const YAML::Node& node, std::string_view what) {
  if (node.IsScalar()) return true;
  error(node, std::string(what) + ": expected a scalar, got " + std::string(kind_name(node)));
  return false;
}

bool Reader::string(const YAML::Node& node, std::string& out, std::string_view what) {
  if (!scalar(node, what)) return false;
  out = node.Scalar();
  return true;
}

bool Reader::boolean(const YAML::Node& node, bool& out, std::string_view what) {
  if (!scalar(node, what)) return false;
  const std::string& s = node.Scalar();
  if (auto b = parse_boolean(s)) {
    out = *b;
    return true;
  }
  std::string message = std::string(what) + ": expected true or false, got '" + excerpt(s) + "'";
  if (looks_boolean(s)) message += " (only the lowercase words true and false are booleans here, not YAML 1.1's yes/no/on/off)";
  error(node, std::move(message));
  return false;
}

bool Reader::integer_in(const YAML::Node& node, std::int64_t& out, std::string_view what, std::int64_t min,
                        std::int64_t max) {
  if (!scalar(node, what)) return false;
  const std::string& s = node.Scalar();
  auto v = parse_integer(s);
  // A negative number where none can be is not a whole number; so is one too long to hold.
  if (!v || (min >= 0 && s.front() == '-')) {
    if (all_digits(s)) {
      error(node, std::string(what) + ": must be at most " + std::to_string(max));
    } else {
      error(node, std::string(what) + ": expected a whole number, got '" + excerpt(s) + "'");
    }
    return false;
  }
  if (*v < min) {
    error(node, std::string(what) + ": must be at least " + std::to_string(min));
    return false;
  }
  if (*v > max) {
    error(node, std::string(what) + ": must be at most " + std::to_string(max));
    return false;
  }
  out = *v;
  return true;
}

bool Reader::duration(const YAML::Node& node, Duration& out, std::string_view what, Zero zero) {
  if (!scalar(node, what)) return false;
  auto d = parse_duration(node.Scalar());
  if (!d) {
    error(node, std::string(what) + ": bad duration '" + excerpt(node.Scalar()) + "' (e.g. 250ms, 5s, 10m, 1h30m)");
    return false;
  }
  if (zero == Zero::rejected && d->count() == 0) {
    error(node, std::string(what) + ": must be longer than 0s");
    return false;
  }
  out = *d;
  return true;
}

bool Reader::strings(const YAML::Node& node, std::vector<std::string>& out, std::string_view what, Empty empty) {
  if (node.IsNull() && empty == Empty::allowed) {
    out.clear();
    return true;
  }
  if (node.IsScalar()) {
    out = {node.Scalar()};
    return true;
  }
  if (!node.IsSequence()) {
    error(node, std::string(what) + ": expected a list of strings, got " + std::string(kind_name(node)));
    return false;
  }
  std::vector<std::string> items;
  bool ok = true;
  for (const auto& item : node) {
    if (scalar(item, what)) {
      items.push_back(item.Scalar());
    } else {
      ok = false;
    }
  }
  if (ok) out = std::move(items);
  return ok;
}

bool Reader::fields(const YAML::Node& node, Fields& out, std::string_view what, Empty empty) {
  if (node.IsNull() && empty == Empty::allowed) return true;
  if (!node.IsMap()) {
    error(node, std::string(what) + ": expected a mapping of names to strings, got " + std::string(kind_name(node)));
    return false;
  }
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!scalar(key, what) || !scalar(value, std::string(what) + "." + key.Scalar())) {
      ok = false;
      continue;
    }
    set_field(out, key.Scalar(), value.Scalar());
  }
  return ok;
}

Reader::Visit Reader::string(std::string& out, std::string what) {
  return [this, &out, what = std::move(what)](const YAML::Node& n) { string(n, out, what); };
}

Reader::Visit Reader::boolean(bool& out, std::string what) {
  return [this, &out, what = std::move(what)](const YAML::Node& n) { boolean(n, out, what); };
}

Reader::Visit Reader::optional_boolean(std::optional<bool>& out, std::string what) {
  return [this, &out, what = std::move(what)](const YAML::Node& n) {
    bool b = false;
    if (boolean(n, b, what)) out = b;
  };
}

Reader::Visit Reader::duration(Duration& out, std::string what, Zero zero) {
  return [this, &out, what = std::move(what), zero](const YAML::Node& n) { duration(n, out, what, zero); };
}

Reader::Visit Reader::strings(std::vector<std::string>& out, std::string what) {
  return [this, &out, what = std::move(what)](const YAML::Node& n) { strings(n, out, what); };
}

Reader::Visit Reader::fields(Fields& out, std::string what) {
  return [this, &out, what = std::move(what)](const YAML::Node& n) { fields(n, out, what); };
}

}  // namespace faultline::yaml
