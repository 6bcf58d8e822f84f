// The incident JSON contract.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "faultline/incident.hpp"

using namespace faultline;

namespace {
Incident sample() {
  Incident in;
  in.id = make_incident_id("fmha", "ns/pod/c", "0@123:4");
  in.revision = 3;
  in.rule = "fmha";
  in.title = "FMHA";
  in.severity = Severity::critical;
  in.stream = "ns/pod/c";
  in.stream_labels = {{"namespace", "ns"}, {"pod", "pod"}};
  in.first_seen = Time(std::chrono::seconds(1764410000));
  in.last_seen = in.first_seen + std::chrono::seconds(5);
  in.count = 2;
  in.fields = {{"arch", "sm_120"}};
  in.evidence.push_back({"ns/pod/c", 4, 123, in.first_seen, "rejected", std::string("bad \xff\xfe bytes"), false});
  in.summary = "s";
  in.remediation = "r";
  in.references = {"https://example.com"};
  in.caused_by = "abc";
  in.caused_by_rule = "root";
  return in;
}
}  // namespace

TEST_CASE("incident JSON has the documented fields and round-trips", "[incident]") {
  Incident in = sample();
  std::string text = to_json(in);
  auto j = nlohmann::json::parse(text);  // throws on invalid UTF-8
  for (const char* key : {"id", "revision", "status", "rule", "title", "severity", "stream", "first_seen", "last_seen",
                          "count", "fields", "evidence", "summary", "remediation", "caused_by"}) {
    CHECK(j.contains(key));
  }
  CHECK(j["status"] == "firing");
  CHECK(j["first_seen"] == "2025-11-29T09:53:20.000Z");
  CHECK(j["caused_by"]["rule"] == "root");
  CHECK(j["evidence"][0]["text"] == "bad \xef\xbf\xbd\xef\xbf\xbd bytes");
  auto back = incident_from_json(text);
  REQUIRE(back);
  CHECK(back->id == in.id);
  CHECK(back->revision == 3);
  CHECK(back->count == 2);
  CHECK(back->severity == Severity::critical);
  CHECK(back->first_seen == in.first_seen);
  CHECK(*back->caused_by == "abc");
  CHECK(to_json(*back) == text);
}

TEST_CASE("incident ids are stable and depend on every input", "[incident]") {
  CHECK(make_incident_id("a", "b", "c") == make_incident_id("a", "b", "c"));
  CHECK(make_incident_id("a", "b", "c").size() == 16);
  CHECK(make_incident_id("a", "b", "c") != make_incident_id("a", "bc", ""));
  CHECK(make_incident_id("a", "b", "c") != make_incident_id("a", "b", "d"));
}

TEST_CASE("malformed incident JSON is an error, not a crash", "[incident]") {
  std::string error;
  CHECK_FALSE(incident_from_json("{\"id\": 1}", &error));
  CHECK(!error.empty());
  CHECK_FALSE(incident_from_json("not json"));
}

TEST_CASE("an incident whose counts are floats, negative or out of range is an error, not a conversion", "[incident]") {
  // Converting 1.1e25 to an unsigned integer is undefined behaviour: a saved incident edited or torn that way must be
  // refused with a reason, as any other malformed one.
  const std::string good = to_json(sample());
  REQUIRE(incident_from_json(good));
  auto edited = [&](auto&& edit) {
    auto j = nlohmann::json::parse(good);
    edit(j);
    return j.dump();
  };
  std::string error;
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j["evidence"][0]["line"] = 1.11111e25; }), &error));
  CHECK(error.find("\"line\"") != std::string::npos);
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j["evidence"][0]["offset"] = -1; })));
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j["count"] = 2.5; })));
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j["count"] = 4294967296ull; })));
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j["revision"] = 1e300; })));
  CHECK_FALSE(incident_from_json(edited([](auto& j) { j.erase("revision"); })));
  // Absent counts keep their defaults.
  auto back = incident_from_json(edited([](auto& j) {
    j.erase("count");
    j["evidence"][0].erase("line");
  }));
  REQUIRE(back);
  CHECK(back->count == 1);
  CHECK(back->evidence[0].line == 0);
}

TEST_CASE("text rendering shows what on-call needs", "[incident]") {
  std::string text = to_text(sample());
  CHECK(text.find("[CRITICAL] FMHA") != std::string::npos);
  CHECK(text.find("caused by: root") != std::string::npos);
  CHECK(text.find("remediation: r") != std::string::npos);
  CHECK(text.find("▶ 4:") != std::string::npos);
}
