// sinks: what is kept on disk — the spool (durable, ordered, bounded, corrupt files dropped) and the incident store
// with its bounded revision history (persistence, compaction, the version 1 log).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/server.hpp"
#include "faultline/sinks.hpp"
#include "sinks_support.hpp"

using namespace faultline;
using namespace sinkstest;

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
  // A revision beyond 32 bits or not an integer is refused, not wrapped or converted.
  const std::string entry = R"(,"change":"first","severity":"warning","status":"firing"})";
  CHECK(RevisionHistory::from_json(R"({"revisions":[{"revision":7)" + entry + "]}"));
  CHECK(!RevisionHistory::from_json(R"({"revisions":[{"revision":4294967297)" + entry + "]}"));
  CHECK(!RevisionHistory::from_json(R"({"revisions":[{"revision":7.5)" + entry + "]}"));
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
