// sinks: payload formats (Standard Webhooks, Alertmanager), redaction, sink filters and configuration, the JSON-lines
// sink. The spool and the incident store are in test_sinks_store.cpp; delivery through the Dispatcher to loopback
// receivers is in test_sinks_delivery.cpp.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/server.hpp"
#include "faultline/sinks.hpp"
#include "sinks_support.hpp"

using namespace faultline;
using namespace sinkstest;

TEST_CASE("Standard Webhooks signature matches the specification's example", "[sinks]") {
  auto key = decode_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  CHECK(standard_webhooks_signature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})") ==
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  CHECK(decode_webhook_secret("  plain-secret\n") == "plain-secret");
}

TEST_CASE("base64 round trips", "[sinks]") {
  for (std::string s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
    auto enc = base64_encode(s);
    CHECK(base64_decode(enc) == s);
  }
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK_FALSE(base64_decode("Zm9v*").has_value());
}

TEST_CASE("default redaction masks secrets and leaves ordinary text", "[sinks]") {
  auto r = Redactor::create({});
  REQUIRE(r);
  CHECK(r->redact("Authorization: Bearer abc.def-123_XYZ") == "Authorization: Bearer [REDACTED]");
  CHECK(r->redact("key sk-proj-abcdefghijklmnop1234 used") == "key [REDACTED] used");
  CHECK(r->redact("token hf_abcdefghijklmnopqrstuvwxyz here") == "token [REDACTED] here");
  CHECK(r->redact("fetch https://user:hunter2@host/x failed") == "fetch https://user:[REDACTED]@host/x failed");
  CHECK(r->redact("api_key=abc123 and password: \"s3cret\"") == "api_key=[REDACTED] and password: \"[REDACTED]\"");
  CHECK(r->redact("AKIAABCDEFGHIJKLMNOP") == "[REDACTED]");
  std::string plain = "CUDA out of memory. Tried to allocate 2.00 GiB; max_tokens=4096 task-id 7";
  CHECK(r->redact(plain) == plain);
}

TEST_CASE("redaction asks every pattern once any of them matches the line", "[sinks]") {
  // The patterns are first asked all at once (most lines hold no secret); a line that holds several of different
  // kinds, defaults and a custom one among them, has each masked.
  RedactionOptions o;
  o.patterns = {"ticket=(\\d{6})"};
  auto r = Redactor::create(o);
  REQUIRE(r);
  CHECK(r->redact("ticket=123456 Bearer abcdefgh hf_abcdefghijklmnopqrstuvwxyz AKIAABCDEFGHIJKLMNOP") ==
        "ticket=[REDACTED] Bearer [REDACTED] [REDACTED] [REDACTED]");
  CHECK(r->redact("ticket=123456") == "ticket=[REDACTED]");
  CHECK(r->redact("ticket=12345 is too short") == "ticket=12345 is too short");
  // Case-insensitive patterns keep their flag in the set.
  CHECK(r->redact("PASSWORD=hunter2") == "PASSWORD=[REDACTED]");
}

TEST_CASE("custom redaction patterns and caps", "[sinks]") {
  RedactionOptions o;
  o.defaults = false;
  o.patterns = {"user=(\\w+)", "SSN \\d{3}-\\d{2}-\\d{4}"};
  o.max_evidence_lines = 4;
  o.max_line_bytes = 10;
  auto r = Redactor::create(o);
  REQUIRE(r);
  CHECK(r->redact("login user=alice ok") == "login user=[REDACTED] ok");
  CHECK(r->redact("SSN 123-45-6789!") == "[REDACTED]!");
  CHECK(r->redact("Bearer abcdefghij") == "Bearer abcdefghij");  // defaults off

  Incident inc = make_incident();
  inc.evidence.clear();
  for (int i = 0; i < 10; ++i) {
    EvidenceLine e;
    e.line = static_cast<std::uint64_t>(i);
    e.text = "line " + std::to_string(i) + " user=bob and more text";
    inc.evidence.push_back(e);
  }
  inc.fields = {{"who", "user=carol"}};
  r->apply(inc);
  REQUIRE(inc.evidence.size() == 4);
  CHECK(inc.evidence[0].line == 0);
  CHECK(inc.evidence[1].line == 1);
  CHECK(inc.evidence[2].line == 8);
  CHECK(inc.evidence[3].line == 9);
  CHECK(inc.evidence[0].text.size() <= 10);
  CHECK(inc.evidence[0].truncated);
  CHECK(inc.fields[0].second == "user=[REDACTED]");

  std::string error;
  RedactionOptions bad;
  bad.patterns = {"(unclosed"};
  CHECK(Redactor::create(bad, &error) == nullptr);
  CHECK(error.find("(unclosed") != std::string::npos);
}

