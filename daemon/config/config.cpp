// Decodes the config file into typed structs, collecting every problem with its position.
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "faultline/config.hpp"

namespace faultline {

namespace {

// The one place where yaml-cpp's 0-based marks become the 1-based positions people see.
Position position_of(const YAML::Mark& mark, std::string_view file) {
  Position p;
  p.file = std::string(file);
  p.line = mark.line >= 0 ? static_cast<std::uint32_t>(mark.line) + 1 : 0;
  p.column = mark.column >= 0 ? static_cast<std::uint32_t>(mark.column) + 1 : 0;
  return p;
}

std::string_view kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

class Reader {
 public:
  Reader(std::string_view file, std::vector<Diagnostic>& diags) : file_(file), diags_(diags) {}

  Position pos(const YAML::Node& node) const { return position_of(node.Mark(), file_); }

  void error(const YAML::Node& node, std::string message) {
    diags_.push_back(Diagnostic{Diagnostic::Kind::error, pos(node), std::move(message)});
  }
  std::size_t errors() const { return diags_.size(); }
  void warning(const YAML::Node& node, std::string message) {
    diags_.push_back(Diagnostic{Diagnostic::Kind::warning, pos(node), std::move(message)});
  }

  // Visits each key of a mapping; an unknown or repeated key is an error at the key. `where` names the mapping.
  using Visit = std::function<void(const YAML::Node& value)>;
  struct Field {
    std::string_view key;
    Visit visit;
  };
  void mapping(const YAML::Node& node, std::string_view where, const std::vector<Field>& fields) {
    if (node.IsNull()) return;
    if (!node.IsMap()) {
      error(node, std::string(where) + ": expected a mapping, got " + std::string(kind_name(node)));
      return;
    }
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
      if (!key.IsScalar()) {
        error(key, std::string(where) + ": keys must be strings");
        continue;
      }
      const std::string& name = key.Scalar();
      if (!seen.insert(name).second) {
        error(key, std::string(where) + ": duplicate key '" + name + "'");
        continue;
      }
      auto f = std::find_if(fields.begin(), fields.end(), [&](const Field& x) { return x.key == name; });
      if (f == fields.end()) {
        std::string known;
        for (const auto& x : fields) known += (known.empty() ? "" : ", ") + std::string(x.key);
        error(key, std::string(where) + ": unknown key '" + name + "' (known: " + known + ")");
        continue;
      }
      f->visit(it->second);
    }
  }

  bool scalar(const YAML::Node& node, std::string what) {
    if (node.IsScalar()) return true;
    error(node, std::string(what) + ": expected a scalar, got " + std::string(kind_name(node)));
    return false;
  }

