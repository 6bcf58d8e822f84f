// The parsed-rules cache: a flat binary codec of the rule model (every field of every type a rule file reads into,
// tests aside), and the entry around it. Numbers are little-endian fixed-width, strings and lists carry their length;
// the decoder checks every length against what is left, so a damaged entry is a miss, never a crash.
#include "parsed_cache.hpp"

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <type_traits>

#include "faultline/durable_file.hpp"
#include "faultline/types.hpp"

namespace faultline::rules_detail {

namespace {

// Changes whenever the layout below does (the build id changes with any change to the code as well).
constexpr std::string_view kFormat = "faultline-parsed-rules/1";

// The GNU build id of the running executable, as hex; empty when it has none (then nothing is cached).
std::string executable_build_id() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& out = *static_cast<std::string*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, p, sizeof note);
            const char* name = p + sizeof note;
            const char* desc = name + ((note.n_namesz + 3) & ~3u);
            if (desc + note.n_descsz > end) break;
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static const char* const kHex = "0123456789abcdef";
              for (std::size_t k = 0; k < note.n_descsz; ++k) {
                const auto b = static_cast<unsigned char>(desc[k]);
                out.push_back(kHex[b >> 4]);
                out.push_back(kHex[b & 15]);
              }
              return 1;
            }
            p = desc + ((note.n_descsz + 3) & ~3u);
          }
        }
        return 1;  // the first object is the executable: stop there
      },
      &id);
  return id;
}

const std::string& build_id() {
  static const std::string id = executable_build_id();
  return id;
}

// ---- writing ---------------------------------------------------------------------------------------------------

class Writer {
 public:
  std::string out;

