// The grouping half of the room: logger prefixes off, the terminal message as a template, the innermost frames, and
// the fingerprint over them. Pure functions over text; no regex engine (linear scans by hand).
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

#include "exception_line.hpp"
#include "faultline/fingerprint.hpp"

namespace faultline {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_space_or_tab(char c) { return c == ' ' || c == '\t'; }

bool level_word(std::string_view w) {
  static constexpr std::array<std::string_view, 9> kWords{"ERROR", "WARNING", "WARN",  "INFO",  "DEBUG",
                                                          "CRITICAL", "FATAL", "TRACE", "NOTICE"};
  return std::find(kWords.begin(), kWords.end(), w) != kWords.end();
}

bool month_word(std::string_view w) {
  static constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  return std::find(kMonths.begin(), kMonths.end(), w) != kMonths.end();
}

// A date or time token: digits with at least one of - / : . , and nothing but those and T, Z, +.
bool time_token(std::string_view w) {
  if (w.size() < 4 || !is_digit(w[0])) return false;
  bool sep = false;
  for (char c : w) {
    if (c == '-' || c == '/' || c == ':' || c == '.' || c == ',') {
      sep = true;
    } else if (!is_digit(c) && c != 'T' && c != 'Z' && c != '+') {
      return false;
    }
  }
  return sep;
}

// glog's severity and date: I1201, E0420, F0420.
bool glog_head(std::string_view w) {
  return w.size() == 5 && (w[0] == 'I' || w[0] == 'W' || w[0] == 'E' || w[0] == 'F') &&
         std::all_of(w.begin() + 1, w.end(), is_digit);
}

// "file.cc:89]" or "logging.cc:361:" — a source position ending a glog or Ray prefix.
bool source_position(std::string_view w) {
  if (w.empty() || (w.back() != ']' && w.back() != ':')) return false;
  w.remove_suffix(1);
  auto colon = w.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= w.size()) return false;
  if (!std::all_of(w.begin() + static_cast<long>(colon) + 1, w.end(), is_digit)) return false;
  auto file = w.substr(0, colon);
  return file.find('.') != std::string_view::npos && file.find(' ') == std::string_view::npos;
}

// "ollama[2690]:" — journald's unit and pid.
bool unit_pid(std::string_view w) {
  if (w.size() < 5 || w.back() != ':' || w[w.size() - 2] != ']') return false;
  auto open = w.find('[');
  if (open == std::string_view::npos || open == 0) return false;
  auto digits = w.substr(open + 1, w.size() - open - 3);
  return !digits.empty() && std::all_of(digits.begin(), digits.end(), is_digit);
}

// A bracketed or parenthesized group at the start that belongs to the logger, not to the message.
std::size_t group_end(std::string_view s) {
  const char close = s[0] == '(' ? ')' : ']';
  auto end = s.find(close);
  if (end == std::string_view::npos || end > 96) return 0;
  std::string_view inner = s.substr(1, end - 1);
  if (inner.empty()) return 0;
  if (s[0] == '(') {
    // vLLM's process tag "(EngineCore_0 pid=88)", Ray's "(raylet)" / "(pid=12, ip=10.0.0.1)".
    bool tag = inner.find("pid=") != std::string_view::npos || inner == "raylet" || inner == "gcs_server";
    return tag ? end + 1 : 0;
  }
  if (inner.starts_with("Errno") || inner.starts_with("Previous line") || inner.starts_with("enforce")) return 0;
  return end + 1;
}

std::string_view next_word(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && !is_space_or_tab(s[n])) ++n;
  return s.substr(0, n);
}

}  // namespace