  Visit string(std::string& out, std::string what) {
    return [this, &out, what](const YAML::Node& n) {
      if (scalar(n, what)) out = n.Scalar();
    };
  }
  Visit boolean(bool& out, std::string what) {
    return [this, &out, what](const YAML::Node& n) {
      if (!scalar(n, what)) return;
      const std::string& s = n.Scalar();
      if (s == "true") out = true;
      else if (s == "false") out = false;
      else error(n, std::string(what) + ": expected true or false, got '" + s + "'");
    };
  }
  Visit optional_boolean(std::optional<bool>& out, std::string what) {
    return [this, &out, what](const YAML::Node& n) {
      bool b = false;
      std::size_t before = diags_.size();
      boolean(b, what)(n);
      if (diags_.size() == before) out = b;
    };
  }
  template <typename T>
  Visit unsigned_int(T& out, std::string what, std::uint64_t min = 0) {
    return [this, &out, what, min](const YAML::Node& n) {
      if (!scalar(n, what)) return;
      const std::string& s = n.Scalar();
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
        error(n, std::string(what) + ": expected a whole number, got '" + s + "'");
      } else if (v < min) {
        error(n, std::string(what) + ": must be at least " + std::to_string(min));
      } else {
        out = static_cast<T>(v);
      }
    };
  }
  Visit duration(Duration& out, std::string what, bool allow_zero = false) {
    return [this, &out, what, allow_zero](const YAML::Node& n) {
      if (!scalar(n, what)) return;
      auto d = parse_duration(n.Scalar());
      if (!d) {
        error(n, std::string(what) + ": bad duration '" + n.Scalar() + "' (e.g. 250ms, 5s, 10m, 1h30m)");
      } else if (!allow_zero && d->count() == 0) {
        error(n, std::string(what) + ": must be longer than 0s");
      } else {
        out = *d;
      }
    };
  }
  template <typename T>
  Visit size(T& out, std::string what, std::uint64_t min = 1) {
    return [this, &out, what, min](const YAML::Node& n) {
      if (!scalar(n, what)) return;
      auto v = parse_size(n.Scalar());
      if (!v) error(n, std::string(what) + ": bad size '" + n.Scalar() + "' (e.g. 65536, 64KiB, 16MiB)");
      else if (*v < min) error(n, std::string(what) + ": must be at least " + std::to_string(min) + " bytes");
      else out = static_cast<T>(*v);
    };
  }
  // A list of strings; a single string is accepted as a list of one.
  Visit strings(std::vector<std::string>& out, std::string what) {
    return [this, &out, what](const YAML::Node& n) {
      out.clear();
      if (n.IsNull()) return;
      if (n.IsScalar()) {
        out.push_back(n.Scalar());
        return;
      }
      if (!n.IsSequence()) {
        error(n, std::string(what) + ": expected a list of strings, got " + std::string(kind_name(n)));
        return;
      }
      for (const auto& item : n) {
        if (scalar(item, what)) out.push_back(item.Scalar());
      }
    };
  }
  Visit fields(Fields& out, std::string what) {
    return [this, &out, what](const YAML::Node& n) {
      if (n.IsNull()) return;
      if (!n.IsMap()) {
        error(n, std::string(what) + ": expected a mapping of names to strings, got " + std::string(kind_name(n)));
        return;
      }
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!scalar(it->first, what) || !scalar(it->second, std::string(what) + "." + it->first.Scalar())) continue;
        set_field(out, it->first.Scalar(), it->second.Scalar());
      }
    };
  }
  template <typename E>
  Visit enumeration(E& out, std::string what, std::function<std::optional<E>(std::string_view)> parse,
                    std::string_view choices) {
    return [this, &out, what, parse, choices](const YAML::Node& n) {
      if (!scalar(n, what)) return;
      if (auto v = parse(n.Scalar())) out = *v;
      else error(n, std::string(what) + ": expected " + std::string(choices) + ", got '" + n.Scalar() + "'");
    };
  }

 private:
  std::string file_;
  std::vector<Diagnostic>& diags_;
};

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

void decode_source(Reader& r, const YAML::Node& node, SourceSpec& s, std::size_t index, const std::string& dir) {
  std::string where = "sources[" + std::to_string(index) + "]";
  std::string type = "file";
  YAML::Node type_node;
  r.mapping(node, where,
            {
                {"type", [&](const YAML::Node& n) {
                   type_node = n;
                   r.string(type, where + ".type")(n);
                 }},
                {"paths", r.strings(s.paths, "paths")},
                {"path", [&](const YAML::Node& n) {
                   if (r.scalar(n, "path")) s.paths = {n.Scalar()};
                 }},
                {"exclude", r.strings(s.exclude, "exclude")},
                {"format", r.enumeration<ContainerFormat>(s.format, "format", parse_container_format,
                                                          "auto, raw, cri or docker")},
                {"start_at", r.enumeration<StartAt>(s.start_at, "start_at", parse_start_at, "beginning or end")},
                {"name", r.string(s.name, "name")},
                {"source", r.string(s.source, "source")},
                {"labels", r.fields(s.labels, "labels")},
                {"optional", r.boolean(s.optional, "optional")},
            });
  if (!node.IsMap()) return;
  if (type == "file" || type == "files") {
    s.kind = SourceKind::files;
    for (auto& p : s.paths)
      if (!p.empty() && p.front() != '/') p = dir + "/" + p;
    if (s.paths.empty()) r.error(node, where + ": a file source needs `paths`");
  } else if (type == "stdin") {
    s.kind = SourceKind::stdin_stream;
  } else if (type == "kmsg") {
    s.kind = SourceKind::kmsg;
    if (s.paths.empty()) s.paths = {"/dev/kmsg"};
  } else {
    r.error(type_node, where + ".type: expected file, stdin or kmsg, got '" + type + "'");
  }
}

