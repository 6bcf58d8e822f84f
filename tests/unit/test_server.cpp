// server: routing and rendering (handle_request over plain values), the token and the browser's session, ServerStatus.
// The live Beast listener: test_server_live.cpp; slow and idle clients: test_server_connections.cpp.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/clock.hpp"
#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/rules.hpp"
#include "faultline/server.hpp"
#include "faultline/sinks.hpp"
#include "net_util.h"
#include "server_support.hpp"

using namespace faultline;
using servertest::incident;
namespace fs = std::filesystem;

namespace {

struct Api {
  IncidentStore store;
  Metrics metrics;
  ApiContext ctx;
  std::vector<ReadinessItem> ready{{"rules", true, "3 rules"}, {"sources", true, ""}};
  Api() {
    store.accept(incident("aaaa", "cuda-oom", Severity::critical, "2026-03-01T10:00:05Z"));
    store.accept(incident("bbbb", "nccl-timeout", Severity::warning, "2026-03-01T11:00:00Z"));
    auto c = incident("cccc", "cuda-oom", Severity::info, "2026-03-01T12:00:00Z");
    c.status = IncidentStatus::resolved;
    store.accept(c);
    ctx.incidents = &store;
    ctx.metrics = &metrics;
    ctx.readiness = [this] { return ready; };
    ctx.rules = [] {
      return std::vector<RuleInfo>{{"cuda-oom", "CUDA out of memory", Severity::critical, "abc123"}};
    };
    ctx.version = "9.9.9";
  }
  HttpResponse get(const std::string& target, const std::string& auth = {}, const std::string& method = "GET") {
    return handle_request({method, target, auth}, ctx);
  }
  std::vector<std::string> ids(const std::string& target) {
    auto r = get(target);
    REQUIRE(r.status == 200);
    std::vector<std::string> out;
    auto j = nlohmann::json::parse(r.body);
    for (auto& i : j["incidents"]) out.push_back(i["id"]);
    return out;
  }
};

}  // namespace

TEST_CASE("incident API filters", "[server]") {
  Api api;
  CHECK(api.ids("/api/v1/incidents") == std::vector<std::string>{"cccc", "bbbb", "aaaa"});
  CHECK(api.ids("/api/v1/incidents?rule=cuda-oom") == std::vector<std::string>{"cccc", "aaaa"});
  CHECK(api.ids("/api/v1/incidents?rule=cuda-oom,nccl-timeout&limit=2") == std::vector<std::string>{"cccc", "bbbb"});
  CHECK(api.ids("/api/v1/incidents?severity=critical,warning") == std::vector<std::string>{"bbbb", "aaaa"});
  CHECK(api.ids("/api/v1/incidents?status=firing") == std::vector<std::string>{"bbbb", "aaaa"});
  CHECK(api.ids("/api/v1/incidents?since=2026-03-01T10%3A30%3A00Z") == std::vector<std::string>{"cccc", "bbbb"});
  CHECK(api.ids("/api/v1/incidents?since=1h").empty());  // all are older than an hour from now
  CHECK(api.get("/api/v1/incidents?severity=fatal").status == 400);
  CHECK(api.get("/api/v1/incidents?since=yesterday").status == 400);
  CHECK(api.get("/api/v1/incidents?limit=0").status == 400);
  auto one = api.get("/api/v1/incidents/bbbb");
  REQUIRE(one.status == 200);
  CHECK(one.content_type == "application/json");
  CHECK(nlohmann::json::parse(one.body)["rule"] == "nccl-timeout");
  CHECK(api.get("/api/v1/incidents/nope").status == 404);
}

TEST_CASE("one incident carries the revision history the store kept", "[server]") {
  Api api;
  auto b = incident("bbbb", "nccl-timeout", Severity::critical, "2026-03-01T11:00:30Z");
  b.revision = 2;
  api.store.accept(b);
  auto j = nlohmann::json::parse(api.get("/api/v1/incidents/bbbb").body);
  CHECK(j["revision"] == 2);
  REQUIRE(j["history"]["revisions"].size() == 2);
  CHECK(j["history"]["revisions"][0]["change"] == "first");
  CHECK(j["history"]["revisions"][0]["severity"] == "warning");
  CHECK(j["history"]["revisions"][1]["change"] == "severity");
  CHECK(j["history"]["revisions"][1]["severity"] == "critical");
  CHECK(j["history"]["revisions"][1]["last_seen"] == "2026-03-01T11:00:30.000Z");
  CHECK(j["history"]["omitted"] == 0);
  // The list stays one revision per incident.
  auto list = nlohmann::json::parse(api.get("/api/v1/incidents").body);
  for (auto& i : list["incidents"]) CHECK(!i.contains("history"));
}