TEST_CASE("alertname and the Alertmanager alert", "[sinks]") {
  CHECK(alertname_for_rule("flashinfer-fmha-unsupported-arch") == "FaultlineFlashinferFmhaUnsupportedArch");
  CHECK(alertname_for_rule("cuda_oom") == "FaultlineCudaOom");

  auto inc = make_incident();
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1772359200));  // 2026-03-01T10:00:00Z
  auto j = nlohmann::json::parse(alertmanager_alert(inc, {"http://faultline:9464/", std::chrono::minutes(1)}, now));
  CHECK(j["labels"]["alertname"] == "FaultlineFlashinferFmhaUnsupportedArch");
  CHECK(j["labels"]["rule"] == "flashinfer-fmha-unsupported-arch");
  CHECK(j["labels"]["severity"] == "critical");
  CHECK(j["labels"]["incident_id"] == inc.id);
  CHECK(j["labels"]["namespace"] == "ml");
  CHECK(j["labels"]["pod"] == "vllm-0");
  CHECK(j["labels"]["container"] == "vllm");
  CHECK(j["labels"]["node"] == "gpu-7");
  CHECK(j["labels"]["team"] == "inference");
  CHECK_FALSE(j["labels"].contains("bad-label"));
  CHECK(j["annotations"]["summary"] == inc.title);
  CHECK(j["annotations"]["description"] == inc.summary);
  CHECK_FALSE(j["annotations"].contains("title"));
  CHECK(j["annotations"]["runbook_url"] == "https://example.com/runbook");
  CHECK(j["annotations"]["references"] == "https://example.com/runbook\nhttps://example.com/other");
  CHECK(j["annotations"]["remediation"] == inc.remediation);
  CHECK(j["annotations"]["evidence"].get<std::string>().find("FMHA unsupported") != std::string::npos);
  CHECK(j["startsAt"] == "2026-03-01T10:00:00.000Z");
  CHECK(j["endsAt"] == "2026-03-01T10:04:00.000Z");  // 4 × resend interval ahead
  CHECK(j["generatorURL"] == "http://faultline:9464/api/v1/incidents/" + inc.id);

  inc.status = IncidentStatus::resolved;
  auto resolved_at = now + std::chrono::seconds(30);
  j = nlohmann::json::parse(alertmanager_alert(inc, {"", std::chrono::minutes(1)}, now + std::chrono::hours(1), resolved_at));
  CHECK(j["endsAt"] == "2026-03-01T10:00:30.000Z");
  CHECK_FALSE(j.contains("generatorURL"));
}

TEST_CASE("Alertmanager evidence: the decisive lines, bounded, never behind the context", "[sinks]") {
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1772359200));
  auto evidence_of = [&](const Incident& inc) {
    auto j = nlohmann::json::parse(alertmanager_alert(inc, {"", std::chrono::minutes(1)}, now));
    return j["annotations"].contains("evidence") ? j["annotations"]["evidence"].get<std::string>() : std::string();
  };
  auto inc = make_incident();
  inc.evidence.clear();
  for (int i = 0; i < 20; ++i) {
    EvidenceLine c;
    c.line = static_cast<std::uint64_t>(i + 1);
    c.text = "[TRT-LLM] [I] start-up line " + std::to_string(i);
    inc.evidence.push_back(c);
  }
  EvidenceLine hit;
  hit.event = "unsupported";
  hit.line = 21;
  hit.text = "RuntimeError: Error in function 'TllmGenFmhaRunner': Unsupported architecture";
  inc.evidence.push_back(hit);
  CHECK(evidence_of(inc) == hit.text);  // 20 context lines first, as evidence is ordered: the hit alone

  // Many hits: the first and the last ones, and how many were left out; each line cut to a bound.
  inc.evidence.clear();
  for (int i = 0; i < 9; ++i) {
    EvidenceLine h = hit;
    h.text = "hit " + std::to_string(i) + (i == 8 ? " " + std::string(1000, 'x') : "");
    inc.evidence.push_back(h);
  }
  std::string ev = evidence_of(inc);
  CHECK(ev.rfind("hit 0\nhit 1\n[5 more matching lines]\nhit 7\nhit 8 xx", 0) == 0);
  CHECK(std::count(ev.begin(), ev.end(), '\n') == 4);
  CHECK(ev.size() < 400);
  CHECK(ev.substr(ev.size() - 3) == "…");

  // No hit at all (an unclassified failure story): its last lines.
  inc.evidence.clear();
  for (int i = 0; i < 8; ++i) {
    EvidenceLine c;
    c.text = "line " + std::to_string(i);
    inc.evidence.push_back(c);
  }
  CHECK(evidence_of(inc) == "line 3\nline 4\nline 5\nline 6\nline 7");

  // Only issue threads among the references: no runbook_url, the references still listed.
  inc.references = {"https://github.com/org/repo/issues/1", "https://github.com/org/repo/pull/2"};
  auto j = nlohmann::json::parse(alertmanager_alert(inc, {"", std::chrono::minutes(1)}, now));
  CHECK_FALSE(j["annotations"].contains("runbook_url"));
  CHECK(j["annotations"]["references"] == "https://github.com/org/repo/issues/1\nhttps://github.com/org/repo/pull/2");
}