void decode(Reader& r, const YAML::Node& root, Config& c, std::string_view file) {
  bool sources_given = false;
  auto config_dir = [&]() -> std::string {
    std::error_code ec;
    auto dir = std::filesystem::absolute(std::filesystem::path(std::string(file)), ec).parent_path();
    return ec ? std::string(".") : dir.lexically_normal().string();
  };
  r.mapping(root, "config",
            {
                {"node_name", r.string(c.node_name, "node_name")},
                {"utc_offset", [&](const YAML::Node& n) {
                   if (!r.scalar(n, "utc_offset")) return;
                   const std::string& v = n.Scalar();
                   auto offset = parse_utc_offset(v);
                   if (!offset) {
                     r.error(n, "utc_offset: expected +HH:MM, -HH:MM or Z, got '" + v + "'");
                     return;
                   }
                   c.utc_offset = *offset;
                 }},
                {"state_dir", r.string(c.state_dir, "state_dir")},
                {"listen", r.string(c.listen, "listen")},
                {"output", [&](const YAML::Node& n) {
                   if (n.IsNull()) c.output.clear();
                   else r.string(c.output, "output")(n);
                 }},
                {"log", [&](const YAML::Node& n) {
                   r.mapping(n, "log",
                             {
                                 {"level", [&](const YAML::Node& v) {
                                    if (!r.scalar(v, "log.level")) return;
                                    if (valid_log_level(v.Scalar())) c.log.level = v.Scalar();
                                    else r.error(v, "log.level: expected trace, debug, info, warn, error, critical "
                                                    "or off, got '" + v.Scalar() + "'");
                                  }},
                                 {"format", r.enumeration<LogFormat>(c.log.format, "log.format", parse_log_format,
                                                                     "text or json")},
                             });
                 }},
                {"rules", [&](const YAML::Node& n) {
                   r.mapping(n, "rules",
                             {
                                 {"paths", [&](const YAML::Node& v) {
                                    r.strings(c.rules.paths, "rules.paths")(v);
                                    for (auto& p : c.rules.paths)
                                      if (!p.empty() && p.front() != '/') p = config_dir() + "/" + p;
                                  }},
                                 {"cache_dir", r.string(c.rules.cache_dir, "rules.cache_dir")},
                                 {"watch", r.boolean(c.rules.watch, "rules.watch")},
                                 {"reload_delay", r.duration(c.rules.reload_delay, "rules.reload_delay", true)},
                                 {"overrides", [&](const YAML::Node& v) {
                                    if (v.IsNull()) return;
                                    if (!v.IsMap()) {
                                      r.error(v, "rules.overrides: expected a mapping of rule ids, got " +
                                                     std::string(kind_name(v)));
                                      return;
                                    }
                                    for (auto it = v.begin(); it != v.end(); ++it) {
                                      if (!r.scalar(it->first, "rules.overrides")) continue;
                                      RuleOverride o;
                                      o.rule = it->first.Scalar();
                                      o.pos = r.pos(it->first);
                                      std::string where = "rules.overrides." + o.rule;
                                      r.mapping(it->second, where,
                                                {
                                                    {"enabled", r.optional_boolean(o.enabled, "enabled")},
                                                    {"severity", [&, where](const YAML::Node& s) {
                                                       if (!r.scalar(s, where + ".severity")) return;
                                                       if (auto sev = parse_severity(s.Scalar())) o.severity = *sev;
                                                       else r.error(s, where + ".severity: expected info, warning "
                                                                               "or critical, got '" + s.Scalar() + "'");
                                                     }},
                                                    {"labels", r.fields(o.labels, "labels")},
                                                });
                                      c.rules.overrides.push_back(std::move(o));
                                    }
                                  }},
                             });
                 }},
                {"sources", [&](const YAML::Node& n) {
                   sources_given = true;
                   c.sources.clear();
                   if (n.IsNull()) return;
                   if (!n.IsSequence()) {
                     r.error(n, "sources: expected a list, got " + std::string(kind_name(n)));
                     return;
                   }
                   std::size_t i = 0;
                   for (const auto& item : n) {
                     SourceSpec s;
                     decode_source(r, item, s, i++, config_dir());
                     c.sources.push_back(std::move(s));
                   }
                 }},
                {"tail", [&](const YAML::Node& n) {
                   auto& t = c.tail;
                   r.mapping(n, "tail",
                             {
                                 {"rescan_interval", r.duration(t.rescan_interval, "tail.rescan_interval")},
                                 {"partial_line_timeout", r.duration(t.partial_timeout, "tail.partial_line_timeout")},
                                 {"rotate_wait", r.duration(t.rotate_wait, "tail.rotate_wait", true)},
                                 {"read_chunk", r.size(t.read_chunk_bytes, "tail.read_chunk", 4096)},
                                 {"max_read_per_poll", r.size(t.max_bytes_per_poll, "tail.max_read_per_poll", 4096)},
                                 {"max_open_files", r.unsigned_int(t.max_open_files, "tail.max_open_files", 1)},
                                 {"fingerprint_bytes", r.size(t.fingerprint_bytes, "tail.fingerprint_bytes", 16)},
                                 {"max_line_bytes", r.size(c.max_line_bytes, "tail.max_line_bytes", 256)},
                                 {"exclude_self", r.strings(t.exclude_self, "tail.exclude_self")},
                                 {"inotify", r.boolean(t.use_inotify, "tail.inotify")},
                             });
                 }},
                {"pipeline", [&](const YAML::Node& n) {
                   r.mapping(n, "pipeline",
                             {
                                 {"batch_bytes", r.size(c.pipeline.batch_bytes, "pipeline.batch_bytes", 4096)},
                                 {"max_stories",
                                  r.unsigned_int(c.pipeline.correlator.max_stories, "pipeline.max_stories", 1)},
                             });
                 }},
                {"checkpoint_interval", r.duration(c.checkpoint_interval, "checkpoint_interval")},
                {"shutdown_timeout", r.duration(c.shutdown_timeout, "shutdown_timeout", true)},
                {"server", [&](const YAML::Node& n) {
                   r.mapping(n, "server",
                             {
                                 {"api_token_file", r.string(c.server.api_token_file, "server.api_token_file")},
                                 {"external_url", r.string(c.server.external_url, "server.external_url")},
                             });
                 }},
                {"redaction", [&](const YAML::Node& n) {
                   r.mapping(n, "redaction",
                             {
                                 {"defaults", r.boolean(c.redaction.defaults, "redaction.defaults")},
                                 {"patterns", r.strings(c.redaction.patterns, "redaction.patterns")},
                                 {"max_evidence_lines",
                                  r.unsigned_int(c.redaction.max_evidence_lines, "redaction.max_evidence_lines", 1)},
                                 {"max_line_bytes", r.size(c.redaction.max_line_bytes, "redaction.max_line_bytes", 64)},
                             });
                 }},
                {"queue_capacity", r.unsigned_int(c.queue_capacity, "queue_capacity", 1)},
                {"max_incidents", r.unsigned_int(c.max_incidents, "max_incidents", 1)},
                {"sinks", [&](const YAML::Node& v) {
                   c.sinks.clear();
                   c.sink_positions.clear();
                   if (v.IsNull()) return;
                   if (!v.IsSequence()) {
                     r.error(v, "sinks: expected a list, got " + std::string(kind_name(v)));
                     return;
                   }
                   std::size_t i = 0;
                   for (const auto& item : v) {
                     SinkConfig w;
                     std::string where = "sinks[" + std::to_string(i++) + "]";
                     std::size_t before = r.errors();
                     r.mapping(item, where,
                               {
                                   {"name", r.string(w.name, where + ".name")},
                                   {"url", r.string(w.url, where + ".url")},
                                   {"format", r.enumeration<WebhookFormat>(w.format, where + ".format",
                                                                           parse_webhook_format, "json or alertmanager")},
                                   {"timeout", r.duration(w.timeout, where + ".timeout")},
                                   {"headers", [&, where](const YAML::Node& h) {
                                      Fields f;
                                      r.fields(f, where + ".headers")(h);
                                      w.headers.assign(f.begin(), f.end());
                                    }},
                                   {"min_severity", r.enumeration<Severity>(w.min_severity, where + ".min_severity",
                                                                            parse_severity, "info, warning or critical")},
                                   {"rules", r.strings(w.rules, where + ".rules")},
                                   {"send_caused_by", r.boolean(w.send_caused_by, where + ".send_caused_by")},
                                   {"send_resolved", r.boolean(w.send_resolved, where + ".send_resolved")},
                                   {"bearer_token_file", r.string(w.bearer_token_file, where + ".bearer_token_file")},
                                   {"hmac_secret_file", r.string(w.hmac_secret_file, where + ".hmac_secret_file")},
                                   {"tls", [&, where](const YAML::Node& t) {
                                      r.mapping(t, where + ".tls",
                                                {
                                                    {"ca_file", r.string(w.tls.ca_file, where + ".tls.ca_file")},
                                                    {"verify", r.boolean(w.tls.verify, where + ".tls.verify")},
                                                    {"client_cert_file",
                                                     r.string(w.tls.client_cert_file, where + ".tls.client_cert_file")},
                                                    {"client_key_file",
                                                     r.string(w.tls.client_key_file, where + ".tls.client_key_file")},
                                                    {"server_name", r.string(w.tls.server_name, where + ".tls.server_name")},
                                                });
                                    }},
                                   {"resend_interval", r.duration(w.resend_interval, where + ".resend_interval")},
                                   {"spool_max_bytes", r.size(w.spool_max_bytes, where + ".spool_max_bytes", 4096)},
                                   {"spool_max_age", r.duration(w.spool_max_age, where + ".spool_max_age")},
                                   {"backoff_initial", r.duration(w.backoff_initial, where + ".backoff_initial")},
                                   {"backoff_max", r.duration(w.backoff_max, where + ".backoff_max")},
                               });
                     if (item.IsMap() && r.errors() == before) {
                       if (w.name.empty()) w.name = std::string(to_string(w.format)) + "-" + std::to_string(i);
                       for (const auto& problem : validate_sink(w)) r.error(item, where + ": " + problem);
                     }
                     c.sinks.push_back(std::move(w));
                     c.sink_positions.push_back(r.pos(item));
                   }
                 }},
            });
  (void)sources_given;
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
  Reader r(file_name, result.diagnostics);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    result.diagnostics.push_back(
        Diagnostic{Diagnostic::Kind::error, position_of(e.mark, file_name), e.msg});
    return result;
  }
  if (root.IsNull()) return result;  // an empty file: defaults
  try {
    decode(r, root, result.config, file_name);
  } catch (const YAML::Exception& e) {
    result.diagnostics.push_back(Diagnostic{Diagnostic::Kind::error, position_of(e.mark, file_name), e.msg});
  }
  if (result.config.node_name.empty()) result.config.node_name = default_config().node_name;
  return result;
}