  template <typename T>
  void num(T v) {
    static_assert(std::is_integral_v<T>);
    const auto u = static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
    for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  void flag(bool b) { num<std::uint8_t>(b ? 1 : 0); }
  void str(std::string_view s) {
    num<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    out.append(s);
  }
  void duration(Duration d) { num<std::int64_t>(d.count()); }
  void opt_duration(const std::optional<Duration>& d) {
    flag(d.has_value());
    if (d) duration(*d);
  }
  void strings(const std::vector<std::string>& v) {
    num<std::uint32_t>(static_cast<std::uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void fields(const Fields& f) {
    num<std::uint32_t>(static_cast<std::uint32_t>(f.size()));
    for (const auto& [k, v] : f) {
      str(k);
      str(v);
    }
  }
  void pos(const Position& p) {
    str(p.file);
    num(p.line);
    num(p.column);
  }
  void diagnostic(const Diagnostic& d) {
    num(static_cast<std::uint8_t>(d.kind));
    pos(d.pos);
    str(d.message);
    flag(d.unreadable);
  }
  void event(const EventPattern& e) {
    str(e.name);
    str(e.regex);
    flag(e.caseless);
    num<std::uint32_t>(static_cast<std::uint32_t>(e.levels.size()));
    for (Level l : e.levels) num(static_cast<std::uint8_t>(l));
    fields(e.set);
    strings(e.captures);
    num<std::uint32_t>(static_cast<std::uint32_t>(e.normalise.size()));
    for (const auto& [field, t] : e.normalise) {
      str(field);
      num(static_cast<std::uint8_t>(t));
    }
    pos(e.pos);
  }
  void step(const Step& s) {
    strings(s.events);
    num(s.count);
    opt_duration(s.within);
    flag(s.optional);
    flag(s.severity.has_value());
    if (s.severity) num(static_cast<std::uint8_t>(*s.severity));
    strings(s.after);
    opt_duration(s.absent_for);
    pos(s.pos);
  }
  void rule(const Rule& r) {
    str(r.id);
    str(r.title);
    num(static_cast<std::uint8_t>(r.severity));
    str(r.summary);
    str(r.remediation);
    strings(r.references);
    fields(r.labels);
    num<std::uint32_t>(static_cast<std::uint32_t>(r.events.size()));
    for (const auto& e : r.events) event(e);
    num<std::uint32_t>(static_cast<std::uint32_t>(r.sequence.size()));
    for (const auto& s : r.sequence) step(s);
    strings(r.reset_on);
    num(r.tolerance.lines);
    duration(r.tolerance.time);
    flag(r.key.stream);
    flag(r.key.node);
    strings(r.key.fields);
    duration(r.lifetime.quiet);
    strings(r.lifetime.resolve_on);
    flag(r.cascade.enabled);
    duration(r.cascade.window);
    duration(r.cascade.hold);
    strings(r.attribution.explains);
    num<std::uint32_t>(static_cast<std::uint32_t>(r.attribution.when.size()));
    for (const auto& [k, values] : r.attribution.when) {
      str(k);
      strings(values);
    }
    strings(r.attribution.gpu);
    num<std::int32_t>(r.priority);
    num(r.context_lines);
    pos(r.pos);
    str(r.content_hash);
  }
};

// ---- reading ---------------------------------------------------------------------------------------------------

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && in_.empty(); }

  template <typename T>
  T num() {
    static_assert(std::is_integral_v<T>);
    if (!take(sizeof(T))) return T{};
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) u |= std::uint64_t{static_cast<unsigned char>(last_[i])} << (8 * i);
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(u));
  }
  bool flag() { return num<std::uint8_t>() != 0; }
  std::string str() {
    const auto n = num<std::uint32_t>();
    if (!take(n)) return {};
    return std::string(last_, n);
  }
  // A count of items that take at least `min_bytes` each: more than what is left can hold is damage.
  std::uint32_t count(std::size_t min_bytes = 1) {
    const auto n = num<std::uint32_t>();
    if (n > in_.size() / min_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  Duration duration() { return Duration(num<std::int64_t>()); }
  std::optional<Duration> opt_duration() {
    if (!flag()) return std::nullopt;
    return duration();
  }
  std::vector<std::string> strings() {
    std::vector<std::string> v(count(4));
    for (auto& s : v) s = str();
    return v;
  }
  Fields fields() {
    Fields f(count(8));
    for (auto& [k, v] : f) {
      k = str();
      v = str();
    }
    return f;
  }
  Position pos() {
    Position p;
    p.file = str();
    p.line = num<std::uint32_t>();
    p.column = num<std::uint32_t>();
    return p;
  }
  template <typename E>
  E enumerated(std::uint8_t last) {
    const auto v = num<std::uint8_t>();
    if (v > last) ok_ = false;
    return static_cast<E>(v);
  }
  Diagnostic diagnostic() {
    Diagnostic d;
    d.kind = enumerated<Diagnostic::Kind>(static_cast<std::uint8_t>(Diagnostic::Kind::warning));
    d.pos = pos();
    d.message = str();
    d.unreadable = flag();
    return d;
  }
  EventPattern event() {
    EventPattern e;
    e.name = str();
    e.regex = str();
    e.caseless = flag();
    e.levels.resize(count());
    for (auto& l : e.levels) l = enumerated<Level>(static_cast<std::uint8_t>(Level::critical));
    e.set = fields();
    e.captures = strings();
    e.normalise.resize(count(5));
    for (auto& [field, t] : e.normalise) {
      field = str();
      t = enumerated<FieldTransform>(static_cast<std::uint8_t>(FieldTransform::sm_arch));
    }
    e.pos = pos();
    return e;
  }
  Step step() {
    Step s;
    s.events = strings();
    s.count = num<std::uint32_t>();
    s.within = opt_duration();
    s.optional = flag();
    if (flag()) s.severity = enumerated<Severity>(static_cast<std::uint8_t>(Severity::critical));
    s.after = strings();
    s.absent_for = opt_duration();
    s.pos = pos();
    return s;
  }
  Rule rule() {
    Rule r;
    r.id = str();
    r.title = str();
    r.severity = enumerated<Severity>(static_cast<std::uint8_t>(Severity::critical));
    r.summary = str();
    r.remediation = str();
    r.references = strings();
    r.labels = fields();
    const auto events = count(16);
    for (std::uint32_t i = 0; i < events && ok_; ++i) r.events.push_back(event());
    const auto steps = count(16);
    for (std::uint32_t i = 0; i < steps && ok_; ++i) r.sequence.push_back(step());
    r.reset_on = strings();
    r.tolerance.lines = num<std::uint32_t>();
    r.tolerance.time = duration();
    r.key.stream = flag();
    r.key.node = flag();
    r.key.fields = strings();
    r.lifetime.quiet = duration();
    r.lifetime.resolve_on = strings();
    r.cascade.enabled = flag();
    r.cascade.window = duration();
    r.cascade.hold = duration();
    r.attribution.explains = strings();
    r.attribution.when.resize(count(8));
    for (auto& [k, values] : r.attribution.when) {
      k = str();
      values = strings();
    }
    r.attribution.gpu = strings();
    r.priority = num<std::int32_t>();
    r.context_lines = num<std::uint32_t>();
    r.pos = pos();
    r.content_hash = str();
    return r;
  }

 private:
  bool take(std::size_t n) {
    if (!ok_ || n > in_.size()) {
      ok_ = false;
      return false;
    }
    last_ = in_.data();
    in_.remove_prefix(n);
    return true;
  }
  std::string_view in_;
  const char* last_ = nullptr;
  bool ok_ = true;
};

// A source's bytes are hashed and compared in pieces of this size, read into a buffer on the stack.
constexpr std::size_t kPiece = 16 * 1024;

// The hash of a text, piece by piece (std::hash of each kPiece bytes from the start, chained): the same whether the
// text is in memory or read through a buffer. std::hash is fast and, the build id being part of an entry's name,
// need only be stable within one build.
struct TextHash {
  std::uint64_t h = 14695981039346656037ull;
  void add(std::string_view piece) {
    h = (h ^ static_cast<std::uint64_t>(std::hash<std::string_view>()(piece))) * 1099511628211ull;
  }
};

// Calls `each` with the file's bytes, kPiece at a time (the last piece shorter, or empty for an empty file), until it
// returns false; false when the file cannot be read or `each` said stop.
template <typename Each>
bool read_pieces(const std::string& path, Each each) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[kPiece];
  bool ok = true;
  for (;;) {
    std::size_t got = 0;
    while (got < kPiece) {
      const ssize_t n = ::read(fd, buf + got, kPiece - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) ok = false;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (!ok || !each(std::string_view(buf, got))) {
      ok = false;
      break;
    }
    if (got < kPiece) break;
  }
  ::close(fd);
  return ok;
}

// The entry's name: the format, the build, the options and every source, hashed (the content says which exactly).
std::string entry_path(const std::string& dir, const std::vector<ParsedSource>& sources, bool content_hash) {
  std::uint64_t h = fnv1a64(kFormat);
  h = fnv1a64(build_id(), fnv1a64("\xff", h));
  h = fnv1a64(content_hash ? "\xff" "hash" : "\xff" "nohash", h);
  for (const auto& s : sources) {
    h = fnv1a64(s.path, fnv1a64("\xff", h));
    h = (h ^ s.size) * 1099511628211ull;
    h = (h ^ s.hash) * 1099511628211ull;
  }
  return (std::filesystem::path(dir) / std::string("parsed-").append(hex16(h)).append(".bin")).string();
}

void header(Writer& w, const std::vector<std::string>& paths, const std::vector<FileRules>& parsed,
            bool content_hash) {
  w.str(kFormat);
  w.str(build_id());
  w.flag(content_hash);
  w.num<std::uint32_t>(static_cast<std::uint32_t>(paths.size()));
  for (std::size_t i = 0; i < paths.size(); ++i) {
    w.str(paths[i]);
    w.str(parsed[i].text);
  }
}

// Whether `entry` starts with what header() writes for these sources as their files are now; `size` gets that
// header's size. Each file's bytes are read again and compared, a piece at a time, with the entry's copy.
bool header_matches(std::string_view entry, const std::vector<ParsedSource>& sources, bool content_hash,
                    std::size_t& size) {
  std::size_t at = 0;
  const auto take = [&](std::string_view want) {
    if (entry.substr(at, want.size()) != want) return false;
    at += want.size();
    return true;
  };
  Writer start;
  start.str(kFormat);
  start.str(build_id());
  start.flag(content_hash);
  start.num<std::uint32_t>(static_cast<std::uint32_t>(sources.size()));
  if (!take(start.out)) return false;
  for (const auto& s : sources) {
    Writer path;
    path.str(s.path);
    path.num<std::uint32_t>(static_cast<std::uint32_t>(s.size));
    // An entry too short to hold the file is a miss before the file is read.
    if (s.size > entry.size() - std::min(entry.size(), at + path.out.size()) || !take(path.out)) return false;
    const std::size_t end = at + s.size;
    if (!read_pieces(s.path, [&](std::string_view piece) { return at + piece.size() <= end && take(piece); }) ||
        at != end) {
      return false;  // unreadable now, or other bytes than the entry's (changed since it was hashed)
    }
  }
  size = at;
  return true;
}

}  // namespace

