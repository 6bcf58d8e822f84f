// One decoder per section of the config file. Each names its keys in a table (an unknown key is an error at the key,
// listing these) and says where each value goes; the reader does the types and positions.
#include "sections.hpp"

#include "faultline/sink_config.hpp"

namespace faultline::config_detail {

namespace {

using yaml::Reader;
using yaml::Zero;

// A byte count with an optional unit (parse_size): 65536, 64KiB, 16MiB.
template <typename T>
Reader::Visit size(Reader& r, T& out, std::string what, std::uint64_t min) {
  return [&r, &out, what = std::move(what), min](const YAML::Node& n) {
    if (!r.scalar(n, what)) return;
    auto v = parse_size(n.Scalar());
    if (!v) r.error(n, what + ": bad size '" + excerpt(n.Scalar()) + "' (e.g. 65536, 64KiB, 16MiB)");
    else if (*v < min) r.error(n, what + ": must be at least " + std::to_string(min) + " bytes");
    else out = static_cast<T>(*v);
  };
}

std::string absolute(const std::string& path, const std::string& dir) {
  return !path.empty() && path.front() != '/' ? dir + "/" + path : path;
}

void decode_utc_offset(Reader& r, const YAML::Node& n, Config& c) {
  if (!r.scalar(n, "utc_offset")) return;
  const std::string& v = n.Scalar();
  auto offset = parse_utc_offset(v);
  if (!offset) {
    r.error(n, "utc_offset: expected +HH:MM, -HH:MM or Z, got '" + excerpt(v) + "'");
    return;
  }
  c.utc_offset = *offset;
}

void decode_log(Reader& r, const YAML::Node& n, LogSettings& log) {
  r.mapping(n, "log",
            {
                {"level", [&](const YAML::Node& v) {
                   if (!r.scalar(v, "log.level")) return;
                   if (valid_log_level(v.Scalar())) log.level = v.Scalar();
                   else r.error(v, "log.level: expected trace, debug, info, warn, error, critical or off, got '" +
                                       excerpt(v.Scalar()) + "'");
                 }},
                {"format", r.enumeration(log.format, "log.format", parse_log_format, "text or json")},
            });
}

void decode_overrides(Reader& r, const YAML::Node& v, std::vector<RuleOverride>& overrides) {
  if (v.IsNull()) return;
  if (!v.IsMap()) {
    r.error(v, "rules.overrides: expected a mapping of rule ids, got " + std::string(yaml::kind_name(v)));
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const YAML::Node key = it->first;  // copies: the iterator yields a temporary
    const YAML::Node body = it->second;
    if (!r.scalar(key, "rules.overrides")) continue;
    RuleOverride o;
    o.rule = key.Scalar();
    o.pos = r.pos(key);
    std::string where = "rules.overrides." + o.rule;
    r.mapping(body, where,
              {
                  {"enabled", r.optional_boolean(o.enabled, "enabled")},
                  {"severity", [&](const YAML::Node& s) {
                     if (!r.scalar(s, where + ".severity")) return;
                     if (auto sev = parse_severity(s.Scalar())) o.severity = *sev;
                     else r.error(s, where + ".severity: expected info, warning or critical, got '" + excerpt(s.Scalar()) + "'");
                   }},
                  {"labels", r.fields(o.labels, "labels")},
              });
    overrides.push_back(std::move(o));
  }
}

void decode_rules(Reader& r, const YAML::Node& n, RulesSettings& rules, const std::string& dir) {
  r.mapping(n, "rules",
            {
                {"paths", [&](const YAML::Node& v) {
                   r.strings(v, rules.paths, "rules.paths");
                   for (auto& p : rules.paths) p = absolute(p, dir);
                 }},
                {"cache_dir", r.string(rules.cache_dir, "rules.cache_dir")},
                {"watch", r.boolean(rules.watch, "rules.watch")},
                {"reload_delay", r.duration(rules.reload_delay, "rules.reload_delay", Zero::allowed)},
                {"overrides", [&](const YAML::Node& v) { decode_overrides(r, v, rules.overrides); }},
            });
}

void decode_source(Reader& r, const YAML::Node& node, SourceSpec& s, std::size_t index, const std::string& dir) {
  std::string where = "sources[" + std::to_string(index) + "]";
  std::string type = "file";
  YAML::Node type_node;
  r.mapping(node, where,
            {
                {"type", [&](const YAML::Node& n) {
                   type_node = n;
                   r.string(n, type, where + ".type");
                 }},
                {"paths", r.strings(s.paths, "paths")},
                {"path", [&](const YAML::Node& n) {
                   if (r.scalar(n, "path")) s.paths = {n.Scalar()};
                 }},
                {"exclude", r.strings(s.exclude, "exclude")},
                {"format", r.enumeration(s.format, "format", parse_container_format, "auto, raw, cri or docker")},
                {"start_at", r.enumeration(s.start_at, "start_at", parse_start_at, "beginning or end")},
                {"name", r.string(s.name, "name")},
                {"source", r.string(s.source, "source")},
                {"labels", r.fields(s.labels, "labels")},
                {"optional", r.boolean(s.optional, "optional")},
            });
  if (!node.IsMap()) return;
  if (type == "file" || type == "files") {
    s.kind = SourceKind::files;
    for (auto& p : s.paths) p = absolute(p, dir);
    if (s.paths.empty()) r.error(node, where + ": a file source needs `paths`");
  } else if (type == "stdin") {
    s.kind = SourceKind::stdin_stream;
  } else if (type == "kmsg") {
    s.kind = SourceKind::kmsg;
    if (s.paths.empty()) s.paths = {"/dev/kmsg"};
  } else {
    r.error(type_node, where + ".type: expected file, stdin or kmsg, got '" + excerpt(type) + "'");
  }
}

// Given sources replace the defaults; an empty list means none.
void decode_sources(Reader& r, const YAML::Node& n, std::vector<SourceSpec>& sources, const std::string& dir) {
  sources.clear();
  if (n.IsNull()) return;
  if (!n.IsSequence()) {
    r.error(n, "sources: expected a list, got " + std::string(yaml::kind_name(n)));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : n) {
    SourceSpec s;
    decode_source(r, item, s, i++, dir);
    sources.push_back(std::move(s));
  }
}

void decode_tail(Reader& r, const YAML::Node& n, TailOptions& t, std::size_t& max_line_bytes) {
  r.mapping(n, "tail",
            {
                {"rescan_interval", r.duration(t.rescan_interval, "tail.rescan_interval")},
                {"partial_line_timeout", r.duration(t.partial_timeout, "tail.partial_line_timeout")},
                {"rotate_wait", r.duration(t.rotate_wait, "tail.rotate_wait", Zero::allowed)},
                {"read_chunk", size(r, t.read_chunk_bytes, "tail.read_chunk", 4096)},
                {"max_read_per_poll", size(r, t.max_bytes_per_poll, "tail.max_read_per_poll", 4096)},
                {"max_open_files", r.integer(t.max_open_files, "tail.max_open_files", 1)},
                {"fingerprint_bytes", size(r, t.fingerprint_bytes, "tail.fingerprint_bytes", 16)},
                {"max_line_bytes", size(r, max_line_bytes, "tail.max_line_bytes", 256)},
                {"exclude_self", r.strings(t.exclude_self, "tail.exclude_self")},
                {"inotify", r.boolean(t.use_inotify, "tail.inotify")},
            });
}

void decode_pipeline(Reader& r, const YAML::Node& n, PipelineOptions& p) {
  r.mapping(n, "pipeline",
            {
                {"batch_bytes", size(r, p.batch_bytes, "pipeline.batch_bytes", 4096)},
                {"max_stories", r.integer(p.correlator.max_stories, "pipeline.max_stories", 1)},
                {"max_open_incident_bytes",
                 size(r, p.correlator.max_open_incident_bytes, "pipeline.max_open_incident_bytes", 65536)},
            });
}

// fingerprints: {enabled: B, overrides: {FINGERPRINT: {severity: S, silence: B, why: "..."}}}
void decode_fingerprints(Reader& r, const YAML::Node& n, DetectorOptions& d) {
  r.mapping(n, "fingerprints",
            {
                {"enabled", r.boolean(d.enabled, "fingerprints.enabled")},
                {"overrides", [&](const YAML::Node& v) {
                   if (v.IsNull()) return;
                   if (!v.IsMap()) {
                     r.error(v, "fingerprints.overrides: expected a mapping of fingerprints, got " +
                                    std::string(yaml::kind_name(v)));
                     return;
                   }
                   for (auto it = v.begin(); it != v.end(); ++it) {
                     const YAML::Node key = it->first;
                     const YAML::Node body = it->second;
                     if (!r.scalar(key, "fingerprints.overrides")) continue;
                     FingerprintOverride o;
                     o.fingerprint = key.Scalar();
                     const std::string where = "fingerprints.overrides." + o.fingerprint;
                     if (o.fingerprint.size() != 16 ||
                         o.fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
                       r.error(key, where + ": expected a fingerprint of 16 hex digits (as `faultline fingerprints` "
                                            "prints it)");
                       continue;
                     }
                     r.mapping(body, where,
                               {
                                   {"severity", [&](const YAML::Node& s) {
                                      if (!r.scalar(s, where + ".severity")) return;
                                      if (auto sev = parse_severity(s.Scalar())) o.severity = *sev;
                                      else r.error(s, where + ".severity: expected info, warning or critical, got '" +
                                                          excerpt(s.Scalar()) + "'");
                                    }},
                                   {"silence", r.boolean(o.silence, where + ".silence")},
                                   {"why", r.string(o.why, where + ".why")},
                               });
                     if (o.silence && o.why.empty())
                       r.error(body, where + ": a silenced fingerprint needs `why` (what makes it harmless)");
                     d.overrides.push_back(std::move(o));
                   }
                 }},
            });
}

void decode_server(Reader& r, const YAML::Node& n, ServerSettings& s) {
  r.mapping(n, "server",
            {
                {"api_token_file", r.string(s.api_token_file, "server.api_token_file")},
                {"external_url", r.string(s.external_url, "server.external_url")},
            });
}

void decode_redaction(Reader& r, const YAML::Node& n, RedactionOptions& o) {
  r.mapping(n, "redaction",
            {
                {"defaults", r.boolean(o.defaults, "redaction.defaults")},
                {"patterns", r.strings(o.patterns, "redaction.patterns")},
                {"max_evidence_lines", r.integer(o.max_evidence_lines, "redaction.max_evidence_lines", 1)},
                {"max_line_bytes", size(r, o.max_line_bytes, "redaction.max_line_bytes", 64)},
            });
}

void decode_tls(Reader& r, const YAML::Node& n, TlsOptions& tls, const std::string& where) {
  r.mapping(n, where,
            {
                {"ca_file", r.string(tls.ca_file, where + ".ca_file")},
                {"verify", r.boolean(tls.verify, where + ".verify")},
                {"client_cert_file", r.string(tls.client_cert_file, where + ".client_cert_file")},
                {"client_key_file", r.string(tls.client_key_file, where + ".client_key_file")},
                {"server_name", r.string(tls.server_name, where + ".server_name")},
            });
}

// One sink; once its values decode, the sink room's checks run and their problems point at the sink's entry.
SinkConfig decode_sink(Reader& r, const YAML::Node& item, std::size_t index, std::vector<RuleReference>& references) {
  SinkConfig w;
  std::string where = "sinks[" + std::to_string(index) + "]";
  std::size_t before = r.mark();
  r.mapping(item, where,
            {
                {"name", r.string(w.name, where + ".name")},
                {"url", r.string(w.url, where + ".url")},
                {"format", r.enumeration(w.format, where + ".format", parse_webhook_format, "json or alertmanager")},
                {"timeout", r.duration(w.timeout, where + ".timeout")},
                {"headers", [&](const YAML::Node& h) {
                   Fields f;
                   r.fields(h, f, where + ".headers");
                   w.headers.assign(f.begin(), f.end());
                 }},
                {"min_severity",
                 r.enumeration(w.min_severity, where + ".min_severity", parse_severity, "info, warning or critical")},
                {"rules", [&](const YAML::Node& v) {
                   r.strings(v, w.rules, where + ".rules");
                   // Each id's position, for the pre-flight that checks them against the loaded rules.
                   if (v.IsSequence()) {
                     for (const auto& item : v)
                       if (item.IsScalar()) references.push_back(RuleReference{item.Scalar(), where + ".rules", r.pos(item)});
                   } else if (v.IsScalar()) {
                     references.push_back(RuleReference{v.Scalar(), where + ".rules", r.pos(v)});
                   }
                 }},
                {"send_caused_by", r.boolean(w.send_caused_by, where + ".send_caused_by")},
                {"send_resolved", r.boolean(w.send_resolved, where + ".send_resolved")},
                {"bearer_token_file", r.string(w.bearer_token_file, where + ".bearer_token_file")},
                {"hmac_secret_file", r.string(w.hmac_secret_file, where + ".hmac_secret_file")},
                {"tls", [&](const YAML::Node& t) { decode_tls(r, t, w.tls, where + ".tls"); }},
                {"resend_interval", r.duration(w.resend_interval, where + ".resend_interval")},
                {"spool_max_bytes", size(r, w.spool_max_bytes, where + ".spool_max_bytes", 4096)},
                {"spool_max_age", r.duration(w.spool_max_age, where + ".spool_max_age")},
                {"backoff_initial", r.duration(w.backoff_initial, where + ".backoff_initial")},
                {"backoff_max", r.duration(w.backoff_max, where + ".backoff_max")},
            });
  if (item.IsMap() && !r.errors_since(before)) {
    if (w.name.empty()) w.name = std::string(to_string(w.format)) + "-" + std::to_string(index + 1);
    for (const auto& problem : validate_sink(w)) r.error(item, where + ": " + problem);
  }
  return w;
}

void decode_sinks(Reader& r, const YAML::Node& v, std::vector<SinkConfig>& sinks,
                  std::vector<RuleReference>& references) {
  sinks.clear();
  references.clear();
  if (v.IsNull()) return;
  if (!v.IsSequence()) {
    r.error(v, "sinks: expected a list, got " + std::string(yaml::kind_name(v)));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : v) sinks.push_back(decode_sink(r, item, i++, references));
}

}  // namespace

void decode_config(Reader& r, const YAML::Node& root, Config& c, const std::string& dir) {
  r.mapping(root, "config",
            {
                {"node_name", r.string(c.node_name, "node_name")},
                {"utc_offset", [&](const YAML::Node& n) { decode_utc_offset(r, n, c); }},
                {"state_dir", [&](const YAML::Node& n) {
                   if (r.string(n, c.state_dir, "state_dir")) c.positions.state_dir = r.pos(n);
                 }},
                {"listen", [&](const YAML::Node& n) {
                   if (!r.string(n, c.listen, "listen")) return;
                   c.positions.listen = r.pos(n);
                   if (auto problem = listen_address_problem(c.listen)) r.error(n, "listen: " + *problem);
                 }},
                {"output", [&](const YAML::Node& n) {
                   if (n.IsNull()) c.output.clear();
                   else r.string(n, c.output, "output");
                 }},
                {"log", [&](const YAML::Node& n) { decode_log(r, n, c.log); }},
                {"rules", [&](const YAML::Node& n) { decode_rules(r, n, c.rules, dir); }},
                {"sources", [&](const YAML::Node& n) { decode_sources(r, n, c.sources, dir); }},
                {"tail", [&](const YAML::Node& n) { decode_tail(r, n, c.tail, c.max_line_bytes); }},
                {"pipeline", [&](const YAML::Node& n) { decode_pipeline(r, n, c.pipeline); }},
                {"fingerprints", [&](const YAML::Node& n) { decode_fingerprints(r, n, c.pipeline.fingerprint); }},
                {"checkpoint_interval", r.duration(c.checkpoint_interval, "checkpoint_interval")},
                {"shutdown_timeout", r.duration(c.shutdown_timeout, "shutdown_timeout", Zero::allowed)},
                {"server", [&](const YAML::Node& n) { decode_server(r, n, c.server); }},
                {"redaction", [&](const YAML::Node& n) { decode_redaction(r, n, c.redaction); }},
                {"queue_capacity", r.integer(c.queue_capacity, "queue_capacity", 1)},
                {"max_incidents", r.integer(c.max_incidents, "max_incidents", 1)},
                {"max_incident_bytes", size(r, c.max_incident_bytes, "max_incident_bytes", 64 << 10)},
                {"sinks", [&](const YAML::Node& n) { decode_sinks(r, n, c.sinks, c.rule_references); }},
            });
}

}  // namespace faultline::config_detail
