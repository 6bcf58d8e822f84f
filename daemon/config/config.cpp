// The config file's public side: the built-in defaults, loading (the sections are decoded in sections.cpp), sizes,
// log settings and rule overrides.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "faultline/config.hpp"
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
