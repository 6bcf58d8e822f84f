// Checkpoint state as JSON (version 1). The format is a contract with checkpoints already on disk: add fields, do not
// change the meaning of those there.
#include "state_codec.hpp"

#include <nlohmann/json.hpp>

namespace faultline::correlate {

namespace {

using nlohmann::json;
constexpr int kStateVersion = 1;

std::int64_t ticks(Time t) { return t.time_since_epoch().count(); }
Time time_of(std::int64_t ticks) { return Time(Duration(ticks)); }

json evidence_json(const std::vector<EvidenceLine>& lines) {
  json a = json::array();
  for (const auto& e : lines) {
    a.push_back({{"s", e.stream}, {"l", e.line}, {"o", e.offset}, {"t", ticks(e.time)},
                 {"e", e.event}, {"x", sanitize_utf8(e.text)}, {"tr", e.truncated}});
  }
  return a;
}

std::vector<EvidenceLine> evidence_from(const json& a) {
  std::vector<EvidenceLine> out;
  for (const auto& j : a) {
    EvidenceLine e;
    e.stream = j.at("s").get<std::string>();
    e.line = j.at("l").get<std::uint64_t>();
    e.offset = j.at("o").get<std::uint64_t>();
    e.time = time_of(j.at("t").get<std::int64_t>());
    e.event = j.at("e").get<std::string>();
    e.text = j.at("x").get<std::string>();
    e.truncated = j.value("tr", false);
    out.push_back(std::move(e));
  }
  return out;
}

json fields_json(const Fields& f) {
  json a = json::array();
  for (const auto& [k, v] : f) a.push_back({sanitize_utf8(k), sanitize_utf8(v)});
  return a;
}

Fields fields_from(const json& a) {
  Fields f;
  for (const auto& p : a) f.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  return f;
}

json story_json(const Story& s, const Rule& r, const Streams& streams) {
  json steps = json::array();
  for (const auto& st : s.steps) {
    json times = json::array();
    for (auto t : st.times) times.push_back(ticks(t));
    steps.push_back({{"hits", st.hits}, {"times", times}, {"lines", evidence_json(st.lines)}});
  }
  json j = {{"rule", r.id},
            {"hash", r.content_hash},
            {"key", s.key},
            {"stream_name", streams.name_of(s.stream)},
            {"cursor", s.cursor},
            {"steps", steps},
            {"progress", ticks(s.progress_time)},
            {"seen", s.seen_events.low_mask()},
            {"fields", fields_json(s.fields)},
            {"context", evidence_json(s.context)},
            {"first", s.first_decisive},
            {"first_t", ticks(s.first_decisive_time)},
            {"raised", s.raised ? static_cast<int>(*s.raised) : -1},
            {"activity", ticks(s.last_activity)}};
  // Events past the 64 of "seen" (rules with that many events only), by index.
  if (auto high = s.seen_events.high_events(); !high.empty()) j["seen_more"] = high;
  return j;
}

void restore_story(const json& sj, const StateParts& parts) {
  const auto& set = parts.rules.rule_set();
  const Rule* r = set.find(sj.at("rule").get<std::string>());
  if (!r || r->content_hash != sj.at("hash").get<std::string>()) return;  // the rule changed: start over
  auto rule_index = static_cast<std::uint32_t>(r - set.rules.data());
  std::uint32_t stream = parts.streams.find_or_add(sj.value("stream_name", ""));
  Story s = make_story(*r, rule_index, sj.at("key").get<std::string>(), stream, parts.streams[stream].generation);
  s.cursor = sj.at("cursor").get<std::size_t>();
  const auto& steps = sj.at("steps");
  for (std::size_t i = 0; i < s.steps.size() && i < steps.size(); ++i) {
    s.steps[i].hits = steps[i].at("hits").get<std::uint32_t>();
    for (const auto& t : steps[i].at("times")) s.steps[i].times.push_back(time_of(t.get<std::int64_t>()));
    s.steps[i].lines = evidence_from(steps[i].at("lines"));
  }
  s.progress_time = time_of(sj.at("progress").get<std::int64_t>());
  s.seen_events = EventSet::from(sj.at("seen").get<std::uint64_t>(),
                                 sj.value("seen_more", std::vector<std::size_t>{}));
  s.fields = fields_from(sj.at("fields"));
  s.context = evidence_from(sj.at("context"));
  s.first_decisive = sj.at("first").get<std::string>();
  s.first_decisive_time = time_of(sj.value("first_t", std::int64_t{0}));
  int raised = sj.at("raised").get<int>();
  if (raised >= 0) s.raised = static_cast<Severity>(raised);
  s.last_activity = time_of(sj.at("activity").get<std::int64_t>());
  s.started = true;
  parts.stories.put(std::move(s));
}

void restore_open(const json& oj, const StateParts& parts) {
  auto inc = incident_from_json(oj.at("incident").dump());
  if (!inc) return;
  const auto& set = parts.rules.rule_set();
  const Rule* r = set.find(inc->rule);
  if (!r) return;
  auto rule_index = static_cast<std::uint32_t>(r - set.rules.data());
  OpenIncident oi;
  oi.incident = std::move(*inc);
  oi.rule = rule_index;
  oi.emitted = oj.value("emitted", true);
  oi.hold.held = oj.value("held", false);
  oi.hold.until_time = time_of(oj.value("until", std::int64_t{0}));
  oi.stream = parts.streams.find_or_add(oj.value("stream_name", ""));
  oi.hold.stream = oi.stream;
  parts.book.put(StoryKey{rule_index, oj.at("key").get<std::string>()}, std::move(oi));
}

}  // namespace

std::string encode_state(const StateParts& parts) {
  json j;
  j["version"] = kStateVersion;
  j["now"] = ticks(parts.clock.now());
  json stories = json::array();
  for (const auto& [k, s] : parts.stories.all()) {
    if (s.started) stories.push_back(story_json(s, parts.rules[s.rule], parts.streams));
  }
  j["stories"] = std::move(stories);
  json open = json::array();
  for (const auto& [k, oi] : parts.book.all()) {
    open.push_back({{"key", k.key},
                    {"incident", json::parse(to_json(oi.incident))},
                    {"emitted", oi.emitted},
                    {"held", oi.hold.held},
                    {"until", ticks(oi.hold.until_time)},
                    {"stream_name", parts.streams.name_of(oi.stream)}});
  }
  j["open"] = std::move(open);
  return j.dump();
}

Result<void> decode_state(std::string_view text, const StateParts& parts) {
  try {
    json j = json::parse(text);
    if (j.at("version").get<int>() > kStateVersion) {
      return Error{"state version " + std::to_string(j.at("version").get<int>()) + " is newer than this build"};
    }
    parts.clock.restore(time_of(j.value("now", std::int64_t{0})));
    for (const auto& sj : j.value("stories", json::array())) restore_story(sj, parts);
    for (const auto& oj : j.value("open", json::array())) restore_open(oj, parts);
    parts.book.rebuild_index();
    return {};
  } catch (const std::exception& e) {  // nlohmann-json: malformed text or a missing field
    return Error{e.what()};
  }
}

}  // namespace faultline::correlate