std::string_view strip_log_prefix(std::string_view line) {
  std::size_t i = 0;      // where the next prefix token may start
  std::size_t after = 0;  // just past the last prefix token
  bool month = false;
  bool timed = false;  // a date or time was part of the prefix: a bare number after it is a pid or thread id
  for (int tokens = 0; tokens < 16 && i < line.size(); ++tokens) {
    std::string_view rest = line.substr(i);
    std::size_t len = 0;
    bool was_month = false;
    if (rest[0] == '(' || rest[0] == '[') {
      len = group_end(rest);
    } else {
      std::string_view w = next_word(rest);
      std::string_view bare = w;
      if (!bare.empty() && (bare.back() == ':' || bare.back() == '|')) bare.remove_suffix(1);
      const bool digits = !bare.empty() && std::all_of(bare.begin(), bare.end(), is_digit);
      const bool clock = time_token(bare) || glog_head(bare);
      if (clock || level_word(bare) || source_position(w) || unit_pid(w) || w == "-" || w == "|" ||
          (month && digits && bare.size() <= 2) || (timed && digits)) {
        len = w.size();
        timed = timed || clock;
      } else if (month_word(bare)) {
        len = w.size();
        was_month = true;
      } else {
        // A host name before journald's "unit[pid]:", or a Python logger name before " - ".
        std::string_view after_word = rest.substr(w.size());
        std::size_t k = 0;
        while (k < after_word.size() && is_space_or_tab(after_word[k])) ++k;
        std::string_view following = next_word(after_word.substr(k));
        if (!w.empty() && (unit_pid(following) || (following == "-" && std::all_of(w.begin(), w.end(), [](char c) {
                                                      return is_word(c) || c == '.';
                                                    })))) {
          len = w.size();
        }
      }
    }
    if (len == 0) break;
    month = was_month;
    i += len;
    if (i < line.size() && line[i] == ':') ++i;  // "[rank0]:", "ERROR:"
    after = i;
    while (i < line.size() && is_space_or_tab(line[i])) ++i;
  }
  if (after == 0) return line;
  if (after < line.size() && is_space_or_tab(line[after])) ++after;
  return line.substr(after);
}

