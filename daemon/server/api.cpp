// Routing for the HTTP server and the incident API: plain functions from a request to a response, so they are tested
// without sockets. Runs on the io thread (it reads the incident view). The page's files, sessions and the live status
// are in page.cpp, session.cpp and live.cpp (routes.hpp).
#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "faultline/clock.hpp"
#include "faultline/metrics.hpp"
#include "faultline/server.hpp"
#include "routes.hpp"

namespace faultline {
namespace server_detail {

HttpResponse json_response(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  r.body += '\n';
  return r;
}

HttpResponse error_response(unsigned status, std::string_view message) {
  nlohmann::json j;
  j["error"] = std::string(message);
  // The message may echo the request's bytes: invalid UTF-8 is replaced, never thrown (a throw ended the daemon).
  return json_response(status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace server_detail

namespace {

using server_detail::error_response;
using server_detail::json_response;

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    auto part = s.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::optional<std::size_t> parse_count(std::string_view v) {
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return n;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// What the list endpoint filters beyond the view's own query: labels, free text, the root cause; and its paging.
struct ListQuery {
  IncidentQuery view;  // rules, severities, status, since (limit: all)
  std::vector<std::pair<LabelKey, std::string>> labels;
  std::string text;                    // lower case; any of title, rule, id, stream, summary, fields, evidence
  std::optional<std::string> caused_by;
  bool by_cause = false;  // ?order=cause: each root cause followed by the incidents it explains
  std::size_t offset = 0;
  std::size_t limit = 100;
};

// Parses the filters of /api/v1/incidents. Returns an error message or empty.
std::string parse_incident_query(const std::vector<std::pair<std::string, std::string>>& params, Time now,
                                 ListQuery& q) {
  for (const auto& [k, v] : params) {
    if (k == "rule") {
      for (auto& r : split_list(v)) q.view.rules.push_back(r);
    } else if (k == "severity") {
      for (auto& s : split_list(v)) {
        auto sev = parse_severity(s);
        if (!sev) return "unknown severity '" + s + "' (info, warning, critical)";
        q.view.severities.push_back(*sev);
      }
    } else if (k == "status") {
      if (v == "firing") q.view.status = IncidentStatus::firing;
      else if (v == "resolved") q.view.status = IncidentStatus::resolved;
      else if (!v.empty()) return "unknown status '" + v + "' (firing, resolved)";
    } else if (k == "since") {
      if (v.empty()) continue;
      if (auto t = parse_rfc3339(v)) {
        q.view.since = *t;
      } else if (auto d = parse_duration(v)) {
        q.view.since = now - *d;
      } else {
        return "since must be an RFC 3339 time or a duration such as 15m";
      }
    } else if (k == "limit") {
      auto n = parse_count(v);
      if (!n || *n == 0) return "limit must be a positive integer";
      q.limit = std::min<std::size_t>(*n, 1000);
    } else if (k == "offset") {
      auto n = parse_count(v);
      if (!n) return "offset must be a non-negative integer";
      q.offset = *n;
    } else if (k == "namespace" || k == "pod" || k == "node") {
      if (v.empty()) continue;
      auto key = k == "namespace" ? LabelKey::namespace_ : k == "pod" ? LabelKey::pod : LabelKey::node;
      q.labels.emplace_back(key, v);
    } else if (k == "q") {
      q.text = lower(v);
    } else if (k == "caused_by") {
      if (!v.empty()) q.caused_by = v;
    } else if (k == "order") {
      if (v == "cause") q.by_cause = true;
      else if (v != "updated" && !v.empty()) return "unknown order '" + v + "' (updated, cause)";
    }
  }
  return {};
}

bool contains_text(const Incident& inc, const std::string& needle) {
  auto has = [&](std::string_view s) { return lower(s).find(needle) != std::string::npos; };
  if (has(inc.title) || has(inc.rule) || has(inc.id) || has(inc.stream) || has(inc.summary)) return true;
  for (const auto& [k, v] : inc.fields)
    if (has(v)) return true;
  for (const auto& [k, v] : inc.stream_labels)
    if (has(v)) return true;
  for (const auto& e : inc.evidence)
    if (has(e.text)) return true;
  return has(inc.fingerprint) || has(inc.message_template);
}

bool matches(const StoredIncident& s, const ListQuery& q) {
  for (const auto& [key, value] : q.labels) {
    const std::string* have = find_field(s.summary.stream_labels, label_name(key));
    if (!have || *have != value) return false;
  }
  if (q.caused_by && s.summary.caused_by != q.caused_by) return false;
  if (q.text.empty()) return true;
  const auto incident = s.incident();  // the evidence and texts: read from the JSON
  return incident && contains_text(*incident, q.text);
}

// Each root cause (an incident explained by none in the list) followed by the incidents it explains, newest first
// within both; an incident whose root cause is not in the list stands on its own.
std::vector<const StoredIncident*> by_cause(const std::vector<const StoredIncident*>& items) {
  std::unordered_map<std::string_view, std::vector<const StoredIncident*>> explained;
  std::unordered_set<std::string_view> ids;
  for (const auto* s : items) ids.insert(s->summary.id);
  for (const auto* s : items)
    if (s->summary.caused_by && ids.count(*s->summary.caused_by)) explained[*s->summary.caused_by].push_back(s);
  std::vector<const StoredIncident*> out;
  out.reserve(items.size());
  for (const auto* s : items) {
    if (s->summary.caused_by && ids.count(*s->summary.caused_by)) continue;
    out.push_back(s);
    if (auto it = explained.find(s->summary.id); it != explained.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

HttpResponse list_incidents(const ApiContext& ctx, const ListQuery& q) {
  IncidentQuery view = q.view;
  view.limit = std::numeric_limits<std::size_t>::max();
  auto all = ctx.incidents ? ctx.incidents->query(view) : std::vector<const StoredIncident*>{};
  std::vector<const StoredIncident*> items;
  for (const auto* s : all)
    if (matches(*s, q)) items.push_back(s);
  if (q.by_cause) items = by_cause(items);
  std::size_t firing = std::count_if(items.begin(), items.end(),
                                     [](auto* s) { return s->summary.status == IncidentStatus::firing; });
  std::size_t begin = std::min(q.offset, items.size());
  std::size_t end = begin + std::min(q.limit, items.size() - begin);
  std::string body = "{\"incidents\":[";
  for (std::size_t i = begin; i < end; ++i) {
    if (i != begin) body += ',';
    body += items[i]->json;
  }
  body += "],\"count\":" + std::to_string(end - begin) + ",\"total\":" + std::to_string(items.size()) +
          ",\"firing\":" + std::to_string(firing) + ",\"offset\":" + std::to_string(begin) +
          ",\"limit\":" + std::to_string(q.limit) + "}";
  return json_response(200, std::move(body));
}

HttpResponse list_rules(const ApiContext& ctx) {
  std::unordered_map<std::string, std::uint64_t> matches;
  if (ctx.activity)
    for (auto& [rule, n] : ctx.activity().rule_matches) matches[rule] = n;
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> incidents;  // total, firing
  IncidentQuery all;
  all.limit = std::numeric_limits<std::size_t>::max();
  auto stored = ctx.incidents ? ctx.incidents->query(all) : std::vector<const StoredIncident*>{};
  for (const auto* s : stored) {
    auto& n = incidents[s->summary.rule];
    ++n.first;
    if (s->summary.status == IncidentStatus::firing) ++n.second;
  }
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  if (ctx.rules) {
    for (const auto& r : ctx.rules()) {
      nlohmann::ordered_json j;
      j["id"] = r.id;
      j["title"] = sanitize_utf8(r.title);
      j["severity"] = std::string(to_string(r.severity));
      j["content_hash"] = r.content_hash;
      j["summary"] = sanitize_utf8(r.summary);
      nlohmann::ordered_json refs = nlohmann::ordered_json::array();
      for (const auto& ref : r.references) refs.push_back(sanitize_utf8(ref));
      j["references"] = std::move(refs);
      auto m = matches.find(r.id);
      j["matches"] = m == matches.end() ? 0 : m->second;
      auto n = incidents.find(r.id);
      j["incidents"] = n == incidents.end() ? 0 : n->second.first;
      j["firing"] = n == incidents.end() ? 0 : n->second.second;
      rules.push_back(std::move(j));
    }
  }
  nlohmann::ordered_json out;
  out["count"] = rules.size();
  out["rules"] = std::move(rules);
  return json_response(200, out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

std::string url_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() + 0 && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos < query.size()) {
    auto amp = query.find('&', pos);
    auto part = query.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    if (!part.empty()) {
      auto eq = part.find('=');
      if (eq == std::string_view::npos) out.emplace_back(url_decode(part), "");
      else out.emplace_back(url_decode(part.substr(0, eq)), url_decode(part.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return out;
}

std::optional<std::pair<std::string, std::uint16_t>> parse_listen_address(std::string_view text, std::string* error) {
  auto fail = [&](const char* msg) -> std::optional<std::pair<std::string, std::uint16_t>> {
    if (error) *error = "invalid listen address '" + std::string(text) + "': " + msg;
    return std::nullopt;
  };
  std::string host;
  std::string_view port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return fail("expected [address]:port");
    host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail("expected host:port");
    host = std::string(text.substr(0, colon));
    if (host.find(':') != std::string::npos) return fail("put an IPv6 address in brackets: [::1]:9464");
    port = text.substr(colon + 1);
  }
  if (host.empty()) host = "0.0.0.0";
  unsigned p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p > 65535) return fail("bad port");
  return std::make_pair(host, static_cast<std::uint16_t>(p));
}

HttpResponse handle_request(const HttpRequest& request, const ApiContext& ctx, std::string* handler) {
  auto set_handler = [&](const char* h) {
    if (handler) *handler = h;
  };
  std::string_view target = request.target;
  auto qpos = target.find('?');
  std::string path = url_decode(target.substr(0, qpos));
  auto params = qpos == std::string_view::npos ? std::vector<std::pair<std::string, std::string>>{}
                                               : parse_query(target.substr(qpos + 1));
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const Time now = (ctx.clock ? *ctx.clock : static_cast<const Clock&>(SystemClock::instance())).now();

  // The only state-changing requests: a browser's session.
  if (path == "/login" || path == "/logout") {
    set_handler(path == "/login" ? "login" : "logout");
    if (request.method != "POST") {
      auto r = error_response(405, "method not allowed");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    return path == "/login" ? server_detail::login(request, ctx, now) : server_detail::logout(request, ctx, now);
  }
  if (request.method != "GET" && request.method != "HEAD") {
    set_handler("other");
    auto r = error_response(405, "method not allowed");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }

  if (path == "/metrics") {
    set_handler("metrics");
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    if (ctx.metrics) r.body = ctx.metrics->serialize();
    return r;
  }
  if (path == "/healthz") {
    set_handler("healthz");
    HttpResponse r;
    r.body = "ok\n";
    return r;
  }
  if (path == "/readyz") {
    set_handler("readyz");
    auto items = ctx.readiness ? ctx.readiness() : std::vector<ReadinessItem>{};
    bool ok = std::all_of(items.begin(), items.end(), [](const ReadinessItem& i) { return i.ok; });
    HttpResponse r;
    r.status = ok ? 200 : 503;
    r.body = ok ? "ready\n" : "not ready\n";
    for (const auto& i : items) {
      r.body += (i.ok ? "ok   " : "FAIL ") + i.component;
      if (!i.detail.empty()) r.body += ": " + i.detail;
      r.body += '\n';
    }
    return r;
  }
  // The page's files hold no data: served without a token, so a browser can show the login form.
  if (path.rfind("/api/", 0) != 0) {
    if (auto file = server_detail::page_file(path)) {
      set_handler("page");
      return std::move(*file);
    }
    set_handler("not_found");
    return error_response(404, "not found");
  }
  if (path == "/api/v1/session") {
    set_handler("session");
    return server_detail::session_state(request, ctx, now);
  }
  if (!ctx.api_token.empty() && !server_detail::bearer_ok(request.authorization, ctx.api_token) &&
      !server_detail::session_ok(request.cookie, ctx.api_token, now)) {
    set_handler("unauthorized");
    auto r = error_response(401, "a bearer token (or a session from the page's login) is required");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"faultline\"");
    return r;
  }

  if (path == "/api/v1/incidents") {
    set_handler("incidents");
    ListQuery q;
    if (auto err = parse_incident_query(params, now, q); !err.empty()) return error_response(400, err);
    return list_incidents(ctx, q);
  }
  constexpr std::string_view one = "/api/v1/incidents/";
  if (path.rfind(one, 0) == 0) {
    set_handler("incident");
    auto id = std::string_view(path).substr(one.size());
    const auto* s = ctx.incidents ? ctx.incidents->find(id) : nullptr;
    if (!s) return error_response(404, "no incident with id '" + std::string(id) + "'");
    // The latest revision and, as "history", the revisions before it that the store kept.
    std::string body = s->json;
    if (!body.empty() && body.back() == '}') {
      body.pop_back();
      body += ",\"history\":" + s->history.to_json() + "}";
    }
    return json_response(200, std::move(body));
  }
  if (path == "/api/v1/rules") {
    set_handler("rules");
    return list_rules(ctx);
  }
  if (path == "/api/v1/status") {
    set_handler("status");
    return server_detail::status_response(ctx, now);
  }
  if (path == "/api/v1/events") {
    set_handler("events");
    return server_detail::event_stream(ctx);
  }
  if (path == "/api/v1/fingerprints") {
    set_handler("fingerprints");
    return json_response(200, ctx.fingerprints ? ctx.fingerprints() : R"({"count":0,"fingerprints":[]})");
  }
  set_handler("not_found");
  return error_response(404, "not found");
}

}  // namespace faultline