std::string encode_file_rules(const std::vector<FileRules>& parsed) {
  Writer w;
  w.num<std::uint32_t>(static_cast<std::uint32_t>(parsed.size()));
  for (const auto& f : parsed) {
    w.num<std::uint32_t>(static_cast<std::uint32_t>(f.rules.rules.size()));
    for (const auto& r : f.rules.rules) w.rule(r);
    w.num<std::uint32_t>(static_cast<std::uint32_t>(f.diagnostics.size()));
    for (const auto& d : f.diagnostics) w.diagnostic(d);
  }
  return std::move(w.out);
}

std::optional<std::vector<FileRules>> decode_file_rules(std::string_view bytes) {
  Reader r(bytes);
  std::vector<FileRules> out(r.count(8));
  for (auto& f : out) {
    const auto rules = r.count(32);
    for (std::uint32_t i = 0; i < rules && r.ok(); ++i) f.rules.rules.push_back(r.rule());
    const auto diagnostics = r.count(16);
    for (std::uint32_t i = 0; i < diagnostics && r.ok(); ++i) f.diagnostics.push_back(r.diagnostic());
  }
  if (!r.done()) return std::nullopt;
  return out;
}

std::optional<ParsedSource> source_of_file(const std::string& path) {
  ParsedSource s{path, 0, 0};
  TextHash h;
  if (!read_pieces(path, [&](std::string_view piece) {
        h.add(piece);
        s.size += piece.size();
        return true;
      })) {
    return std::nullopt;
  }
  s.hash = h.h;
  return s;
}