TEST_CASE("rules, health, readiness, metrics, page", "[server]") {
  Api api;
  auto rules = nlohmann::json::parse(api.get("/api/v1/rules").body);
  CHECK(rules["count"] == 1);
  CHECK(rules["rules"][0]["id"] == "cuda-oom");
  CHECK(rules["rules"][0]["severity"] == "critical");
  CHECK(rules["rules"][0]["content_hash"] == "abc123");

  CHECK(api.get("/healthz").status == 200);
  auto ready = api.get("/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.body.find("ok   rules: 3 rules") != std::string::npos);
  api.ready[1] = {"sources", false, "cannot open /var/log/x"};
  ready = api.get("/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("FAIL sources: cannot open /var/log/x") != std::string::npos);

  auto metrics = api.get("/metrics");
  CHECK(metrics.status == 200);
  CHECK(metrics.content_type.find("version=0.0.4") != std::string::npos);
  CHECK(metrics.body.find("faultline_build_info") != std::string::npos);

  // The page is the same files for everyone: its data comes from the API, rendered in the browser as text.
  auto page = api.get("/");
  CHECK(page.status == 200);
  CHECK(page.content_type.find("text/html") != std::string::npos);
  CHECK(page.body.find("<script src=\"page.js\"") != std::string::npos);
  CHECK(page.body.find("name=\"viewport\"") != std::string::npos);
  CHECK(page.body.find("Title") == std::string::npos);
  auto header = [](const HttpResponse& r, std::string_view name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return std::string();
  };
  CHECK(header(page, "Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  auto js = api.get("/page.js");
  CHECK(js.status == 200);
  CHECK(js.content_type.find("text/javascript") != std::string::npos);
  CHECK(js.body.find("textContent") != std::string::npos);
  CHECK(js.body.find("innerHTML") == std::string::npos);
  CHECK(api.get("/page.css").content_type.find("text/css") != std::string::npos);
  CHECK(api.get("/index.html").body == page.body);
  CHECK(api.get("/page.js/x").status == 404);
  CHECK(api.get("/nope").status == 404);
  auto post = api.get("/api/v1/incidents", {}, "POST");
  CHECK(post.status == 405);
}

TEST_CASE("a target that is not a path is not found, not an exception", "[server]") {
  Api api;
  for (const char* target : {"", "x", "page.css", "/a/b", "/page.css/x"}) {
    INFO(target);
    CHECK(api.get(target, {}, "HEAD").status == 404);
  }
}

TEST_CASE("the API sends no control character of a log line raw", "[server]") {
  Api api;
  auto inc = incident("dddd", "cuda-oom", Severity::critical);
  inc.evidence[0].text = std::string("before\0nul \x1b[31mred\x7f after", 26);
  api.store.accept(inc);
  auto list = api.get("/api/v1/incidents?rule=cuda-oom");
  REQUIRE(list.status == 200);
  CHECK(list.body.find('\0') == std::string::npos);
  CHECK(list.body.find('\x1b') == std::string::npos);
  auto j = nlohmann::json::parse(list.body);
  CHECK(j["incidents"][0]["evidence"][0]["text"].get<std::string>().find("red") != std::string::npos);
}

TEST_CASE("incident list: totals, paging, label and text filters, root causes first", "[server]") {
  Api api;
  for (int i = 0; i < 150; ++i) {
    auto inc = incident("p" + std::to_string(1000 + i), "bulk", Severity::warning);
    set_field(inc.stream_labels, "namespace", i % 2 ? "odd" : "even");
    set_field(inc.stream_labels, "node", "gpu-" + std::to_string(i % 3));
    api.store.accept(inc);
  }
  auto page = [&](const std::string& q) { return nlohmann::json::parse(api.get("/api/v1/incidents?" + q).body); };
  auto first = page("rule=bulk");
  CHECK(first["count"] == 100);
  CHECK(first["total"] == 150);
  CHECK(first["offset"] == 0);
  auto second = page("rule=bulk&offset=100");
  CHECK(second["count"] == 50);
  CHECK(second["total"] == 150);
  CHECK(second["incidents"][49]["id"] == "p1000");  // oldest last
  CHECK(page("rule=bulk&offset=500")["count"] == 0);
  CHECK(page("rule=bulk&namespace=odd")["total"] == 75);
  CHECK(page("rule=bulk&namespace=odd&node=gpu-0")["total"] == 25);
  CHECK(page("pod=nope")["total"] == 0);
  CHECK(page("q=P1042")["total"] == 1);                  // the id, any case
  CHECK(page("q=ALERT(1)")["total"] == 153);             // evidence text
  CHECK(page("q=title%20%3Cnccl")["total"] == 1);        // the title
  CHECK(page("firing=1")["firing"] == 152);
  CHECK(api.get("/api/v1/incidents?offset=-1").status == 400);
  CHECK(api.get("/api/v1/incidents?order=random").status == 400);

  // A cascade: the root cause comes first, then what it explains, whatever the order of updates.
  auto root = incident("root", "tma", Severity::critical);
  auto symptom = incident("symp", "engine-dead", Severity::critical);
  symptom.caused_by = "root";
  symptom.caused_by_rule = "tma";
  api.store.accept(root);
  api.store.accept(symptom);  // newer than its root
  auto ordered = page("rule=tma,engine-dead&order=cause");
  REQUIRE(ordered["count"] == 2);
  CHECK(ordered["incidents"][0]["id"] == "root");
  CHECK(ordered["incidents"][1]["id"] == "symp");
  CHECK(page("rule=tma,engine-dead")["incidents"][0]["id"] == "symp");  // default: newest update first
  auto explained = page("caused_by=root");
  REQUIRE(explained["count"] == 1);
  CHECK(explained["incidents"][0]["id"] == "symp");
  // Its root filtered out: the symptom stands on its own.
  CHECK(page("rule=engine-dead&order=cause")["incidents"][0]["id"] == "symp");
}

TEST_CASE("the evidence in the API keeps every decisive line", "[server]") {
  Api api;
  auto inc = incident("evid", "tma", Severity::critical);
  inc.evidence.clear();
  for (int i = 0; i < 20; ++i) {
    EvidenceLine e;
    e.line = i + 1;
    e.text = "context " + std::to_string(i);
    inc.evidence.push_back(e);
  }
  inc.evidence[19].event = "error";
  inc.evidence[19].text = "Error: Failed to initialize the TMA descriptor 1";
  api.store.accept(inc);
  auto one = nlohmann::json::parse(api.get("/api/v1/incidents/evid").body);
  REQUIRE(one["evidence"].size() == 20);
  CHECK(one["evidence"][19]["event"] == "error");
  auto listed = nlohmann::json::parse(api.get("/api/v1/incidents?rule=tma").body);
  CHECK(listed["incidents"][0]["evidence"].size() == 20);
}

TEST_CASE("status and the live event stream", "[server]") {
  Api api;
  ManualClock clock(*parse_rfc3339("2026-03-01T12:30:00Z"));
  api.ctx.clock = &clock;
  ReadingActivity activity;
  activity.files = 3;
  activity.lines_read = 42;
  activity.last_line = *parse_rfc3339("2026-03-01T12:29:48Z");
  activity.rule_matches = {{"cuda-oom", 7}};
  api.ctx.activity = [&activity] { return activity; };
  auto status = nlohmann::json::parse(api.get("/api/v1/status").body);
  CHECK(status["version"] == "9.9.9");
  CHECK(status["reading"]["files"] == 3);
  CHECK(status["reading"]["lines_read"] == 42);
  CHECK(status["reading"]["last_line_age_seconds"] == 12.0);
  CHECK(status["incidents"]["total"] == 3);
  CHECK(status["incidents"]["firing"] == 2);
  CHECK(status["incidents"]["critical_firing"] == 1);
  CHECK(status["ready"] == true);
  auto rules = nlohmann::json::parse(api.get("/api/v1/rules").body);
  CHECK(rules["rules"][0]["matches"] == 7);
  CHECK(rules["rules"][0]["incidents"] == 2);
  CHECK(rules["rules"][0]["firing"] == 1);

  auto events = api.get("/api/v1/events");
  REQUIRE(events.stream);
  CHECK(events.content_type.find("text/event-stream") == 0);
  CHECK(events.body.find("retry: ") == 0);
  CHECK(events.body.find("event: status\ndata: {") != std::string::npos);
  auto change = status["change"].get<std::uint64_t>();
  CHECK(events.stream->next().empty());  // nothing changed
  api.store.accept(incident("eeee", "cuda-oom", Severity::critical));
  auto next = events.stream->next();
  REQUIRE(next.rfind("event: status\ndata: ", 0) == 0);
  auto data = nlohmann::json::parse(next.substr(std::string("event: status\ndata: ").size()));
  CHECK(data["change"].get<std::uint64_t>() > change);
  CHECK(data["incidents"]["total"] == 4);
  CHECK(events.stream->next().empty());
  activity.lines_read = 43;
  CHECK_FALSE(events.stream->next().empty());
}
// Found by fuzz_http: an error message echoing invalid UTF-8 of the query threw from the JSON writer (terminate).
TEST_CASE("a query of invalid UTF-8 gets a 400, not a throw", "[server]") {
  Api api;
  auto r = api.get("/api/v1/incidents?status=fir\x92ng");
  CHECK(r.status == 400);
  CHECK(r.body.find("error") != std::string::npos);
}

TEST_CASE("the token guards the API; the page's files, metrics and probes stay open", "[server]") {
  Api api;
  api.ctx.api_token = "s3cret-token";
  CHECK(api.get("/api/v1/incidents").status == 401);
  CHECK(api.get("/api/v1/status").status == 401);
  CHECK(api.get("/api/v1/events").status == 401);
  CHECK(api.get("/api/v1/rules", "Bearer wrong-token!").status == 401);
  CHECK(api.get("/api/v1/incidents", "Bearer s3cret-token").status == 200);
  CHECK(api.get("/api/v1/incidents", "bearer s3cret-token").status == 200);
  CHECK(api.get("/").status == 200);
  CHECK(api.get("/page.js").status == 200);
  CHECK(api.get("/metrics").status == 200);
  CHECK(api.get("/healthz").status == 200);
  CHECK(api.get("/readyz").status == 200);
  auto session = nlohmann::json::parse(api.get("/api/v1/session").body);
  CHECK(session["token_required"] == true);
  CHECK(session["authenticated"] == false);
}

TEST_CASE("a browser logs in with the token and gets an HttpOnly, SameSite=Strict session cookie", "[server]") {
  Api api;
  ManualClock clock(*parse_rfc3339("2026-03-01T12:30:00Z"));
  api.ctx.clock = &clock;
  api.ctx.api_token = "s3cret-token";
  auto post = [&](const std::string& target, const std::string& body, const std::string& origin,
                  const std::string& cookie = {}) {
    HttpRequest r{"POST", target, {}};
    r.body = body;
    r.origin = origin;
    r.host = "127.0.0.1:9464";
    r.cookie = cookie;
    r.content_type = "application/x-www-form-urlencoded";
    return handle_request(r, api.ctx);
  };
  auto with_cookie = [&](const std::string& target, const std::string& cookie) {
    HttpRequest r{"GET", target, {}};
    r.cookie = cookie;
    return handle_request(r, api.ctx);
  };
  CHECK(post("/login", "token=wrong", "http://127.0.0.1:9464").status == 401);
  CHECK(post("/login", "token=s3cret-token", "https://evil.example").status == 403);  // login CSRF
  HttpRequest cross{"POST", "/login", {}};
  cross.body = "token=s3cret-token";
  cross.fetch_site = "cross-site";
  CHECK(handle_request(cross, api.ctx).status == 403);
  CHECK(api.get("/login").status == 405);

  auto ok = post("/login", "token=s3cret-token", "http://127.0.0.1:9464");
  REQUIRE(ok.status == 204);
  std::string set_cookie;
  for (const auto& [k, v] : ok.headers)
    if (k == "Set-Cookie") set_cookie = v;
  CHECK(set_cookie.find("faultline_session=v1.") == 0);
  CHECK(set_cookie.find("; HttpOnly") != std::string::npos);
  CHECK(set_cookie.find("; SameSite=Strict") != std::string::npos);
  CHECK(set_cookie.find("; Path=/") != std::string::npos);
  CHECK(set_cookie.find("; Secure") == std::string::npos);  // plain http: a Secure cookie would never come back
  CHECK(set_cookie.find("s3cret-token") == std::string::npos);
  std::string cookie = "other=1; " + set_cookie.substr(0, set_cookie.find(';'));

  CHECK(with_cookie("/api/v1/incidents", cookie).status == 200);
  CHECK(nlohmann::json::parse(with_cookie("/api/v1/session", cookie).body)["authenticated"] == true);
  std::string forged = cookie;
  forged[forged.size() - 1] = forged.back() == '0' ? '1' : '0';
  CHECK(with_cookie("/api/v1/incidents", forged).status == 401);
  // Another token (rotated) ends every session; so does time.
  api.ctx.api_token = "n3w-token-value";
  CHECK(with_cookie("/api/v1/incidents", cookie).status == 401);
  api.ctx.api_token = "s3cret-token";
  clock.advance(std::chrono::hours(13));
  CHECK(with_cookie("/api/v1/incidents", cookie).status == 401);
  clock.advance(-std::chrono::hours(13));

  CHECK(post("/logout", "", "https://evil.example", cookie).status == 403);
  auto out = post("/logout", "", "http://127.0.0.1:9464", cookie);
  CHECK(out.status == 204);
  bool cleared = false;
  for (const auto& [k, v] : out.headers)
    if (k == "Set-Cookie") cleared = v.find("Max-Age=0") != std::string::npos;
  CHECK(cleared);

  HttpRequest proxied{"POST", "/login", {}};
  proxied.body = "token=s3cret-token";
  proxied.forwarded_proto = "https";
  auto secure = handle_request(proxied, api.ctx);
  REQUIRE(secure.status == 204);
  CHECK(secure.headers[0].second.find("; Secure") != std::string::npos);
}

TEST_CASE("listen addresses and query strings", "[server]") {
  CHECK(parse_listen_address("127.0.0.1:9464") == std::make_pair(std::string("127.0.0.1"), std::uint16_t{9464}));
  CHECK(parse_listen_address("[::1]:80") == std::make_pair(std::string("::1"), std::uint16_t{80}));
  CHECK(parse_listen_address(":9464")->first == "0.0.0.0");
  CHECK_FALSE(parse_listen_address("localhost"));
  CHECK_FALSE(parse_listen_address("::1:80"));
  CHECK_FALSE(parse_listen_address("h:70000"));
  CHECK(url_decode("a%20b+c%2F") == "a b c/");
  auto q = parse_query("rule=a&x&since=10m");
  REQUIRE(q.size() == 3);
  CHECK(q[1].first == "x");
  CHECK(q[2].second == "10m");
}

TEST_CASE("?since= a duration counts back from the context's clock", "[server]") {
  Api api;
  ManualClock clock(*parse_rfc3339("2026-03-01T12:30:00Z"));
  api.ctx.clock = &clock;
  CHECK(api.ids("/api/v1/incidents?since=1h") == std::vector<std::string>{"cccc"});
  clock.advance(std::chrono::hours(1));
  CHECK(api.ids("/api/v1/incidents?since=1h") == std::vector<std::string>{});
}

TEST_CASE("server status: readiness by component, sorted, with the state dir; the rules", "[server]") {
  char tmpl[] = "/tmp/faultline-status-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ServerStatus status(dir);
  status.set_ready("sources", false, "waiting");
  status.set_ready("rules", true);
  status.set_ready("sources", true);
  auto items = status.readiness();
  REQUIRE(items.size() == 3);
  CHECK(items[0].component == "rules");
  CHECK(items[1].component == "sources");
  CHECK(items[1].ok);
  CHECK(items[2].component == "state_dir");
  CHECK(items[2].ok);
  fs::remove_all(dir);
  CHECK_FALSE(status.readiness()[2].ok);
  RuleSet rs;
  rs.rules.emplace_back().id = "cuda-oom";
  status.set_rules(rule_infos(rs));
  REQUIRE(status.rules().size() == 1);
  CHECK(status.rules()[0].id == "cuda-oom");
}

TEST_CASE("the fingerprint inventory route serves what the context gives, behind the token", "[server]") {
  Api api;
  std::string handler;
  auto empty = handle_request({"GET", "/api/v1/fingerprints", ""}, api.ctx, &handler);
  CHECK(empty.status == 200);
  CHECK(handler == "fingerprints");
  CHECK(nlohmann::json::parse(empty.body) == nlohmann::json::parse(R"({"count":0,"fingerprints":[]})"));
  api.ctx.fingerprints = [] {
    return std::string(R"({"count":1,"fingerprints":[{"fingerprint":"0123456789abcdef"}]})");
  };
  auto one = api.get("/api/v1/fingerprints/");
  CHECK(one.status == 200);
  CHECK(one.content_type == "application/json");
  CHECK(nlohmann::json::parse(one.body)["fingerprints"][0]["fingerprint"] == "0123456789abcdef");
  api.ctx.api_token = "t0k";
  CHECK(api.get("/api/v1/fingerprints").status == 401);
  CHECK(api.get("/api/v1/fingerprints", "Bearer t0k").status == 200);
}
