// The incident JSON contract.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

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

namespace {
// The incident's JSON as a JSON tree dumped by nlohmann (to_json's own way before it wrote the text directly): the
// reference to_json must equal byte for byte on valid UTF-8.
std::string tree_json(const Incident& in) {
  using nlohmann::json;
  auto fields = [](const Fields& f) {
    json out = json::object();
    for (const auto& [k, v] : f) out[k] = v;
    return out;
  };
  json j;
  j["id"] = in.id;
  j["revision"] = in.revision;
  j["status"] = std::string(to_string(in.status));
  j["rule"] = in.rule;
  j["title"] = in.title;
  j["severity"] = std::string(to_string(in.severity));
  j["stream"] = in.stream;
  j["stream_labels"] = fields(in.stream_labels);
  j["first_seen"] = format_time(in.first_seen);
  j["last_seen"] = format_time(in.last_seen);
  j["count"] = in.count;
  j["fields"] = fields(in.fields);
  json ev = json::array();
  for (const auto& e : in.evidence) {
    json line;
    line["stream"] = e.stream;
    line["line"] = e.line;
    line["offset"] = e.offset;
    line["time"] = format_time(e.time);
    line["event"] = e.event;
    line["text"] = e.text.substr(0, kMaxEvidenceText);
    if (e.truncated || e.text.size() > kMaxEvidenceText) line["truncated"] = true;
    ev.push_back(std::move(line));
  }
  j["evidence"] = std::move(ev);
  j["summary"] = in.summary;
  j["remediation"] = in.remediation;
  j["references"] = in.references;
  j["labels"] = fields(in.labels);
  j["caused_by"] = in.caused_by ? json{{"id", *in.caused_by}, {"rule", in.caused_by_rule}} : json(nullptr);
  if (!in.fingerprint.empty()) {
    j["fingerprint"] = in.fingerprint;
    j["template"] = in.message_template;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}
}  // namespace

TEST_CASE("incident JSON is the tree's dump byte for byte, and valid UTF-8 whatever the text", "[incident]") {
  std::mt19937 rng(16);
  // Pieces that exercise every escape and the byte order of keys: quotes, backslashes, every control character, DEL,
  // two-, three- and four-byte UTF-8, and (for the second half) invalid bytes.
  const std::vector<std::string> valid = {"a",  "plain text", "\"", "\\", "/",      "\x7f", "\xc3\xa9", "\xe2\x96\xb6",
                                          "\xf0\x9f\x98\x80", "\t", "\n",        "\r",   "\b",       "\f"};
  const std::vector<std::string> invalid = {"\xff", "\xc3", "\xe2\x96", "\xed\xa0\x80", "\x80"};
  auto text = [&](bool with_invalid, std::size_t max_pieces) {
    std::string out;
    const std::size_t n = rng() % (max_pieces + 1);
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned pick = rng() % 40;
      if (pick < valid.size()) out += valid[pick];
      else if (pick < valid.size() + 10) out += static_cast<char>(rng() % 0x20);  // any control character
      else if (with_invalid && pick < valid.size() + 12) out += invalid[rng() % invalid.size()];
      else out += "word";
    }
    return out;
  };
  auto fields = [&](bool with_invalid) {
    Fields f;
    const std::size_t n = rng() % 4;
    const std::vector<std::string> names = {"pod", "namespace", "arch", "a", "zz", "Pod", "node_name"};
    for (std::size_t i = 0; i < n; ++i) f.emplace_back(names[rng() % names.size()], text(with_invalid, 3));  // repeats too
    return f;
  };
  for (int round = 0; round < 3000; ++round) {
    const bool with_invalid = round >= 1500;
    Incident in;
    in.id = make_incident_id(text(false, 2), "k", std::to_string(round));
    in.revision = static_cast<std::uint32_t>(rng());
    in.status = rng() % 2 ? IncidentStatus::firing : IncidentStatus::resolved;
    in.rule = "rule-" + std::to_string(round % 7);
    in.title = text(with_invalid, 4);
    in.severity = static_cast<Severity>(rng() % 3);
    in.stream = text(with_invalid, 2);
    in.stream_labels = fields(with_invalid);
    in.first_seen = Time(std::chrono::nanoseconds(static_cast<std::int64_t>(rng()) * 1'000'003));
    in.last_seen = in.first_seen + std::chrono::milliseconds(rng() % 100000);
    in.count = static_cast<std::uint32_t>(rng());
    in.fields = fields(with_invalid);
    for (std::size_t e = rng() % 4; e > 0; --e) {
      EvidenceLine line{text(with_invalid, 2), (std::uint64_t{rng()} << 32) | rng(), rng(), in.first_seen,
                        rng() % 2 ? "event" : "", text(with_invalid, 8), rng() % 5 == 0};
      // Past the cap, sometimes cut inside a UTF-8 sequence.
      if (rng() % 5 == 0) line.text = std::string(kMaxEvidenceText - 1 - rng() % 2, 'x') + "\xe2\x96\xb6" + line.text;
      in.evidence.push_back(std::move(line));
    }
    in.summary = text(with_invalid, 6);
    in.remediation = text(with_invalid, 6);
    for (std::size_t r = rng() % 3; r > 0; --r) in.references.push_back("https://example.com/" + text(false, 2));
    in.labels = fields(with_invalid);
    if (rng() % 2) {
      in.caused_by = make_incident_id("root", "k", std::to_string(round));
      in.caused_by_rule = "root-rule";
    }
    if (rng() % 3 == 0) {
      in.fingerprint = "0123456789abcdef";
      in.message_template = text(with_invalid, 4);
    }
    const std::string direct = to_json(in);
    INFO("round " << round << ": " << direct);
    if (!with_invalid) {
      REQUIRE(direct == tree_json(in));
    } else {
      REQUIRE(is_valid_utf8(direct));
      REQUIRE_NOTHROW(nlohmann::json::parse(direct));
    }
    auto back = incident_from_json(direct);
    REQUIRE(back);
    REQUIRE(to_json(*back) == direct);
  }
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