std::string message_template(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  auto emit = [&out](std::string_view s) { out.append(s); };
  std::size_t i = 0;
  while (i < m.size() && is_space_or_tab(m[i])) ++i;
  while (i < m.size()) {
    char c = m[i];
    const bool word_before = i > 0 && (is_word(m[i - 1]) || m[i - 1] == '.');
    if (is_space_or_tab(c)) {
      while (i < m.size() && is_space_or_tab(m[i])) ++i;
      if (i < m.size()) out += ' ';
      continue;
    }
    // Quoted: an identifier becomes <id>; a quoted phrase keeps its words, templated.
    if ((c == '\'' || c == '"' || c == '`') && !word_before) {
      auto close = m.find(c == '`' ? '\'' : c, i + 1);
      if (c == '`' && (close == std::string_view::npos || close > i + 200)) close = m.find('`', i + 1);
      if (close != std::string_view::npos && close - i <= 200) {
        std::string_view inner = m.substr(i + 1, close - i - 1);
        if (!inner.empty() && std::none_of(inner.begin(), inner.end(), is_space_or_tab)) {
          emit("<id>");
        } else {
          out += c;
          out += message_template(inner);
          out += m[close];
        }
        i = close + 1;
        continue;
      }
    }
    // URLs and paths.
    if (!word_before && (m.substr(i).starts_with("http://") || m.substr(i).starts_with("https://") ||
                         m.substr(i).starts_with("s3://") || m.substr(i).starts_with("gs://"))) {
      while (i < m.size() && !is_space_or_tab(m[i]) && m[i] != '\'' && m[i] != '"' && m[i] != ')') ++i;
      emit("<url>");
      continue;
    }
    if (!word_before && (c == '/' || (c == '~' && i + 1 < m.size() && m[i + 1] == '/') ||
                         (c == '.' && i + 1 < m.size() && m[i + 1] == '/'))) {
      std::size_t j = i;
      while (j < m.size() && !is_space_or_tab(m[j]) && m[j] != '\'' && m[j] != '"' && m[j] != ')' && m[j] != ',' &&
             m[j] != ']' && m[j] != '(') ++j;
      std::string_view p = m.substr(i, j - i);
      while (!p.empty() && (p.back() == ':' || p.back() == '.')) p.remove_suffix(1);
      if (p.size() > 1 && std::count(p.begin(), p.end(), '/') >= 1 && std::any_of(p.begin(), p.end(), is_alpha)) {
        i += p.size();
        // "file.py:12" → the line number goes with the path.
        if (i + 1 < m.size() && m[i] == ':' && is_digit(m[i + 1])) {
          ++i;
          while (i < m.size() && is_digit(m[i])) ++i;
        }
        emit("<path>");
        continue;
      }
    }
    // Tensor shapes: (2, 3), [1, 4096], torch.Size([8, 16]) — numbers and commas only, at least one comma.
    if ((c == '(' || c == '[') && !word_before) {
      const char close = c == '(' ? ')' : ']';
      std::size_t j = i + 1;
      bool comma = false, digit = false, other = false;
      while (j < m.size() && m[j] != close && j - i < 128) {
        if (m[j] == ',') comma = true;
        else if (is_digit(m[j]) || m[j] == '-') digit = true;
        else if (!is_space_or_tab(m[j])) other = true;
        ++j;
      }
      if (j < m.size() && m[j] == close && comma && digit && !other) {
        emit("<shape>");
        i = j + 1;
        continue;
      }
    }
    if (!word_before && is_hex(c)) {
      std::size_t j = i;
      while (j < m.size() && (is_hex(m[j]) || m[j] == '-')) ++j;
      std::string_view w = m.substr(i, j - i);
      const bool ends_word = j >= m.size() || !is_word(m[j]);
      // UUID 8-4-4-4-12.
      if (ends_word && w.size() == 36 && w[8] == '-' && w[13] == '-' && w[18] == '-' && w[23] == '-') {
        emit("<uuid>");
        i = j;
        continue;
      }
      // 0x addresses, and long hex runs (hashes, request ids) that mix digits and letters.
      if (c == '0' && i + 2 < m.size() && (m[i + 1] == 'x' || m[i + 1] == 'X') && is_hex(m[i + 2])) {
        j = i + 2;
        while (j < m.size() && is_hex(m[j])) ++j;
        emit("<hex>");
        i = j;
        continue;
      }
      std::size_t k = i;
      while (k < m.size() && is_hex(m[k])) ++k;
      std::string_view run = m.substr(i, k - i);
      if (run.size() >= 8 && (k >= m.size() || !is_word(m[k])) && std::any_of(run.begin(), run.end(), is_digit) &&
          std::any_of(run.begin(), run.end(), is_alpha)) {
        emit("<hex>");
        i = k;
        continue;
      }
    }
    if (!word_before && (is_digit(c) || (c == '-' && i + 1 < m.size() && is_digit(m[i + 1]) &&
                                         (i == 0 || !is_digit(m[i - 1]))))) {
      std::size_t j = i + (c == '-' ? 1 : 0);
      std::size_t dots = 0, colons = 0, dashes = 0;
      while (j < m.size() && (is_digit(m[j]) || ((m[j] == '.' || m[j] == ':' || m[j] == '-' || m[j] == ',') &&
                                                 j + 1 < m.size() && is_digit(m[j + 1])))) {
        dots += m[j] == '.';
        colons += m[j] == ':';
        dashes += m[j] == '-';
        ++j;
      }
      std::string_view num = m.substr(i, j - i);
      std::string_view kind = "<num>";
      if (dots == 3 && colons <= 1) kind = "<addr>";
      else if (colons >= 2) kind = "<time>";
      else if (dashes >= 2 && num.size() >= 8) kind = "<date>";
      // A unit right after: a size.
      std::size_t u = j;
      if (u < m.size() && m[u] == ' ') ++u;
      std::size_t ue = u;
      while (ue < m.size() && is_alpha(m[ue])) ++ue;
      std::string_view unit = m.substr(u, ue - u);
      static constexpr std::array<std::string_view, 14> kUnits{"B", "KB", "KiB", "MB", "MiB", "GB", "GiB",
                                                               "TB", "TiB", "bytes", "kB", "K", "M", "G"};
      if (kind == "<num>" && !unit.empty() && std::find(kUnits.begin(), kUnits.end(), unit) != kUnits.end() &&
          (ue >= m.size() || !is_word(m[ue]))) {
        kind = "<size>";
        j = ue;
      } else if (j < m.size() && is_alpha(m[j])) {
        // "2x3x4", "12ms", "0th": part of a word; a shape or a duration keeps no digits either.
        std::size_t k = j;
        while (k < m.size() && is_word(m[k])) ++k;
        std::string_view tail = m.substr(j, k - j);
        if (tail.find('x') != std::string_view::npos && tail.size() > 1) kind = "<shape>";
        j = k;
      }
      emit(kind);
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  while (!out.empty() && is_space_or_tab(out.back())) out.pop_back();
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space_or_tab(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_space_or_tab(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string_view basename(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `  File "/x/y/model_runner.py", line 782, in capture` (traceback) or `  File "...", line 77 in capture_begin`
// (faulthandler) → "model_runner.py:capture".
std::optional<std::string> python_frame(std::string_view t) {
  if (!t.starts_with("File \"")) return std::nullopt;
  auto close = t.find('"', 6);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view file = basename(t.substr(6, close - 6));
  auto in = t.find(" in ", close);
  std::string_view func = in == std::string_view::npos ? std::string_view() : trim(t.substr(in + 4));
  return std::string(file) + ":" + std::string(func);
}

// Native frames: "@     0x7f1b5f90339a  ray::gcs::Client::Connect()", "#3 0x... in foo (libx.so)",
// "frame #2: c10::Error::Error(...) + 0x..". Logging and runtime frames are skipped.
std::optional<std::string> native_frame(std::string_view t) {
  std::string_view sym;
  if (t.starts_with("@ ")) {
    t = trim(t.substr(2));
    auto sp = t.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    t = trim(t.substr(sp));
    if (t.starts_with("(unknown)") || t.starts_with("...")) return std::nullopt;
    // "1247139872  (unknown)": a size column, then the symbol.
    if (!t.empty() && is_digit(t[0])) {
      auto sp2 = t.find(' ');
      if (sp2 == std::string_view::npos) return std::nullopt;
      t = trim(t.substr(sp2));
    }
    sym = next_word(t);
  } else if (t.starts_with("frame #")) {
    auto colon = t.find(": ");
    if (colon == std::string_view::npos) return std::nullopt;
    sym = t.substr(colon + 2);
    auto cut = sym.find_first_of("(+ ");
    sym = sym.substr(0, cut);
  } else if (t.size() > 2 && t[0] == '#' && is_digit(t[1])) {
    auto in = t.find(" in ");
    if (in == std::string_view::npos) return std::nullopt;
    sym = next_word(t.substr(in + 4));
    auto cut = sym.find('(');
    sym = sym.substr(0, cut);
  } else {
    return std::nullopt;
  }
  if (sym.empty() || sym.starts_with("(unknown)") || sym.starts_with("google::") || sym.starts_with("absl::") ||
      sym.starts_with("c10::Error") || sym.starts_with("c10::detail::") || sym.starts_with("_Py") ||
      sym.starts_with("Py") || sym.starts_with("__libc") || sym.starts_with("_start") ||
      sym.find("RayLog") != std::string_view::npos || sym.find("LogMessage") != std::string_view::npos)
    return std::nullopt;
  return std::string(sym);
}

// A Go frame's function line, "net/http.(*Server).Serve(0xc000320700, {...})" → "http.(*Server).Serve": the name
// before the argument list, without its package path.
std::optional<std::string> go_function(std::string_view t) {
  if (t.size() < 3 || t.back() != ')' || t.find(' ') < t.find('(')) return std::nullopt;
  // The argument list is the last top-level parenthesis group.
  int depth = 0;
  std::size_t open = std::string_view::npos;
  for (std::size_t k = t.size(); k-- > 0;) {
    if (t[k] == ')') ++depth;
    else if (t[k] == '(' && --depth == 0) {
      open = k;
      break;
    }
  }
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  std::string_view name = basename(t.substr(0, open));
  if (name.find('.') == std::string_view::npos) return std::nullopt;
  return std::string(name);
}

// "RuntimeError: CUDA error: ..." → ("RuntimeError", "CUDA error: ..."); "KeyboardInterrupt" → (it, "").
std::optional<std::pair<std::string_view, std::string_view>> exception_line(std::string_view t) {
  std::size_t i = 0;
  while (i < t.size() && (is_word(t[i]) || t[i] == '.')) ++i;
  if (i == 0 || !is_alpha(t[0])) return std::nullopt;
  std::string_view type = t.substr(0, i);
  if (i == t.size()) {
    // A bare class: "KeyboardInterrupt", "asyncio.exceptions.CancelledError", "uvicorn.protocols.utils.ClientDisconnected".
    const auto dot = type.rfind('.');
    bool looks = type.ends_with("Error") || type.ends_with("Exception") || type.ends_with("Interrupt") ||
                 type.ends_with("Exit") || type.ends_with("Warning") || type.ends_with("Disconnected") ||
                 (dot != std::string_view::npos && dot + 1 < type.size() && std::isupper(static_cast<unsigned char>(type[dot + 1])));
    return looks ? std::optional(std::pair(type, std::string_view())) : std::nullopt;
  }
  if (t[i] != ':') return std::nullopt;
  return std::pair(type, trim(t.substr(i + 1)));
}

std::string type_key(std::string_view type) {
  // The same exception class moves between modules across versions (torch.cuda.OutOfMemoryError,
  // torch.OutOfMemoryError): group on its own name.
  if (!type.empty() && is_alpha(type[0]) && type.find(' ') == std::string_view::npos) {
    auto dot = type.rfind('.');
    if (dot != std::string_view::npos) return std::string(type.substr(dot + 1));
  }
  return std::string(type);
}

struct Candidate {
  int rank = -1;
  std::size_t index = 0;
  std::string type;
  std::string message;
  std::vector<std::string> frames;
};

}  // namespace

FailureSignature signature_of(const std::vector<std::string_view>& raw) {
  std::vector<std::string_view> lines;
  lines.reserve(raw.size());
  for (auto l : raw) lines.push_back(strip_log_prefix(l));
  return fingerprint_detail::signature_of_stripped(raw, lines);
}

FailureSignature fingerprint_detail::signature_of_stripped(const std::vector<std::string_view>& raw,
                                                           const std::vector<std::string_view>& lines) {

  Candidate best;
  auto offer = [&best](int rank, std::size_t index, std::string type, std::string_view message,
                       std::vector<std::string> frames) {
    if (rank <= best.rank) return;
    best = Candidate{rank, index, std::move(type), std::string(message), std::move(frames)};
  };

  std::vector<std::string> py_frames;  // of the traceback being read, outermost first
  std::vector<std::string> native;     // native frames seen so far, innermost first (as dumps print them)
  bool in_traceback = false;
  bool in_stack_first = false;         // faulthandler's "Stack (most recent call first):"
  std::vector<std::string> stack_first;
  std::string pending_terminate;       // the type of a "terminate called after throwing" awaiting its what()
  std::size_t last_py_frame = 0;       // index of the latest Python frame line
  std::vector<std::string> go_frames;  // a Go runtime dump's functions, in the order printed (innermost first)
  std::optional<std::size_t> go_dump;  // index of its first frame line ("file.go:N +0x.. fp=0x.. sp=.. pc=..")
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = trim(lines[i]);
    const bool indented = !lines[i].empty() && is_space_or_tab(lines[i][0]);
    if (t.empty()) continue;
    if (t.find(" fp=0x") != std::string_view::npos && t.find(" sp=0x") != std::string_view::npos) {
      if (!go_dump) go_dump = i;
      continue;
    }
    if (!indented && i + 1 < lines.size()) {
      // A Go frame: the function line, then its location line ("runtime/proc.go:435 +0xce ...").
      std::string_view next = trim(lines[i + 1]);
      auto colon = next.find(':');
      if (colon != std::string_view::npos && (next.substr(0, colon).ends_with(".go") ||
                                              next.starts_with("<autogenerated>:"))) {
        if (auto f = go_function(t)) {
          go_frames.push_back(*f);
          continue;
        }
      }
    }
    if (auto f = python_frame(t)) {
      if (in_stack_first) stack_first.push_back(*f);
      else py_frames.push_back(*f);
      last_py_frame = i;
      continue;
    }
    if (auto f = native_frame(t)) {
      if (native.size() < 3) native.push_back(*f);
      continue;
    }
    if (t.find("Traceback (most recent call last):") != std::string_view::npos) {
      in_traceback = true;
      in_stack_first = false;
      py_frames.clear();
      continue;
    }
    if (t.starts_with("Stack (most recent call first)") || t.starts_with("Current thread ") ||
        t.starts_with("Thread 0x")) {
      in_stack_first = true;
      continue;
    }
    if (in_traceback && !indented) {
      if (auto ex = exception_line(t)) {
        std::vector<std::string> frames;
        for (auto it = py_frames.rbegin(); it != py_frames.rend() && frames.size() < 3; ++it) frames.push_back(*it);
        offer(3, i, std::string(ex->first), ex->second, std::move(frames));
        in_traceback = false;
        continue;
      }
    }
    if (in_traceback && indented) continue;  // source lines and carets of a frame
    if (!in_traceback && !indented) {
      // An exception's last line whose traceback was not logged (or was cut from an excerpt).
      if (auto ex = exception_line(t);
          ex && (!ex->second.empty() || t.back() == ':') && !fingerprint_detail::exception_class(t).empty()) {
        offer(2, i, std::string(ex->first), ex->second, {});
        continue;
      }
    }
    if (auto p = t.find("Fatal Python error: "); p != std::string_view::npos) {
      // Its frames follow ("Stack (most recent call first):"): fixed up below.
      offer(3, i, "Fatal Python error", t.substr(p + 20), {});
      continue;
    }
    if (auto p = t.find("terminate called after throwing an instance of "); p != std::string_view::npos) {
      pending_terminate = "terminate " + std::string(trim(t.substr(p + 47)));
      pending_terminate.erase(std::remove(pending_terminate.begin(), pending_terminate.end(), '\''),
                              pending_terminate.end());
      offer(2, i, pending_terminate, "", {});
      continue;
    }
    if (auto p = t.find("terminate called"); p != std::string_view::npos) {
      offer(2, i, "terminate", t.substr(p), {});
      continue;
    }
    if (auto p = t.find("what():"); p != std::string_view::npos) {
      offer(3, i, pending_terminate.empty() ? "terminate" : pending_terminate, trim(t.substr(p + 7)), {});
      continue;
    }
    if (auto p = t.find("Check failed: "); p != std::string_view::npos) {
      offer(3, i, "Check failed", t.substr(p + 14), {});
      continue;
    }
    if (auto p = t.find("Assertion"); p != std::string_view::npos &&
                                      (t.find("Assertion failed") != std::string_view::npos ||
                                       t.find("' failed") != std::string_view::npos)) {
      const auto colon = t.find("Assertion failed: ");
      offer(3, i, "Assertion failed", colon == std::string_view::npos ? t : trim(t.substr(colon + 18)), {});
      continue;
    }
    if (auto p = t.find("' panicked at "); p != std::string_view::npos && t.find("thread '") != std::string_view::npos) {
      std::string_view where = t.substr(p + 14);
      auto sp = where.find(' ');
      std::string_view loc = sp == std::string_view::npos ? where : where.substr(0, sp);
      while (!loc.empty() && (loc.back() == ':' || loc.back() == ',')) loc.remove_suffix(1);
      // The location's file, without line and column: "server.rs".
      std::string_view file = basename(loc.substr(0, loc.find(':')));
      std::string_view message = sp == std::string_view::npos ? std::string_view() : trim(where.substr(sp));
      if (message.empty() && i + 1 < lines.size()) message = trim(lines[i + 1]);
      offer(3, i, "panic", message, {std::string(file)});
      continue;
    }
    if (t.starts_with("panic: ")) {
      offer(3, i, "panic", t.substr(7), {});
      continue;
    }
    if (t.find("CUDA error: ") != std::string_view::npos || t.find("CUDA error ") != std::string_view::npos || t.find("CUBLAS_STATUS_") != std::string_view::npos ||
        t.find("CUDNN_STATUS_") != std::string_view::npos || t.find("cudaError") != std::string_view::npos ||
        t.find("CUDA_ERROR_") != std::string_view::npos) {
      if (auto ex = exception_line(t)) offer(2, i, std::string(ex->first), ex->second, {});
      else offer(2, i, "CUDA error", t, {});
      continue;
    }
    if (glog_head(next_word(raw[i])) && raw[i].starts_with("F")) {
      offer(2, i, "fatal", t, {});
      continue;
    }
    if (t.find("[Errno ") != std::string_view::npos) {
      if (auto ex = exception_line(t)) offer(1, i, std::string(ex->first), ex->second, {});
      else offer(1, i, "Errno", t, {});
      continue;
    }
    if (t.find("Segmentation fault") != std::string_view::npos || t.find("SIGSEGV") != std::string_view::npos) {
      offer(1, i, "signal", "Segmentation fault", {});
      continue;
    }
    if (t.find("SIGABRT") != std::string_view::npos || t.find("Aborted") != std::string_view::npos) {
      offer(1, i, "signal", "Aborted", {});
      continue;
    }
    if (t.find("SIGBUS") != std::string_view::npos || t.find("Bus error") != std::string_view::npos) {
      offer(1, i, "signal", "Bus error", {});
      continue;
    }
    if (t.find("SIGILL") != std::string_view::npos || t.find("Illegal instruction") != std::string_view::npos) {
      offer(1, i, "signal", "Illegal instruction", {});
      continue;
    }
    if (t.find("exit status") != std::string_view::npos || t.find("exited with code") != std::string_view::npos ||
        t.find("exitcode") != std::string_view::npos || t.find("exit code") != std::string_view::npos ||
        t.find("The program will terminate") != std::string_view::npos) {
      offer(0, i, "exit", t, {});
      continue;
    }
  }
  if (best.type == "Fatal Python error") {
    for (std::size_t k = 0; k < stack_first.size() && best.frames.size() < 3; ++k) best.frames.push_back(stack_first[k]);
  }
  if (best.frames.empty() && best.rank >= 2) best.frames = native;

  FailureSignature sig;
  if (best.rank < 0 && go_dump) {
    // The Go runtime's crash dump without its panic or fatal error line: grouped by the first functions that are
    // not the runtime's own (the runtime's when there are no others).
    best = Candidate{0, *go_dump, "go runtime traceback", "", {}};
    for (const auto& f : go_frames) {
      if (!f.starts_with("runtime.") && best.frames.size() < 3) best.frames.push_back(f);
    }
    if (best.frames.empty()) {
      for (std::size_t k = 0; k < go_frames.size() && k < 3; ++k) best.frames.push_back(go_frames[k]);
    }
  } else if (best.rank < 0 && !py_frames.empty()) {
    // A traceback without its exception line (cut off, or its head and end not logged): grouped by its innermost
    // frames, the last printed.
    best = Candidate{0, last_py_frame, "traceback without its exception line", "", {}};
    for (auto it = py_frames.rbegin(); it != py_frames.rend() && best.frames.size() < 3; ++it) best.frames.push_back(*it);
  }
  if (best.rank < 0) {
    // No terminal line recognised: the story's first line stands for it.
    best.rank = 0;
    best.index = 0;
    best.type = "failure";
    best.message = lines.empty() ? std::string() : std::string(trim(lines[0]));
  }
  sig.rank = best.rank;
  sig.type = best.type;
  sig.message = best.message;
  sig.message_template = message_template(best.message);
  sig.frames = best.frames;
  sig.terminal_index = std::min(best.index, lines.empty() ? 0 : lines.size() - 1);
  sig.terminal = lines.empty() ? std::string() : std::string(trim(lines[sig.terminal_index]));
  std::uint64_t h = kFnv1a64Offset;
  auto mix = [&h](std::string_view part) { h = fnv1a64(std::string_view("\0", 1), fnv1a64(part, h)); };
  mix(type_key(sig.type));
  mix(sig.message_template);
  for (const auto& f : sig.frames) mix(f);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  sig.fingerprint = buf;
  return sig;
}

}  // namespace faultline