TEST_CASE("sink filters", "[sinks]") {
  SinkConfig s;
  s.min_severity = Severity::warning;
  auto inc = make_incident();
  CHECK(sink_accepts(s, inc, false));
  inc.severity = Severity::info;
  CHECK_FALSE(sink_accepts(s, inc, false));
  CHECK(sink_accepts(s, inc, true));  // a later revision of something already sent
  inc.severity = Severity::critical;
  s.rules = {"other-rule"};
  CHECK_FALSE(sink_accepts(s, inc, false));
  s.rules = {"other-rule", inc.rule};
  CHECK(sink_accepts(s, inc, false));
  inc.caused_by = "feedfacefeedface";
  CHECK_FALSE(sink_accepts(s, inc, false));  // explained by a root cause: does not page by default
  s.send_caused_by = true;
  CHECK(sink_accepts(s, inc, false));
  inc.status = IncidentStatus::resolved;
  s.send_resolved = false;
  CHECK_FALSE(sink_accepts(s, inc, true));
}

TEST_CASE("URLs and sink configuration", "[sinks]") {
  auto u = parse_url("https://am.example:9443/base?x=1");
  REQUIRE(u);
  CHECK(u->scheme == "https");
  CHECK(u->host == "am.example");
  CHECK(u->port == 9443);
  CHECK(u->target == "/base?x=1");
  u = parse_url("http://[::1]/");
  REQUIRE(u);
  CHECK(u->host == "::1");
  CHECK(u->port == 80);
  u = parse_url("HTTP://h");
  REQUIRE(u);
  CHECK(u->target == "/");
  std::string err;
  CHECK_FALSE(parse_url("ftp://h/", &err));
  CHECK_FALSE(parse_url("http://u:p@h/", &err));
  CHECK(err.find("credentials") != std::string::npos);
  CHECK_FALSE(parse_url("http://h:99999/"));
  CHECK_FALSE(parse_url("h:80"));

  auto s = sink_from_url("http://127.0.0.1:9093", WebhookFormat::alertmanager);
  REQUIRE(s);
  CHECK(s->name == "alertmanager");
  CHECK(s->format == WebhookFormat::alertmanager);
  CHECK(validate_sink(*s).empty());
  s = sink_from_url("http://hooks/x", WebhookFormat::json);
  REQUIRE(s);
  CHECK(s->name == "webhook");

  SinkConfig bad;
  bad.name = "bad/name";
  bad.url = "nope";
  bad.hmac_secret_file = "/nonexistent/secret";
  bad.headers = {{"X-Evil\r\n", "v"}};
  auto errors = validate_sink(bad);
  CHECK(errors.size() >= 4);
  CHECK(parse_webhook_format("alertmanager") == WebhookFormat::alertmanager);
  CHECK_FALSE(parse_webhook_format("xml"));
}

TEST_CASE("the Alertmanager endpoint is appended to the URL's path once", "[sinks]") {
  CHECK(alertmanager_alerts_target("/") == "/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/am/") == "/am/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/am/api/v2/alerts/") == "/am/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/?tenant=a") == "/api/v2/alerts?tenant=a");
}

TEST_CASE("the JSON-lines sink appends one object per revision", "[sinks]") {
  TempDir tmp;
  std::string path = tmp.path + "/incidents.out";
  {
    JsonLinesSink out(path);
    REQUIRE(out.open());
    CHECK(out.accepts(make_incident()));
    REQUIRE(out.deliver(make_incident("a", 1)));
    REQUIRE(out.deliver(make_incident("a", 2)));
    out.stop(Duration::zero());
  }
  std::istringstream lines(read_file(path));
  std::string line;
  std::vector<std::string> revisions;
  while (std::getline(lines, line)) revisions.push_back(nlohmann::json::parse(line)["id"].get<std::string>() + "#" +
                                                         std::to_string(nlohmann::json::parse(line)["revision"].get<int>()));
  CHECK(revisions == std::vector<std::string>{"a#1", "a#2"});
  JsonLinesSink bad(tmp.path + "/no/such/dir/out");
  auto opened = bad.open();
  REQUIRE_FALSE(opened);
  CHECK(opened.error().message.find("no/such/dir") != std::string::npos);
}

