// The step machine: what one hit or one passing absence does to a story.
#include "story.hpp"

#include <algorithm>

#include "incident_book.hpp"

namespace faultline::correlate {

namespace {

bool step_has(const Step& st, std::string_view event) {
  return std::find(st.events.begin(), st.events.end(), event) != st.events.end();
}

bool tolerant(const Rule& r) { return r.tolerance.lines > 0 || r.tolerance.time.count() > 0; }

}  // namespace

void ActiveRules::index_roles() {
  roles_.clear();
  for (const Rule& r : rules_->rule_set().rules) {
    auto& roles = roles_.emplace_back(r.events.size());
    for (std::size_t e = 0; e < r.events.size(); ++e) {
      const std::string& name = r.events[e].name;
      EventRole& role = roles[e];
      for (std::size_t i = 0; i < r.sequence.size(); ++i) {
        const Step& st = r.sequence[i];
        if (!step_has(st, name)) continue;
        if (st.optional) role.optional_steps.push_back(static_cast<std::uint32_t>(i));
        else if (!st.absent_for) role.later_required = true;
      }
      role.resolves = std::find(r.lifetime.resolve_on.begin(), r.lifetime.resolve_on.end(), name) !=
                      r.lifetime.resolve_on.end();
      role.resets = std::find(r.reset_on.begin(), r.reset_on.end(), name) != r.reset_on.end();
    }
  }
}

std::uint64_t EventSet::low_mask() const {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < bits_.size() && i < 64; ++i) {
    if (bits_[i]) mask |= 1ull << i;
  }
  return mask;
}

std::vector<std::size_t> EventSet::high_events() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 64; i < bits_.size(); ++i) {
    if (bits_[i]) out.push_back(i);
  }
  return out;
}

EventSet EventSet::from(std::uint64_t low_mask, const std::vector<std::size_t>& high_events) {
  EventSet set;
  for (std::size_t i = 0; i < 64; ++i) {
    if (low_mask & (1ull << i)) set.insert(i);
  }
  for (auto i : high_events) set.insert(i);
  return set;
}

std::vector<EvidenceLine> Story::evidence() const {
  std::vector<EvidenceLine> all = context;
  for (const auto& st : steps) all.insert(all.end(), st.lines.begin(), st.lines.end());
  return all;
}

Story make_story(const Rule& r, std::uint32_t rule_index, std::string key, std::uint32_t stream,
                 std::uint64_t generation) {
  Story s;
  s.rule = rule_index;
  s.key = std::move(key);
  s.restart(r, stream, generation);
  return s;
}

void Story::restart(const Rule& r, std::uint32_t stream_index, std::uint64_t stream_generation) {
  stream = stream_index;
  generation = stream_generation;
  steps.resize(r.sequence.size());
  for (auto& st : steps) {
    st.hits = 0;
    st.times.clear();
    st.lines.clear();
  }
  cursor = first_required(r, 0);
  progress_time = Time{};
  started = false;
  seen_events.clear();
  fields.clear();
  context.clear();
  recent.clear();
  first_decisive.clear();
  first_decisive_time = Time{};
  raised.reset();
  last_activity = Time{};
}

std::size_t first_required(const Rule& r, std::size_t from) {
  while (from < r.sequence.size() && r.sequence[from].optional) ++from;
  return from;
}

bool missing_optional(const Story& s, const Rule& r) {
  std::size_t last_required = 0;
  for (std::size_t i = 0; i < r.sequence.size(); ++i) {
    if (!r.sequence[i].optional) last_required = i;
  }
  for (std::size_t i = 0; i < last_required; ++i) {
    if (r.sequence[i].optional && s.steps[i].hits == 0) return true;
  }
  return false;
}

std::optional<Duration> absence_awaited(const Story& s, const Rule& r) {
  return s.cursor < r.sequence.size() ? r.sequence[s.cursor].absent_for : std::nullopt;
}

// ---- the table ------------------------------------------------------------------------------------------------

