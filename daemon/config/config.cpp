// The config file's public side: the built-in defaults, loading (the sections are decoded in sections.cpp), sizes,
// log settings and rule overrides.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "faultline/config.hpp"
#include "faultline/server.hpp"
#include "sections.hpp"

namespace faultline {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

SourceSpec default_pods_source() {
  SourceSpec s;
  s.paths = {"/var/log/pods/*/*/*.log"};
  s.source = "pods";
  return s;
}

SourceSpec default_kmsg_source() {
  SourceSpec s;
  s.kind = SourceKind::kmsg;
  s.paths = {"/dev/kmsg"};
  s.optional = true;
  return s;
}

}  // namespace

std::optional<LogFormat> parse_log_format(std::string_view text) {
  if (text == "text") return LogFormat::text;
  if (text == "json") return LogFormat::json;
  return std::nullopt;
}

bool valid_log_level(std::string_view level) {
  static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "warning", "error", "critical", "off"};
  return std::find(std::begin(kLevels), std::end(kLevels), level) != std::end(kLevels);
}

bool ConfigResult::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data()) return std::nullopt;
  std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  std::uint64_t mul = 0;
  if (unit.empty() || unit == "B") mul = 1;
  else if (unit == "KiB") mul = 1ull << 10;
  else if (unit == "MiB") mul = 1ull << 20;
  else if (unit == "GiB") mul = 1ull << 30;
  else if (unit == "KB" || unit == "kB") mul = 1000;
  else if (unit == "MB") mul = 1000 * 1000;
  else if (unit == "GB") mul = 1000ull * 1000 * 1000;
  else return std::nullopt;
  if (v > UINT64_MAX / mul) return std::nullopt;
  return v * mul;
}

std::optional<std::string> listen_address_problem(std::string_view listen) {
  if (listen.empty() || listen == "off") return std::nullopt;
  std::string error;
  if (parse_listen_address(listen, &error)) return std::nullopt;
  const bool bare_port = listen.find_first_not_of("0123456789") == std::string_view::npos;
  if (bare_port) {
    return "expected host:port, got '" + std::string(listen) + "' (did you mean 127.0.0.1:" + std::string(listen) +
           "? 0.0.0.0:" + std::string(listen) + " listens on every interface)";
  }
  return error + " (e.g. 127.0.0.1:9464, [::1]:9464, or off)";
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string_view> segments(std::string_view id) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0; start <= id.size();) {
    std::size_t dash = id.find('-', start);
    if (dash == std::string_view::npos) dash = id.size();
    out.push_back(id.substr(start, dash - start));
    start = dash + 1;
  }
  return out;
}

// Whether `word`'s segments, in order, abbreviate all of `of`'s: each a prefix of one segment ("nccl-wd" for
// "nccl-watchdog") or the initials of several ("oom" for "out-of-memory").
bool abbreviates(const std::vector<std::string_view>& word, std::size_t w, const std::vector<std::string_view>& of,
                 std::size_t o) {
  if (w == word.size()) return o == of.size();
  if (o == of.size() || word[w].empty()) return false;
  const std::string_view part = word[w];
  if (of[o].compare(0, part.size(), part) == 0 && abbreviates(word, w + 1, of, o + 1)) return true;
  if (part.size() >= 2 && o + part.size() <= of.size()) {
    bool initials = true;
    for (std::size_t i = 0; i < part.size() && initials; ++i) initials = !of[o + i].empty() && of[o + i][0] == part[i];
    if (initials && abbreviates(word, w + 1, of, o + part.size())) return true;
  }
  return false;
}

}  // namespace

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // Near enough to be a typo: a third of the word's length, at least 2 edits.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (best_distance <= limit) return best;
  // Else an abbreviation of exactly one candidate.
  const auto parts = segments(word);
  std::string only;
  for (const auto& c : candidates) {
    if (!abbreviates(parts, 0, segments(c), 0)) continue;
    if (!only.empty() && only != c) return std::string();
    only = c;
  }
  return only;
}

std::vector<Diagnostic> check_rule_references(const Config& config, const RuleSet& loaded,
                                              const std::vector<std::string>& disabled) {
  std::vector<std::string> known = disabled;
  for (const auto& r : loaded.rules) known.push_back(r.id);
  auto is_known = [&](const std::string& id) { return std::find(known.begin(), known.end(), id) != known.end(); };
  std::vector<Diagnostic> out;
  auto unknown = [&](const std::string& id, const std::string& where, const Position& pos) {
    std::string message = where + ": no loaded rule has the id '" + id + "'";
    if (auto near = nearest_name(id, known); !near.empty()) message += " (did you mean '" + near + "'?)";
    else message += " ('faultline rules list' lists the ids)";
    out.push_back(Diagnostic{Diagnostic::Kind::error, pos, std::move(message)});
  };
  for (const auto& o : config.rules.overrides)
    if (!is_known(o.rule)) unknown(o.rule, "rules.overrides", o.pos);
  for (const auto& ref : config.rule_references)
    if (!is_known(ref.rule)) unknown(ref.rule, ref.where, ref.pos);
  // Flags' sinks (--webhook) filter nothing by rule; a sink from the file whose references were not recorded (a
  // scalar `rules:`) is still checked, without a position.
  for (std::size_t i = 0; i < config.sinks.size(); ++i) {
    for (const auto& id : config.sinks[i].rules) {
      const bool recorded = std::any_of(config.rule_references.begin(), config.rule_references.end(),
                                        [&](const RuleReference& r) { return r.rule == id; });
      if (!recorded && !is_known(id)) unknown(id, "sinks[" + std::to_string(i) + "].rules", Position{config.file, 0, 0});
    }
  }
  return out;
}

Config default_config() {
  Config c;
  std::string state = env("STATE_DIRECTORY");  // systemd StateDirectory=; may list several, colon-separated
  if (auto colon = state.find(':'); colon != std::string::npos) state.resize(colon);
  c.state_dir = state.empty() ? "/var/lib/faultline" : state;
  c.node_name = env("NODE_NAME");
  if (c.node_name.empty()) c.node_name = host_name();
  c.sources = {default_pods_source(), default_kmsg_source()};
  return c;
}

ConfigResult load_config_from_string(std::string_view yaml, std::string_view file_name) {
  ConfigResult result;
  result.config = default_config();
  result.config.file = std::string(file_name);
  yaml::Reader r(std::string(file_name), result.diagnostics);
  auto root = r.load(yaml);
  if (!root || root->IsNull()) return result;  // a syntax error, or an empty file: defaults
  std::error_code ec;
  auto dir = std::filesystem::absolute(std::filesystem::path(std::string(file_name)), ec).parent_path();
  std::string config_dir = ec ? std::string(".") : dir.lexically_normal().string();
  try {
    config_detail::decode_config(r, *root, result.config, config_dir);
  } catch (const YAML::Exception& e) {  // the room boundary for yaml-cpp's own throws
    r.error_at(yaml::position_of(file_name, e.mark), e.msg);
  }
  if (result.config.node_name.empty()) result.config.node_name = default_config().node_name;
  return result;
}

ConfigResult load_config(const std::string& path) {
  ConfigResult unread;
  unread.config = default_config();
  yaml::Reader r(path, unread.diagnostics);
  auto text = r.read_file();  // stat first: a huge file is refused before it is read
  if (!text) return unread;
  return load_config_from_string(*text, path);
}

}  // namespace faultline
