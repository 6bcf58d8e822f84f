// Checkpoint state as JSON (version 2: one clock per stream and per node; version 1 had one clock for all, and is
// still read). The format is a contract with checkpoints already on disk: add fields, do not change the meaning of
// those there.
#include "state_codec.hpp"

#include <limits>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "faultline/json_integer.hpp"

namespace faultline::correlate {

namespace {

using nlohmann::json;
constexpr int kStateVersion = 2;

// A numeric field that must be an integer in T's range (1e300 or -1 where a count belongs is an error, not UB).
template <class T>
T integer(const json& j, const char* what) {
  if (auto v = json_integer<T>(j)) return *v;
  throw std::runtime_error(std::string(what) + (j.is_number_integer() ? " is out of range" : " is not an integer"));
}

template <class T>
T integer_or(const json& obj, const char* key, T fallback) {
  auto it = obj.find(key);
  return it == obj.end() ? fallback : integer<T>(*it, key);
}

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
    e.line = integer<std::uint64_t>(j.at("l"), "l");
    e.offset = integer<std::uint64_t>(j.at("o"), "o");
    e.time = time_of(integer<std::int64_t>(j.at("t"), "t"));
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
  s.cursor = integer<std::size_t>(sj.at("cursor"), "cursor");
  const auto& steps = sj.at("steps");
  for (std::size_t i = 0; i < s.steps.size() && i < steps.size(); ++i) {
    s.steps[i].hits = integer<std::uint32_t>(steps[i].at("hits"), "hits");
    for (const auto& t : steps[i].at("times")) s.steps[i].times.push_back(time_of(integer<std::int64_t>(t, "times")));
    s.steps[i].lines = evidence_from(steps[i].at("lines"));
  }
  s.progress_time = time_of(integer<std::int64_t>(sj.at("progress"), "progress"));
  std::vector<std::size_t> more;
  if (auto it = sj.find("seen_more"); it != sj.end()) {
    for (const auto& e : *it) more.push_back(integer<std::uint32_t>(e, "seen_more"));
  }
  s.seen_events = EventSet::from(integer<std::uint64_t>(sj.at("seen"), "seen"), more);
  s.fields = fields_from(sj.at("fields"));
  s.context = evidence_from(sj.at("context"));
  s.first_decisive = sj.at("first").get<std::string>();
  s.first_decisive_time = time_of(integer_or<std::int64_t>(sj, "first_t", 0));
  int raised = integer<int>(sj.at("raised"), "raised");
  if (raised > static_cast<int>(Severity::critical)) throw std::runtime_error("raised is not a severity");
  if (raised >= 0) s.raised = static_cast<Severity>(raised);
  s.last_activity = time_of(integer<std::int64_t>(sj.at("activity"), "activity"));
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
  oi.hold.until_time = time_of(integer_or<std::int64_t>(oj, "until", 0));
  oi.stream = parts.streams.find_or_add(oj.value("stream_name", ""));
  oi.hold.stream = oi.stream;
  parts.book.put(StoryKey{rule_index, oj.at("key").get<std::string>()}, std::move(oi));
}

}  // namespace

std::string encode_state(const StateParts& parts) {
  json j;
  j["version"] = kStateVersion;
  j["now"] = ticks(parts.streams.latest());  // the one clock of version 1
  // An ended stream's clock is kept only while an open incident or a story still runs on it.
  std::vector<bool> in_use(parts.streams.size(), false);
  for (const auto& [k, oi] : parts.book.all()) {
    if (oi.stream < in_use.size()) in_use[oi.stream] = true;
  }
  for (const auto& [k, s] : parts.stories.all()) {
    if (s.stream < in_use.size()) in_use[s.stream] = true;
  }
  json clocks = json::array();
  for (std::uint32_t i = 0; i < parts.streams.size(); ++i) {
    const StreamState& st = parts.streams.at(i);
    if (!st.clock.known() || st.id.name.empty() || (st.ended && !in_use[i])) continue;
    clocks.push_back({{"s", st.id.name}, {"now", ticks(st.clock.now())}, {"log", ticks(st.clock.log_now())},
                      {"lt", st.clock.log_time_seen()}});
  }
  j["clocks"] = std::move(clocks);
  json nodes = json::array();
  for (const auto& [node, now] : parts.streams.node_clocks()) nodes.push_back({sanitize_utf8(node), ticks(now)});
  j["nodes"] = std::move(nodes);
  json stories = json::array();
  for (const auto& [k, s] : parts.stories.all()) {
    if (s.started) stories.push_back(story_json(s, parts.rules[s.rule], parts.streams));
  }
  j["stories"] = std::move(stories);
  // The open incidents go in as the JSON they already are (to_json): parsed into the tree and dumped again, they were
  // most of a checkpoint's cost while many were open.
  std::string out = j.dump();
  out.pop_back();  // the object's closing brace: "open" follows the keys above
  out += ",\"open\":[";
  bool first = true;
  for (const auto& [k, oi] : parts.book.all()) {
    if (!first) out += ',';
    first = false;
    out += "{\"key\":" + json(k.key).dump();
    out += ",\"incident\":" + to_json(oi.incident);
    out += ",\"emitted\":" + json(oi.emitted).dump();
    out += ",\"held\":" + json(oi.hold.held).dump();
    out += ",\"until\":" + json(ticks(oi.hold.until_time)).dump();
    out += ",\"stream_name\":" + json(parts.streams.name_of(oi.stream)).dump() + "}";
  }
  out += "]}";
  return out;
}

Result<void> decode_state(std::string_view text, const StateParts& parts) {
  try {
    json j = json::parse(text);
    const int version = integer<int>(j.at("version"), "version");
    if (version > kStateVersion) {
      return Error{"state version " + std::to_string(version) + " is newer than this build"};
    }
    for (const auto& sj : j.value("stories", json::array())) restore_story(sj, parts);
    for (const auto& oj : j.value("open", json::array())) restore_open(oj, parts);
    // A clock beyond the bound the lines themselves are held to is not taken back (a version 1 state may hold the
    // time of one far-future line).
    const Time limit = parts.wall_now + kFutureBound;
    if (version >= 2) {
      for (const auto& c : j.value("clocks", json::array())) {
        const Time now = time_of(integer<std::int64_t>(c.at("now"), "now"));
        const Time log_now = time_of(integer<std::int64_t>(c.at("log"), "log"));
        if (now > limit || log_now > limit) continue;
        parts.streams.restore_clock(c.at("s").get<std::string>(), now, log_now, c.value("lt", true));
      }
      for (const auto& n : j.value("nodes", json::array())) {
        const Time now = time_of(integer<std::int64_t>(n.at(1), "nodes"));
        if (now <= limit) parts.streams.restore_node(n.at(0).get<std::string>(), now);
      }
    } else if (auto it = j.find("now"); it != j.end()) {
      // Version 1: one clock for all; each stream the state names starts from it.
      const Time now = time_of(integer<std::int64_t>(*it, "now"));
      if (now <= limit) {
        for (std::uint32_t i = 0; i < parts.streams.size(); ++i) {
          const std::string name = parts.streams.name_of(i);
          if (!name.empty() && !parts.streams.at(i).clock.known()) parts.streams.restore_clock(name, now, now, true);
        }
      }
    }
    parts.book.rebuild_index();
    return {};
  } catch (const std::exception& e) {  // nlohmann-json: malformed text or a missing field; a field of the wrong kind
    return Error{std::string("correlator state: ") + e.what()};
  }
}

}  // namespace faultline::correlate