void StoryTable::key_for(const Rule& r, std::uint32_t stream, const Fields& fields, std::string& key) {
  key.clear();
  if (r.key.node) {
    const std::string_view node = streams_[stream].id.label(LabelKey::node);
    key.append("node=").append(node.empty() ? std::string_view("local") : node);
  }
  if (r.key.stream) {
    if (!key.empty()) key += '|';
    key += streams_.logical_of(stream);
  }
  for (const auto& f : r.key.fields) {
    const auto* v = find_field(fields, f);
    key.append(1, '|').append(f).append(1, '=');
    if (v) key += *v;
  }
}

Story& StoryTable::get(std::uint32_t rule, std::string_view key, std::uint32_t stream) {
  auto it = stories_.find(StoryKeyView{rule, key});
  if (it == stories_.end()) {
    if (stories_.size() >= max_stories_) shed_oldest();
    Story s = make_story(rules_[rule], rule, std::string(key), stream, streams_[stream].generation);
    it = stories_.emplace(StoryKey{rule, std::string(key)}, std::move(s)).first;
  }
  return it->second;
}

void StoryTable::put(Story s) {
  StoryKey k{s.rule, s.key};
  stories_.insert_or_assign(std::move(k), std::move(s));
}

std::size_t StoryTable::drop_ended(std::uint32_t stream) {
  return std::erase_if(stories_, [&](const auto& entry) {
    const Story& s = entry.second;
    const Rule& r = rules_[s.rule];
    return s.stream == stream && r.key.stream && !absence_awaited(s, r);
  });
}

void StoryTable::shed_oldest() {
  // Ties (stories last active at the same time) go by key, so the one shed does not depend on hashing.
  auto oldest = stories_.begin();
  for (auto it = stories_.begin(); it != stories_.end(); ++it) {
    const Story& a = it->second;
    const Story& b = oldest->second;
    if (a.last_activity < b.last_activity ||
        (a.last_activity == b.last_activity && StoryKeyOrder{}(it->first, oldest->first))) {
      oldest = it;
    }
  }
  if (oldest != stories_.end()) {
    stories_.erase(oldest);
    ++stats_.stories_dropped;
  }
}

// ---- the machine ----------------------------------------------------------------------------------------------

void StoryMachine::reset(Story& s, const char* why) {
  const Rule& r = rules_[s.rule];
  if (s.started && trace_) trace_("  " + r.id + " [" + s.key + "]: story reset (" + why + ")");
  s.restart(r, s.stream, streams_[s.stream].generation);
}

std::string StoryMachine::position_of(const RecentHit& h) {
  return streams_[h.stream].id.instance + "@" + std::to_string(h.offset) + ":" + std::to_string(h.line);
}

void StoryMachine::set_evidence(EvidenceLine& e, const RecentHit& h, const EventPattern& ev) {
  set_evidence_line(e, streams_[h.stream], h, h.text, kMaxEvidenceText);
  e.event.assign(ev.name);
}

bool StoryMachine::after_ok(const Story& s, const Rule& r, const Step& st) const {
  for (const auto& name : st.after) {
    int idx = r.event_index(name);
    if (idx < 0 || !s.seen_events.contains(static_cast<std::size_t>(idx))) return false;
  }
  return true;
}

