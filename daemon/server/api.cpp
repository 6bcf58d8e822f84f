// Routing and rendering for the HTTP server: plain functions from a request to a response, so they are tested
// without sockets. Runs on the io thread (it reads the incident view).
#include <openssl/crypto.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "faultline/clock.hpp"
#include "faultline/metrics.hpp"
#include "faultline/server.hpp"

namespace faultline {
namespace {

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

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n':
      case '\r': out += c; break;
      default:
        // Control characters (NUL, ESC, DEL ...) from a log line: shown as U+FFFD, never sent raw.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

bool token_ok(std::string_view authorization, const std::string& token) {
  constexpr std::string_view prefix = "Bearer ";
  if (authorization.size() < prefix.size()) return false;
  std::string scheme(authorization.substr(0, prefix.size()));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::tolower);
  if (scheme != "bearer ") return false;
  auto given = authorization.substr(prefix.size());
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  return given.size() == token.size() && CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

// Parses the filters shared by the API and the page. Returns an error message or empty.
std::string parse_incident_query(const std::vector<std::pair<std::string, std::string>>& params, Time now,
                                 IncidentQuery& q) {
  for (const auto& [k, v] : params) {
    if (k == "rule") {
      for (auto& r : split_list(v)) q.rules.push_back(r);
    } else if (k == "severity") {
      for (auto& s : split_list(v)) {
        auto sev = parse_severity(s);
        if (!sev) return "unknown severity '" + s + "' (info, warning, critical)";
        q.severities.push_back(*sev);
      }
    } else if (k == "status") {
      if (v == "firing") q.status = IncidentStatus::firing;
      else if (v == "resolved") q.status = IncidentStatus::resolved;
      else if (!v.empty()) return "unknown status '" + v + "' (firing, resolved)";
    } else if (k == "since") {
      if (v.empty()) continue;
      if (auto t = parse_rfc3339(v)) {
        q.since = *t;
      } else if (auto d = parse_duration(v)) {
        q.since = now - *d;
      } else {
        return "since must be an RFC 3339 time or a duration such as 15m";
      }
    } else if (k == "limit") {
      std::size_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size() || n == 0) return "limit must be a positive integer";
      q.limit = std::min<std::size_t>(n, 1000);
    }
  }
  return {};
}

std::string severity_colour(Severity s) {
  switch (s) {
    case Severity::critical: return "#b00020";
    case Severity::warning: return "#b26a00";
    default: return "#2b5797";
  }
}

HttpResponse render_page(const ApiContext& ctx, const IncidentQuery& q) {
  std::string h;
  h += "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"30\">"
       "<title>faultline incidents</title><style>"
       "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
       "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4em;text-align:left;"
       "vertical-align:top}th{background:#f4f4f4}.sev{font-weight:bold}pre{white-space:pre-wrap;margin:.3em 0;"
       "font-size:.85em;background:#f8f8f8;padding:.4em}.resolved{color:#777}"
       "</style></head><body>";
  h += "<h1>faultline</h1><p>Recent incidents, newest first. JSON: <a href=\"api/v1/incidents\">/api/v1/incidents</a>"
       " · rules: <a href=\"api/v1/rules\">/api/v1/rules</a> · <a href=\"metrics\">/metrics</a> · version " +
       html_escape(ctx.version) + "</p>";
  auto items = ctx.incidents ? ctx.incidents->query(q) : std::vector<const StoredIncident*>{};
  if (items.empty()) {
    h += "<p>No incidents.</p>";
  } else {
    h += "<table><tr><th>severity</th><th>status</th><th>incident</th><th>stream</th><th>first seen</th>"
         "<th>last seen</th><th>count</th></tr>";
    for (const auto* s : items) {
      const auto& inc = s->incident;
      bool resolved = inc.status == IncidentStatus::resolved;
      h += resolved ? "<tr class=\"resolved\">" : "<tr>";
      h += "<td class=\"sev\" style=\"color:" + severity_colour(inc.severity) + "\">" +
           std::string(to_string(inc.severity)) + "</td>";
      h += "<td>" + std::string(to_string(inc.status)) + "</td>";
      h += "<td><a href=\"api/v1/incidents/" + html_escape(inc.id) + "\">" + html_escape(inc.title) + "</a><br><small>" +
           html_escape(inc.rule) + " · " + html_escape(inc.id) + " rev " + std::to_string(inc.revision) + "</small>";
      if (!inc.summary.empty()) h += "<div>" + html_escape(sanitize_utf8(inc.summary)) + "</div>";
      if (!inc.evidence.empty()) {
        h += "<pre>";
        std::size_t n = 0;
        for (const auto& e : inc.evidence) {
          if (n++ == 8) break;
          h += html_escape(sanitize_utf8(e.text)) + "\n";
        }
        h += "</pre>";
      }
      if (!inc.remediation.empty()) h += "<div><b>Fix:</b> " + html_escape(sanitize_utf8(inc.remediation)) + "</div>";
      if (inc.caused_by) h += "<div><small>caused by " + html_escape(*inc.caused_by) + " (" +
                              html_escape(inc.caused_by_rule) + ")</small></div>";
      h += "</td><td>" + html_escape(sanitize_utf8(inc.stream)) + "</td>";
      h += "<td>" + format_time(inc.first_seen) + "</td><td>" + format_time(inc.last_seen) + "</td>";
      h += "<td>" + std::to_string(inc.count) + "</td></tr>";
    }
    h += "</table>";
  }
  h += "</body></html>\n";
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::move(h);
  return r;
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

  bool api = path == "/" || path == "/index.html" || path.rfind("/api/", 0) == 0;
  if (!api) {
    set_handler("not_found");
    return error_response(404, "not found");
  }
  if (!ctx.api_token.empty() && !token_ok(request.authorization, ctx.api_token)) {
    set_handler("unauthorized");
    auto r = error_response(401, "a bearer token is required");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"faultline\"");
    return r;
  }