TEST_CASE("the JSON-lines sink ends a line a kill cut short before it appends", "[sinks]") {
  TempDir tmp;
  const std::string path = tmp.path + "/incidents.out";
  {
    JsonLinesSink out(path);
    REQUIRE(out.open());
    REQUIRE(out.deliver(make_incident("a", 1)));
  }
  const std::string whole = read_file(path);
  // The next revision's line as a SIGKILL mid-write leaves it: its first half, no newline.
  {
    std::ofstream cut(path, std::ios::app | std::ios::binary);
    cut << R"({"id":"a","revision":2,"title":"half of it)";
  }
  {
    JsonLinesSink out(path);
    REQUIRE(out.open());
    REQUIRE(out.deliver(make_incident("a", 2)));
    REQUIRE(out.deliver(make_incident("a", 3)));
  }
  {
    JsonLinesSink out(path);  // a file that ends in a newline is left as it is
    REQUIRE(out.open());
  }
  std::istringstream lines(read_file(path).substr(whole.size()));
  std::string line;
  std::vector<std::string> got;
  while (std::getline(lines, line)) got.push_back(line);
  REQUIRE(got.size() == 3);
  CHECK(got[0] == R"({"id":"a","revision":2,"title":"half of it)");
  CHECK(nlohmann::json::parse(got[1])["revision"] == 2);
  CHECK(nlohmann::json::parse(got[2])["revision"] == 3);
  CHECK(read_file(path).back() == '\n');
}

TEST_CASE("validation of the server and the delivery side reports every problem", "[sinks]") {
  ServerOptions server;
  server.listen = "nonsense";
  DispatcherOptions o;
  SinkConfig a;
  a.name = "x";
  a.url = "http://h/";
  o.redaction.patterns = {"("};
  auto errors = validate_server(server);
  for (auto& e : validate_delivery(o, {a, a}, "")) errors.push_back(e);
  CHECK(errors.size() == 4);  // listen, duplicate name, no state dir, pattern
}

TEST_CASE("URL credentials are masked in every message that names the URL", "[sinks]") {
  CHECK(mask_url_credentials("http://user:URLPASSWORD99@127.0.0.1:18099/hook") == "http://user:***@127.0.0.1:18099/hook");
  CHECK(mask_url_credentials("https://sometoken@h/p?q=a@b") == "https://***@h/p?q=a@b");
  CHECK(mask_url_credentials("http://h/a@b") == "http://h/a@b");  // an @ in the path is no credential
  CHECK(mask_url_credentials("not a url") == "not a url");
  std::string err;
  CHECK_FALSE(parse_url("http://user:URLPASSWORD99@127.0.0.1:18099/hook", &err));
  CHECK(err.find("URLPASSWORD99") == std::string::npos);
  CHECK(err.find("'http://user:***@127.0.0.1:18099/hook'") != std::string::npos);
  CHECK_FALSE(parse_url("ftp://u:SECRETFTP@h/", &err));  // refused for its scheme: masked all the same
  CHECK(err.find("SECRETFTP") == std::string::npos);
  SinkConfig s;
  s.name = "a";
  s.url = "http://user:URLPASSWORD99@127.0.0.1:18099/hook";
  auto problems = validate_sink(s);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("URLPASSWORD99") == std::string::npos);
  CHECK(problems[0].find("credentials in the URL are not supported") != std::string::npos);
  std::string from_flag;
  CHECK_FALSE(sink_from_url("http://u:FLAGSECRET@h/", WebhookFormat::json, {}, &from_flag));
  CHECK(from_flag.find("FLAGSECRET") == std::string::npos);
  // A long URL is echoed as a bounded excerpt.
  CHECK_FALSE(parse_url("gopher://" + std::string(100'000, 'h'), &err));
  CHECK(err.size() < 300);
}

TEST_CASE("the JSON-lines sink writes revisions redacted with the shared Redactor", "[sinks]") {
  TempDir tmp;
  std::string path = tmp.path + "/incidents.out";
  std::shared_ptr<const Redactor> redactor = Redactor::create(RedactionOptions{});
  REQUIRE(redactor);
  Incident inc = make_incident("a", 1);
  EvidenceLine line;
  line.text = "CUDA out of memory. password=hunter2 Authorization: Bearer abc.def.ghi sk-abcdefghijklmnopqrstuvwx";
  inc.evidence = {line};
  inc.summary = "seen with password=hunter2";
  {
    JsonLinesSink out(path, redactor);
    REQUIRE(out.open());
    REQUIRE(out.deliver(inc));
    out.stop(Duration::zero());
  }
  auto written = read_file(path);
  CHECK(written.find("hunter2") == std::string::npos);
  CHECK(written.find("abc.def.ghi") == std::string::npos);
  CHECK(written.find("sk-abcdefghijklmnopqrstuvwx") == std::string::npos);
  CHECK(written.find("[REDACTED]") != std::string::npos);
  CHECK(inc.summary == "seen with password=hunter2");  // the caller's revision is left as it was
}