bool StoryMachine::apply(Story& s, const RecentHit& h, std::optional<std::uint32_t> record, Call& call) {
  const Rule& r = rules_[s.rule];
  const EventPattern& ev = r.events[h.event];
  // Optional steps: evidence at any point of the story.
  for (const std::uint32_t i : rules_.role({s.rule, h.event}).optional_steps) {
    const Step& st = r.sequence[i];
    if (!after_ok(s, r, st)) continue;
    StepState& ss = s.steps[i];
    ++ss.hits;
    set_evidence(step_evidence_slot(ss.lines), h, ev);
    for (const auto& [k, v] : h.fields) set_field(s.fields, k, v);
    if (st.severity && s.first_decisive.empty()) {
      s.first_decisive = position_of(h);
      s.first_decisive_time = h.time;
    }
    if (trace_) trace_("  " + r.id + " [" + s.key + "]: optional step " + std::to_string(i + 1) + " (" + ev.name + ") seen");
    if (st.severity && ss.hits >= st.count && s.cursor > i && !s.raised) {
      book_.raise(s, *st.severity, false, h.time, call);
    }
    book_.late_evidence(s, ss.lines.back(), call);
  }
  if (s.cursor >= r.sequence.size()) return false;
  const Step& cur = r.sequence[s.cursor];
  if (cur.absent_for) {
    if (step_has(cur, ev.name)) {
      if (trace_) trace_("  " + r.id + " [" + s.key + "]: awaited event " + ev.name + " arrived");
      reset(s, "absence broken");
    }
    return false;
  }
  if (!step_has(cur, ev.name) || !after_ok(s, r, cur)) return false;
  if (cur.within && s.cursor != first_required(r, 0) && h.time - s.progress_time > *cur.within) {
    reset(s, "window passed");
    s.saw(h.event);  // the story begins again with this hit
    return apply(s, h, record, call);
  }
  StepState& ss = s.steps[s.cursor];
  ss.times.push_back(h.time);
  if (cur.within && cur.count > 1) {
    while (!ss.times.empty() && h.time - ss.times.front() > *cur.within) ss.times.pop_front();
  }
  while (ss.times.size() > cur.count) ss.times.pop_front();
  ++ss.hits;
  if (s.first_decisive.empty()) {
    s.first_decisive = position_of(h);
    s.first_decisive_time = h.time;
  }
  set_evidence(step_evidence_slot(ss.lines), h, ev);
  if (record && ss.lines.size() <= 1) collect_context(streams_, *call.batch, *record, r.context_lines, s.context);
  for (const auto& [k, v] : h.fields) set_field(s.fields, k, v);
  if (ss.times.size() < cur.count) {
    if (trace_) trace_("  " + r.id + " [" + s.key + "]: step " + std::to_string(s.cursor + 1) + " (" + ev.name + ") " +
                       std::to_string(ss.times.size()) + "/" + std::to_string(cur.count));
    return true;
  }
  complete_step(s, h.time, call);
  return true;
}

void StoryMachine::complete_step(Story& s, Time at, Call& call) {
  const Rule& r = rules_[s.rule];
  const Step& done = r.sequence[s.cursor];
  if (trace_) trace_("  " + r.id + " [" + s.key + "]: step " + std::to_string(s.cursor + 1) + " complete");
  std::size_t done_index = s.cursor;
  s.progress_time = at;
  s.cursor = first_required(r, s.cursor + 1);
  if (s.cursor >= r.sequence.size()) {
    if (trace_) trace_("  " + r.id + " [" + s.key + "]: sequence complete");
    book_.raise(s, r.severity, true, at, call);
    reset(s, "fired");
    return;
  }
  if (done.severity) book_.raise(s, *done.severity, false, at, call);
  // Severity of optional steps between the completed one and the new cursor, already seen.
  for (std::size_t i = done_index + 1; i < s.cursor; ++i) {
    const Step& st = r.sequence[i];
    if (st.severity && s.steps[i].hits >= st.count) book_.raise(s, *st.severity, false, at, call);
  }
  const Step& next = r.sequence[s.cursor];
  if (next.absent_for) {
    if (trace_) trace_("  " + r.id + " [" + s.key + "]: waiting " + format_duration(*next.absent_for) + " for absence");
    return;
  }
  // Out-of-order tolerance: a hit of the next step that arrived a little earlier counts now.
  if (!tolerant(r)) return;
  for (auto it = s.recent.begin(); it != s.recent.end(); ++it) {
    const EventPattern& ev = r.events[it->event];
    if (!step_has(next, ev.name)) continue;
    Duration dt = at >= it->time ? at - it->time : it->time - at;
    bool close_time = r.tolerance.time.count() == 0 || dt <= r.tolerance.time;
    bool close_lines = r.tolerance.lines == 0 || call.line - std::min(call.line, it->line) <= r.tolerance.lines;
    if (!(close_time && close_lines) && trace_ && !it->explained) {
      it->explained = true;  // said once: a window only grows further away
      std::uint64_t lines_apart = call.line - std::min(call.line, it->line);
      trace_("line " + std::to_string(it->line) + ": " + r.id + "/" + ev.name + " matched, not counted: " +
             std::to_string(lines_apart) + " lines and " + format_duration(dt) + " from line " +
             std::to_string(call.line) + ", where step " + std::to_string(done_index + 1) + " (" +
             r.sequence[done_index].events.front() + ") completed, is out of the rule's tolerance (" +
             tolerance_text(r) + ")");
    }
    if (close_time && close_lines) {
      RecentHit h = *it;
      s.recent.erase(it);
      if (trace_) trace_("  " + r.id + " [" + s.key + "]: earlier hit of " + ev.name + " at line " + std::to_string(h.line) +
                         " taken as in order (tolerance)");
      apply(s, h, std::nullopt, call);
      return;
    }
  }
}