  if (path == "/" || path == "/index.html") {
    set_handler("page");
    IncidentQuery q;
    if (auto err = parse_incident_query(params, now, q); !err.empty()) return error_response(400, err);
    return render_page(ctx, q);
  }
  if (path == "/api/v1/incidents") {
    set_handler("incidents");
    IncidentQuery q;
    if (auto err = parse_incident_query(params, now, q); !err.empty()) return error_response(400, err);
    auto items = ctx.incidents ? ctx.incidents->query(q) : std::vector<const StoredIncident*>{};
    std::string body = "{\"incidents\":[";
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) body += ',';
      body += items[i]->json;
    }
    body += "],\"count\":" + std::to_string(items.size()) + "}";
    return json_response(200, std::move(body));
  }
  constexpr std::string_view one = "/api/v1/incidents/";
  if (path.rfind(one, 0) == 0) {
    set_handler("incident");
    auto id = std::string_view(path).substr(one.size());
    const auto* s = ctx.incidents ? ctx.incidents->find(id) : nullptr;
    if (!s) return error_response(404, "no incident with id '" + std::string(id) + "'");
    return json_response(200, s->json);
  }
  if (path == "/api/v1/rules") {
    set_handler("rules");
    nlohmann::ordered_json rules = nlohmann::ordered_json::array();
    if (ctx.rules) {
      for (const auto& r : ctx.rules()) {
        nlohmann::ordered_json j;
        j["id"] = r.id;
        j["title"] = sanitize_utf8(r.title);
        j["severity"] = std::string(to_string(r.severity));
        j["content_hash"] = r.content_hash;
        rules.push_back(std::move(j));
      }
    }
    nlohmann::ordered_json out;
    out["count"] = rules.size();
    out["rules"] = std::move(rules);
    return json_response(200, out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (path == "/api/v1/fingerprints") {
    set_handler("fingerprints");
    return json_response(200, ctx.fingerprints ? ctx.fingerprints() : R"({"count":0,"fingerprints":[]})");
  }
  set_handler("not_found");
  return error_response(404, "not found");
}

}  // namespace faultline
