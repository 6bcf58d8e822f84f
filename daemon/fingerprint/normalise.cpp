// The reading half of the room: a line's logger prefix off (strip_log_prefix), a message as a template
// (message_template). Pure functions over text; no regex engine (linear scans by hand). The signature over them is
// in signature.cpp.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "faultline/fingerprint.hpp"
#include "text_scan.hpp"

namespace faultline {

using namespace fingerprint_detail;

namespace {


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
  constexpr std::size_t kLongest = 96;  // a group that closes further on is not the logger's
  const char close = s[0] == '(' ? ')' : ']';
  const void* found = std::memchr(s.data(), close, std::min(s.size(), kLongest + 1));
  if (found == nullptr) return 0;
  const auto end = static_cast<std::size_t>(static_cast<const char*>(found) - s.data());
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

// The index of the first blank (space or tab) at or after `i`, else `n`. On a little-endian host eight bytes at a
// time while eight are left: a zero byte of x ^ blank marks a blank, found by the usual bit trick.
std::size_t word_end(const char* p, std::size_t i, std::size_t n) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHighs = 0x8080808080808080ull;
  if constexpr (std::endian::native == std::endian::little) {
    while (i + 8 <= n) {
      std::uint64_t x;
      std::memcpy(&x, p + i, 8);
      const std::uint64_t sp = x ^ (kOnes * ' ');
      const std::uint64_t tab = x ^ (kOnes * '\t');
      // The lowest flagged byte is a true zero: a borrow only flags bytes above one that is zero.
      const std::uint64_t zero = ((sp - kOnes) & ~sp & kHighs) | ((tab - kOnes) & ~tab & kHighs);
      if (zero != 0) return i + static_cast<std::size_t>(std::countr_zero(zero)) / 8;
      i += 8;
    }
  }
  while (i < n && !is_space_or_tab(p[i])) ++i;
  return i;
}

// What one pass over a word (its trailing ':' or '|' off) says of it.
struct WordFacts {
  bool upper_first = false;
  bool digits = false;      // digits only (and at least one)
  // A date or time token: at least 4 bytes, a digit first, at least one of - / : . , and nothing but digits, those
  // and T, Z, +.
  bool time_token = false;
};

WordFacts word_facts(std::string_view w) {
  WordFacts f;
  if (w.empty()) return f;
  const bool digit_first = is_digit(w[0]);
  f.upper_first = w[0] >= 'A' && w[0] <= 'Z';
  bool digits = true, time_chars = true, separator = false;
  for (const char c : w) {
    if (is_digit(c)) continue;
    digits = false;
    if (c == '-' || c == '/' || c == ':' || c == '.' || c == ',') {
      separator = true;
    } else if (c != 'T' && c != 'Z' && c != '+') {
      time_chars = false;
      if (!digit_first) break;  // neither a number nor a time: nothing more to learn
    }
  }
  f.digits = digits;
  f.time_token = w.size() >= 4 && digit_first && time_chars && separator;
  return f;
}

}  // namespace

std::string_view strip_log_prefix(std::string_view line) {
  // Runs on every line a story reads. Each word is read once (word_end, word_facts); a test that needs more than
  // those facts runs only where they allow a match (level and month words begin with a capital).
  const char* p = line.data();
  const std::size_t n = line.size();
  std::size_t i = 0;      // where the next prefix token may start
  std::size_t after = 0;  // just past the last prefix token
  bool month = false;
  bool timed = false;  // a date or time was part of the prefix: a bare number after it is a pid or thread id
  for (int tokens = 0; tokens < 16 && i < n; ++tokens) {
    std::size_t len = 0;
    bool was_month = false;
    if (p[i] == '(' || p[i] == '[') {
      len = group_end(line.substr(i));
    } else {
      const std::size_t e = word_end(p, i, n);
      const std::string_view w(p + i, e - i);
      std::string_view bare = w;
      if (!bare.empty() && (bare.back() == ':' || bare.back() == '|')) bare.remove_suffix(1);
      const WordFacts f = word_facts(bare);
      const bool clock = f.time_token || glog_head(bare);
      if (clock || (f.upper_first && level_word(bare)) || source_position(w) || unit_pid(w) || w == "-" || w == "|" ||
          (month && f.digits && bare.size() <= 2) || (timed && f.digits)) {
        len = w.size();
        timed = timed || clock;
      } else if (f.upper_first && bare.size() == 3 && month_word(bare)) {
        len = w.size();
        was_month = true;
      } else if (!w.empty()) {
        // A host name before journald's "unit[pid]:", or a Python logger name before " - ".
        std::size_t k = e;
        while (k < n && is_space_or_tab(p[k])) ++k;
        const std::size_t ke = word_end(p, k, n);
        const std::string_view following(p + k, ke - k);
        if (unit_pid(following) || (following == "-" && std::all_of(w.begin(), w.end(), [](char c) {
                                      return is_word(c) || c == '.';
                                    }))) {
          len = w.size();
        }
      }
    }
    if (len == 0) break;
    month = was_month;
    i += len;
    if (i < n && p[i] == ':') ++i;  // "[rank0]:", "ERROR:"
    after = i;
    while (i < n && is_space_or_tab(p[i])) ++i;
  }
  if (after == 0) return line;
  if (after < n && is_space_or_tab(p[after])) ++after;
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

}  // namespace faultline