std::string StoryMachine::tolerance_text(const Rule& r) const {
  if (!tolerant(r)) return "none";
  std::string out = "lines: " + (r.tolerance.lines ? std::to_string(r.tolerance.lines) : std::string("any"));
  return out + ", time: " + (r.tolerance.time.count() ? format_duration(r.tolerance.time) : std::string("any"));
}

void StoryMachine::remember_early(Story& s, const RecentHit& h) {
  const Rule& r = rules_[s.rule];
  if (r.tolerance.lines > 0) {
    auto out_of_reach = [&](const RecentHit& e) {
      if (e.stream != h.stream || h.line <= e.line + r.tolerance.lines) return false;
      if (trace_ && !e.explained) {
        trace_("line " + std::to_string(e.line) + ": " + r.id + "/" + r.events[e.event].name +
               " matched, not counted: it waited in [" + s.key + "] for an earlier step, which did not complete " +
               "within the rule's tolerance (" + tolerance_text(r) + ")");
      }
      return true;
    };
    s.recent.erase(std::remove_if(s.recent.begin(), s.recent.end(), out_of_reach), s.recent.end());
  }
  RecentHit slot;  // the oldest one's strings keep their capacity for this one
  while (s.recent.size() >= kRecentHits) {
    if (trace_) explain_not_counted(s, s.recent.front(), true);
    slot = std::move(s.recent.front());
    s.recent.erase(s.recent.begin());
  }
  slot = h;
  s.recent.push_back(std::move(slot));
}

void StoryMachine::explain_not_counted(const Story& s, const RecentHit& h, bool forgotten) const {
  const Rule& r = rules_[s.rule];
  const EventPattern& ev = r.events[h.event];
  std::string head = "line " + std::to_string(h.line) + ": " + r.id + "/" + ev.name + " matched, ";
  if (forgotten) {
    trace_(head + "dropped: more than " + std::to_string(kRecentHits) + " early hits waited in [" + s.key +
           "] for an earlier step, the oldest go (tolerance: " + tolerance_text(r) + ")");
    return;
  }
  if (s.cursor >= r.sequence.size() || r.sequence[s.cursor].absent_for || tolerant(r)) return;
  if (step_has(r.sequence[s.cursor], ev.name)) return;  // its step's `after` is not met: not a question of order
  for (std::size_t i = s.cursor + 1; i < r.sequence.size(); ++i) {
    const Step& st = r.sequence[i];
    if (st.optional || !step_has(st, ev.name)) continue;
    trace_(head + "not counted: it is step " + std::to_string(i + 1) + " and arrived before step " +
           std::to_string(s.cursor + 1) + " (" + r.sequence[s.cursor].events.front() + ") completed in [" + s.key +
           "]; the rule has no tolerance, so an early hit is not taken later");
    return;
  }
}

void StoryMachine::complete_absences(StoryTable& table, Call& call) {
  auto due = [&](const Story& s) {
    const Rule& r = rules_[s.rule];
    const std::optional<Duration> wait = absence_awaited(s, r);
    return wait && streams_.now_for(node_keyed(r), s.stream) - s.progress_time >= *wait;
  };
  std::vector<std::pair<const StoryKey*, Story*>> ready;
  for (auto& [k, s] : table.all()) {
    if (due(s)) ready.emplace_back(&k, &s);
  }
  // Key order, so that absences passing together raise their incidents in an order that does not depend on hashing.
  std::sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) { return StoryKeyOrder{}(*a.first, *b.first); });
  for (auto& [k, sp] : ready) {
    Story& s = *sp;
    const Rule& r = rules_[s.rule];
    while (due(s)) {
      Time at = s.progress_time + *absence_awaited(s, r);
      if (trace_) trace_("  " + r.id + " [" + s.key + "]: absence confirmed");
      complete_step(s, at, call);
    }
  }
}

}  // namespace faultline::correlate