ParsedSource source_of_text(const std::string& path, std::string_view text) {
  TextHash h;
  // As read_pieces gives them: whole pieces, then a shorter (or empty) last one.
  for (std::size_t at = 0;; at += kPiece) {
    const std::string_view piece = text.substr(at, kPiece);
    h.add(piece);
    if (piece.size() < kPiece) break;
  }
  return ParsedSource{path, text.size(), h.h};
}

std::optional<std::vector<FileRules>> load_parsed(const std::string& dir, const std::vector<ParsedSource>& sources,
                                                  bool content_hash) {
  if (dir.empty() || build_id().empty()) return std::nullopt;
  // Mapped, not read: an entry is only ever replaced by a rename (store_parsed), and mapping its cached pages costs
  // a fraction of copying them into fresh memory.
  auto mapped = map_file(entry_path(dir, sources, content_hash));
  if (!mapped) return std::nullopt;
  const std::string_view entry = mapped->bytes();
  std::size_t header_size = 0;
  if (!header_matches(entry, sources, content_hash, header_size)) return std::nullopt;  // other sources: a collision
  auto parsed = decode_file_rules(entry.substr(header_size));
  if (!parsed || parsed->size() != sources.size()) return std::nullopt;
  return parsed;
}

void store_parsed(const std::string& dir, const std::vector<std::string>& paths, bool content_hash,
                  const std::vector<FileRules>& parsed) {
  if (dir.empty() || build_id().empty() || parsed.size() != paths.size()) return;
  for (const auto& f : parsed) {
    for (const auto& r : f.rules.rules) {
      if (!r.tests.empty()) return;  // the codec keeps no tests
    }
  }
  std::vector<ParsedSource> sources;
  for (std::size_t i = 0; i < paths.size(); ++i) sources.push_back(source_of_text(paths[i], parsed[i].text));
  Writer w;
  header(w, paths, parsed, content_hash);
  w.out += encode_file_rules(parsed);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  (void)write_file_atomic(entry_path(dir, sources, content_hash), w.out, 0644);
}

}  // namespace faultline::rules_detail