ConfigResult load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigResult result;
    result.config = default_config();
    Position p;
    p.file = path;
    result.diagnostics.push_back(Diagnostic{Diagnostic::Kind::error, p, "cannot read the config file"});
    return result;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_config_from_string(ss.str(), path);
}

void apply_rule_overrides(RuleSet& rules, const std::vector<RuleOverride>& overrides,
                          std::vector<Diagnostic>& diagnostics) {
  for (const auto& o : overrides) {
    auto it = std::find_if(rules.rules.begin(), rules.rules.end(), [&](const Rule& r) { return r.id == o.rule; });
    if (it == rules.rules.end()) {
      diagnostics.push_back(Diagnostic{Diagnostic::Kind::warning, o.pos,
                                       "override for rule '" + o.rule + "', which is not loaded"});
      continue;
    }
    if (o.enabled && !*o.enabled) {
      rules.rules.erase(it);
      continue;
    }
    if (o.severity) it->severity = *o.severity;
    for (const auto& [k, v] : o.labels) set_field(it->labels, k, v);
    // The override is part of the rule's definition: state machines of a changed rule start over on reload.
    if (o.severity || !o.labels.empty()) {
      it->content_hash += "+o";
      if (o.severity) it->content_hash += std::string(to_string(*o.severity));
      for (const auto& [k, v] : o.labels) it->content_hash += "," + k + "=" + v;
    }
  }
}

}  // namespace faultline
