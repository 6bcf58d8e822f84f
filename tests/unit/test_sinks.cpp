// sinks: payload formats (Standard Webhooks, Alertmanager), redaction, sink filters and configuration, the spool and
// the incident store. Delivery through the Dispatcher to loopback receivers is in test_sinks_delivery.cpp.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/server.hpp"
#include "faultline/sinks.hpp"

using namespace faultline;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/faultline-sinks-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

Incident make_incident(std::string id = "0123456789abcdef", std::uint32_t revision = 1,
                       Severity severity = Severity::critical) {
  Incident inc;
  inc.id = std::move(id);
  inc.revision = revision;
  inc.rule = "flashinfer-fmha-unsupported-arch";
  inc.title = "FlashInfer FMHA kernel does not support this GPU";
  inc.severity = severity;
  inc.stream = "ml/vllm-0/vllm";
  inc.stream_labels = {{"namespace", "ml"}, {"pod", "vllm-0"}, {"container", "vllm"}, {"node", "gpu-7"}};
  inc.first_seen = *parse_rfc3339("2026-03-01T10:00:00Z");
  inc.last_seen = *parse_rfc3339("2026-03-01T10:00:05Z");
  inc.summary = "FMHA has no kernel for sm_120";
  inc.remediation = "Use a build with sm_120 kernels";
  inc.references = {"https://example.com/runbook", "https://example.com/other"};
  inc.labels = {{"team", "inference"}, {"bad-label", "x"}};
  EvidenceLine e;
  e.stream = inc.stream;
  e.line = 10;
  e.text = "RuntimeError: FMHA unsupported architecture";
  e.event = "unsupported";
  inc.evidence.push_back(e);
  return inc;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

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

TEST_CASE("spool: durable, ordered, deduplicated, resumed", "[sinks]") {
  TempDir tmp;
  std::string dir = tmp.path + "/spool/s";
  {
    Spool sp(dir, 1 << 20, std::chrono::hours(1));
    REQUIRE(sp.open());
    CHECK(sp.put(make_incident("aaaa", 1), "body-1", 1000) == Spool::PutResult::stored);
    CHECK(sp.put(make_incident("aaaa", 2), "body-2", 2000) == Spool::PutResult::stored);
    CHECK(sp.put(make_incident("aaaa", 1), "body-1", 3000) == Spool::PutResult::duplicate);
    CHECK(sp.size() == 2);
    CHECK(sp.contains("aaaa-1"));
    CHECK(sp.oldest_ms() == 1000);
    auto f = sp.front();
    REQUIRE(f);
    CHECK(f->first.delivery_id == "aaaa-1");
    CHECK(f->second == "body-1");
    sp.remove(f->first);
    CHECK(sp.size() == 1);
  }
  // A leftover temporary and a garbage file: removed on open, the garbage counted.
  std::ofstream(dir + "/00000000000000000099.tmp") << "partial";
  std::ofstream(dir + "/00000000000000000098.json") << "{not json";
  {
    Spool sp(dir, 1 << 20, std::chrono::hours(1));
    SpoolDrops drops;
    REQUIRE(sp.open(&drops));
    CHECK(drops.corrupt.size() == 1);
    CHECK_FALSE(fs::exists(dir + "/00000000000000000099.tmp"));
    REQUIRE(sp.size() == 1);
    auto f = sp.front();
    REQUIRE(f);
    CHECK(f->first.delivery_id == "aaaa-2");
    CHECK(f->second == "body-2");
    // New deliveries go after the resumed ones.
    CHECK(sp.put(make_incident("bbbb", 1), "b", 5000) == Spool::PutResult::stored);
    CHECK(sp.front()->first.delivery_id == "aaaa-2");
    auto content = nlohmann::json::parse(read_file(sp.front()->first.path));
    CHECK(content["format"] == "faultline-spool");
    CHECK(content["version"] == 2);
    CHECK(content["deliveries"][0]["delivery_id"] == "aaaa-2");
  }
}

TEST_CASE("spool: a batch is one file, removed once every delivery in it is done", "[sinks]") {
  TempDir tmp;
  std::string dir = tmp.path + "/spool/s";
  auto files = [&] { return std::distance(fs::directory_iterator(dir), fs::directory_iterator{}); };
  // A file a version-1 spool left behind (one delivery per file) resumes first.
  fs::create_directories(dir);
  std::ofstream(dir + "/00000000000000000004.json")
      << R"({"format":"faultline-spool","version":1,"delivery_id":"old-1","incident_id":"old","revision":1,)"
      << R"("created_ms":500,"body":"old-body"})";
  Spool sp(dir, 1 << 20, std::chrono::hours(1));
  REQUIRE(sp.open());
  REQUIRE(sp.size() == 1);
  std::vector<SpoolItem> batch{{"cccc", 1, "c1"}, {"dddd", 1, "d1"}, {"cccc", 2, "c2"}, {"old", 1, "again"}};
  CHECK(sp.put_batch(batch, 1000) == Spool::PutResult::stored);
  CHECK(sp.size() == 4);  // the pending "old-1" is not taken twice
  CHECK(files() == 2);
  CHECK(sp.put_batch({{"cccc", 1, "c1"}}, 1100) == Spool::PutResult::duplicate);
  std::vector<std::string> order;
  for (int i = 0; i < 2; ++i) {
    auto f = sp.front();
    REQUIRE(f);
    order.push_back(f->first.delivery_id + "=" + f->second);
    sp.remove(f->first);
  }
  CHECK(order == std::vector<std::string>{"old-1=old-body", "cccc-1=c1"});
  CHECK(files() == 2);  // the batch still holds two deliveries; beside it, the one done
  {
    // A restart resumes what is left of the batch, not what was done before it.
    Spool again(dir, 1 << 20, std::chrono::hours(1));
    REQUIRE(again.open());
    CHECK(again.size() == 2);
    CHECK(again.front()->first.delivery_id == "dddd-1");
  }
  sp.remove(sp.front()->first);
  auto last = sp.front();
  REQUIRE(last);
  CHECK(last->first.delivery_id == "cccc-2");
  CHECK(last->second == "c2");
  sp.remove(last->first);
  CHECK(sp.empty());
  CHECK(files() == 0);
}

// Found by fuzz_spool: a field of the wrong type threw out of Spool::open (the daemon ended at start).
TEST_CASE("spool: a file with a field of the wrong type is dropped as corrupt", "[sinks]") {
  TempDir tmp;
  std::string dir = tmp.path + "/spool/s";
  fs::create_directories(dir);
  std::ofstream(dir + "/00000000000000000001.json")
      << R"({"format":"faultline-spool","version":1,"delivery_id":"d-1","revision":"three","body":"{}"})";
  Spool sp(dir, 1 << 20, std::chrono::hours(1));
  SpoolDrops drops;
  REQUIRE(sp.open(&drops));
  CHECK(sp.size() == 0);
  CHECK(drops.corrupt.size() == 1);
}

TEST_CASE("spool: a number that is no integer in range makes the file corrupt, not undefined behaviour", "[sinks]") {
  // A long fuzz run found these: a float such as 1.7e70 where a count belongs was converted to an integer.
  TempDir tmp;
  std::string dir = tmp.path + "/spool/s";
  fs::create_directories(dir);
  const char* files[] = {
      R"({"format":"faultline-spool","version":1,"delivery_id":"d-1","revision":1,"created_ms":1764583208888888888888888888888888888888888888888888880000,"body":"{}"})",
      R"({"format":"faultline-spool","version":1,"delivery_id":"d-2","revision":-1,"created_ms":1,"body":"{}"})",
      R"({"format":"faultline-spool","version":1,"delivery_id":"d-3","revision":1e300,"created_ms":1,"body":"{}"})",
      R"({"format":"faultline-spool","version":1e300,"delivery_id":"d-4","revision":1,"created_ms":1,"body":"{}"})",
  };
  int seq = 1;
  for (const char* text : files) std::ofstream(dir + "/0000000000000000000" + std::to_string(seq++) + ".json") << text;
  std::ofstream(dir + "/00000000000000000009.json")
      << R"({"format":"faultline-spool","version":1,"delivery_id":"d-9","revision":2,"created_ms":5,"body":"{}"})";
  Spool sp(dir, 1 << 20, std::chrono::hours(1));
  SpoolDrops drops;
  REQUIRE(sp.open(&drops));
  CHECK(drops.corrupt.size() == 4);
  REQUIRE(sp.size() == 1);
  CHECK(sp.contains("d-9"));
}

TEST_CASE("spool bounds: bytes and age", "[sinks]") {
  TempDir tmp;
  Spool sp(tmp.path + "/s", 4096, std::chrono::seconds(60));
  REQUIRE(sp.open());
  std::string body(1500, 'x');
  SpoolDrops drops;
  for (int i = 0; i < 5; ++i) sp.put(make_incident("id" + std::to_string(i)), body, 1000 + i, &drops);
  CHECK(sp.bytes() <= 4096);
  CHECK(!drops.spool_full.empty());
  CHECK(drops.spool_full.front().delivery_id == "id0-1");  // the oldest go first
  CHECK(sp.contains("id4-1"));
  SpoolDrops aged;
  sp.expire(1000 + 4 + 60 * 1000 + 1 - 1, &aged);  // id4 (created at 1004) is exactly 60 s old: kept
  CHECK(sp.contains("id4-1"));
  sp.expire(1004 + 60 * 1000 + 1, &aged);
  CHECK(sp.empty());
  CHECK(!aged.max_age.empty());
}

TEST_CASE("incident store: dedup, filters, eviction, persistence", "[sinks]") {
  TempDir tmp;
  std::string log = tmp.path + "/incidents.jsonl";
  {
    IncidentStore st(3, log);
    REQUIRE(st.open());
    CHECK(st.accept(make_incident("a", 1)) == IncidentStore::Accept::added);
    CHECK(st.accept(make_incident("a", 1)) == IncidentStore::Accept::duplicate);
    CHECK(st.accept(make_incident("a", 2)) == IncidentStore::Accept::updated);
    CHECK(st.accept(make_incident("a", 1)) == IncidentStore::Accept::duplicate);  // older
    auto b = make_incident("b", 1, Severity::warning);
    b.rule = "other";
    b.status = IncidentStatus::resolved;
    st.accept(b);
    st.accept(make_incident("c", 1));
    CHECK(st.size() == 3);
    CHECK(st.find("a")->incident.revision == 2);

    IncidentQuery q;
    CHECK(st.query(q).front()->incident.id == "c");  // newest first
    q.rules = {"other"};
    REQUIRE(st.query(q).size() == 1);
    q = {};
    q.severities = {Severity::critical};
    CHECK(st.query(q).size() == 2);
    q = {};
    q.status = IncidentStatus::firing;
    CHECK(st.query(q).size() == 2);
    q = {};
    q.since = *parse_rfc3339("2026-03-01T10:00:06Z");
    CHECK(st.query(q).empty());
    q = {};
    q.limit = 1;
    CHECK(st.query(q).size() == 1);
    CHECK(st.firing().size() == 2);

    st.accept(make_incident("d", 1));  // over capacity: the resolved one goes first
    CHECK(st.size() == 3);
    CHECK(st.find("b") == nullptr);
  }
  IncidentStore again(3, log);
  REQUIRE(again.open());
  CHECK(again.size() == 3);
  CHECK(again.find("a")->incident.revision == 2);
  CHECK(again.accept(make_incident("a", 2)) == IncidentStore::Accept::duplicate);  // survives restart
}

namespace {
Incident revision_of(std::string id, std::uint32_t revision, Severity severity, IncidentStatus status,
                     std::uint32_t count) {
  auto inc = make_incident(std::move(id), revision, severity);
  inc.status = status;
  inc.count = count;
  inc.last_seen = inc.first_seen + std::chrono::seconds(revision);
  return inc;
}
std::vector<std::uint32_t> revisions(const RevisionHistory& h) {
  std::vector<std::uint32_t> out;
  for (const auto& e : h.entries()) out.push_back(e.revision);
  return out;
}
}  // namespace

TEST_CASE("revision history: the first, every change, the last count updates; bounded", "[sinks]") {
  RevisionHistory h;
  std::uint32_t rev = 1;
  CHECK(h.record(revision_of("a", rev, Severity::warning, IncidentStatus::firing, 1)));
  CHECK(!h.record(revision_of("a", rev, Severity::warning, IncidentStatus::firing, 1)));  // not newer
  for (std::uint32_t n = 2; n <= 20; ++n)
    h.record(revision_of("a", ++rev, Severity::warning, IncidentStatus::firing, n));
  h.record(revision_of("a", ++rev, Severity::critical, IncidentStatus::firing, 20));  // escalation: revision 21
  for (std::uint32_t n = 21; n <= 30; ++n)
    h.record(revision_of("a", ++rev, Severity::critical, IncidentStatus::firing, n));
  h.record(revision_of("a", ++rev, Severity::critical, IncidentStatus::resolved, 30));  // revision 32
  const auto& e = h.entries();
  REQUIRE(e.size() == 1 + 1 + RevisionHistory::kMaxCounts + 1);
  CHECK(e.front().revision == 1);
  CHECK(e.front().change == RevisionChange::first);
  CHECK(e[1].revision == 21);
  CHECK(e[1].change == RevisionChange::severity);
  CHECK(e[1].severity == Severity::critical);
  CHECK(e[2].revision == 32 - RevisionHistory::kMaxCounts);  // only the last count updates
  CHECK(e.back().revision == 32);
  CHECK(e.back().change == RevisionChange::status);
  CHECK(h.omitted() == 32 - e.size());

  // A long run of status changes: bounded in entries and bytes, the first and the newest kept.
  for (int i = 0; i < 500; ++i) {
    auto status = i % 2 ? IncidentStatus::resolved : IncidentStatus::firing;
    h.record(revision_of("a", ++rev, Severity::critical, status, 30));
  }
  CHECK(h.entries().size() <= RevisionHistory::kMaxEntries);
  CHECK(h.bytes() <= RevisionHistory::kMaxBytes);
  CHECK(h.to_json().size() <= RevisionHistory::kMaxBytes);
  CHECK(h.entries().front().revision == 1);
  CHECK(h.entries().back().revision == rev);
  CHECK(h.omitted() == rev - h.entries().size());

  auto again = RevisionHistory::from_json(h.to_json());
  REQUIRE(again);
  CHECK(revisions(*again) == revisions(h));
  CHECK(again->omitted() == h.omitted());
  std::string error;
  CHECK(!RevisionHistory::from_json(R"({"revisions":[{"revision":2},{"revision":1}]})", &error));
  CHECK(!error.empty());
  CHECK(!RevisionHistory::from_json("{\"revisions\":[", &error));
}

TEST_CASE("incident store: the history survives a restart and compaction", "[sinks]") {
  TempDir tmp;
  std::string log = tmp.path + "/incidents.jsonl";
  {
    IncidentStore st(10, log);
    REQUIRE(st.open());
    st.accept(revision_of("a", 1, Severity::warning, IncidentStatus::firing, 1));
    // Held in memory only until persist(): the sinks' spools did not have them durable yet.
    st.accept(revision_of("a", 2, Severity::critical, IncidentStatus::firing, 1), false);
    st.accept(revision_of("a", 3, Severity::critical, IncidentStatus::firing, 2), false);
    st.persist("a");
    st.accept(revision_of("a", 4, Severity::critical, IncidentStatus::resolved, 2));
    st.accept(revision_of("b", 1, Severity::info, IncidentStatus::firing, 1));
    st.accept(revision_of("c", 1, Severity::info, IncidentStatus::firing, 1), false);  // never persisted
    REQUIRE(st.find("a")->history.entries().size() == 4);
  }
  for (int round = 0; round < 2; ++round) {  // the second open reads what the first one's compaction wrote
    INFO("round " << round);
    IncidentStore st(10, log);
    REQUIRE(st.open());
    REQUIRE(st.find("a"));
    const auto& h = st.find("a")->history;
    CHECK(revisions(h) == std::vector<std::uint32_t>{1, 2, 3, 4});
    CHECK(h.entries()[1].change == RevisionChange::severity);
    CHECK(h.entries()[2].change == RevisionChange::count);
    CHECK(h.entries()[3].change == RevisionChange::status);
    CHECK(revisions(st.find("b")->history) == std::vector<std::uint32_t>{1});
    CHECK(st.find("c") == nullptr);
    CHECK(st.accept(revision_of("a", 4, Severity::critical, IncidentStatus::resolved, 2)) ==
          IncidentStore::Accept::duplicate);
  }
  CHECK(read_file(log).rfind("{\"faultline_incident_log\":2}\n", 0) == 0);
}

TEST_CASE("incident store: a version 1 log (revisions only) is read, its revisions make the history", "[sinks]") {
  TempDir tmp;
  std::string log = tmp.path + "/incidents.jsonl";
  {
    std::ofstream out(log);
    out << to_json(revision_of("a", 1, Severity::warning, IncidentStatus::firing, 1)) << "\n"
        << to_json(revision_of("b", 1, Severity::info, IncidentStatus::firing, 1)) << "\n"
        << to_json(revision_of("a", 2, Severity::critical, IncidentStatus::firing, 1)) << "\n"
        << to_json(revision_of("a", 5, Severity::critical, IncidentStatus::resolved, 3)) << "\n"
        << "{\"id\":\"torn";  // a crash mid-write
  }
  IncidentStore st(10, log);
  REQUIRE(st.open());
  CHECK(st.size() == 2);
  const auto& h = st.find("a")->history;
  CHECK(revisions(h) == std::vector<std::uint32_t>{1, 2, 5});
  CHECK(h.entries()[1].change == RevisionChange::severity);
  CHECK(h.entries()[2].change == RevisionChange::status);
  CHECK(st.find("a")->incident.revision == 5);
  auto text = read_file(log);  // rewritten in version 2, the history kept
  CHECK(text.rfind("{\"faultline_incident_log\":2}\n", 0) == 0);
  CHECK(text.find("{\"history_of\":\"a\"") != std::string::npos);
}

TEST_CASE("the Alertmanager endpoint is appended to the URL's path once", "[sinks]") {
  CHECK(alertmanager_alerts_target("/") == "/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/am/") == "/am/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/am/api/v2/alerts/") == "/am/api/v2/alerts");
  CHECK(alertmanager_alerts_target("/?tenant=a") == "/api/v2/alerts?tenant=a");
}

TEST_CASE("the store counts firing incidents per rule and severity as they change", "[sinks]") {
  IncidentStore st(2);
  auto a = make_incident("a", 1);
  st.accept(a);
  st.accept(make_incident("b", 1));
  using Key = std::pair<std::string, Severity>;
  auto count = [&](const Key& k) -> std::size_t {
    for (const auto& [key, n] : st.firing_counts())
      if (key == k) return n;
    return 999;
  };
  Key crit{a.rule, Severity::critical};
  CHECK(count(crit) == 2);
  a.revision = 2;
  a.status = IncidentStatus::resolved;
  st.accept(a);
  CHECK(count(crit) == 1);  // resolved: no longer firing, the series stays at its count
  st.accept(make_incident("c", 1, Severity::warning));  // over capacity: the resolved one goes, b stays
  CHECK(count(crit) == 1);
  CHECK(count({a.rule, Severity::warning}) == 1);
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
