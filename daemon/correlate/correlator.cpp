// The correlator's façade: each call builds its Call (where revisions go, the batch, the line at hand) and hands
// it down to the parts — the story table and machine (story.cpp), the open-incident book (incident_book.cpp),
// attribution (attribution.cpp), evidence and the streams' rings (evidence.cpp), the event clock and the state
// codec (state_codec.cpp).
#include <algorithm>
#include <map>
#include <optional>

#include "attribution.hpp"
#include "event_clock.hpp"
#include "evidence.hpp"
#include "faultline/correlate.hpp"
#include "incident_book.hpp"
#include "keys.hpp"
#include "parts.hpp"
#include "state_codec.hpp"
#include "story.hpp"

namespace faultline {

using namespace correlate;

struct Correlator::Impl {
  Impl(std::shared_ptr<const CompiledRules> r, CorrelatorOptions o) : options(o), rules(std::move(r)) {
    rules_changed();
  }

  CorrelatorOptions options;
  CorrelatorStats stats;
  ActiveRules rules;
  Trace trace;
  Streams streams;
  Time advanced{};  // the latest time advance() was given (the clock of a correlator that saw no line yet)
  Attribution attribution{rules, streams, trace};
  IncidentBook book{rules, streams, attribution, trace, stats, options.holds_bounded_by_wall,
                    options.max_open_incident_bytes};
  StoryTable stories{rules, streams, stats, options.max_stories};
  StoryMachine machine{rules, streams, book, trace};
  bool has_absence = false;  // some rule has an absence step
  // The line of the latest hit. Absences that advance() completes count a line tolerance from it, as the hit
  // being processed when they were last looked at.
  std::uint64_t last_hit_line = 0;
  // The hit being processed: filled in for each one, its strings' capacity used again (a phase marker hits
  // thousands of lines); a hit that must wait for its pair is copied into its story.
  RecentHit current;
  std::string hit_key;  // the story key of the hit being processed (StoryTable::key_for)

  StateParts state() { return StateParts{rules, streams, stories, book, options.clock->now()}; }

  // A line of stream `rec.stream` moves its clock; returns the time the line is taken at. A line far before the
  // stream's time starts a new epoch of it: no sequence continues across, and the next completion is a repeat.
  Time see(const RecordMeta& rec, Call& call) {
    StreamState& st = streams[rec.stream];
    const Time wall = call.wall;
    if (rec.line <= st.clock_line) return st.clock.bounded(rec, wall);  // looked at already (a hit, then the ring)
    st.clock_line = rec.line;
    const SeenTime seen = st.clock.see(rec, wall);
    switch (seen.verdict) {
      case TimeVerdict::taken:
        break;
      case TimeVerdict::future:
        ++stats.times_rejected_future;
        if (trace) trace("line " + std::to_string(rec.line) + ": time " + format_time(rec.time) +
                         " is too far ahead of the wall clock; kept the stream's time " + format_time(seen.time));
        break;
      case TimeVerdict::back_jump:
        ++stats.times_went_back;
        if (trace) trace("line " + std::to_string(rec.line) + ": time went back to " + format_time(rec.time) +
                         "; a new epoch of the stream");
        for (auto& [k, story] : stories.all()) {
          if (story.stream == rec.stream && rules[story.rule].key.stream) machine.reset(story, "time went back");
        }
        book.time_went_back(rec.stream, call);
        break;
    }
    return seen.time;
  }

  // Deadlines each clock has passed: absences, holds, idle rings, quiet lifetimes.
  void settle(Call& call) {
    if (has_absence) machine.complete_absences(stories, call);
    streams.free_idle_rings();
    book.release_time_passed(call);
    book.expire(call);
  }

  // Derived indexes of the open incidents and of the rules, rebuilt after a reload.
  void rules_changed() {
    book.rebuild_index();
    has_absence = false;
    for (const auto& r : rules.rule_set().rules) {
      for (const auto& st : r.sequence) has_absence = has_absence || st.absent_for.has_value();
    }
  }

  // `t`: the time the hit's line is taken at (its own, within its stream clock's bounds).
  void on_hit(const Hit& hit, Time t, Call& call) {
    const RecordMeta& meta = (*call.batch)[hit.record];
    const Rule& r = rules[hit.event.rule];
    const EventPattern& ev = r.events[hit.event.event];
    ++stats.hits;
    stories.key_for(r, meta.stream, hit.fields, hit_key);
    if (trace) trace("line " + std::to_string(meta.line) + " @" + format_time(t) + ": " + r.id + "/" + ev.name + " hit");

    // Deadlines that this line passes are settled first, so batching never changes the outcome.
    book.settle_before(meta.stream, meta.line, t, call);

    Story& s = stories.get(hit.event.rule, hit_key, meta.stream);
    if (s.generation != streams[meta.stream].generation && r.key.stream) machine.reset(s, "new instance");
    s.stream = meta.stream;
    s.last_activity = t;

    const EventRole& role = rules.role(hit.event);
    if (role.resolves) {
      if (OpenIncident* oi = book.find({s.rule, s.key}); oi && oi->incident.status == IncidentStatus::firing)
        book.resolve(*oi, t, ev.name.c_str(), call);
    }
    if (role.resets) {
      machine.reset(s, ev.name.c_str());
      if (OpenIncident* oi = book.find({s.rule, s.key})) oi->boundary = true;
    }

    s.saw(hit.event.event);
    RecentHit& h = current;
    h.event = hit.event.event;
    h.stream = meta.stream;
    h.line = meta.line;
    h.offset = meta.offset;
    h.time = t;
    h.text.assign(call.batch->text(hit.record));
    h.fields = hit.fields;
    h.explained = false;
    call.line = last_hit_line = meta.line;
    bool counted = machine.apply(s, h, hit.record, call);
    // An early hit waits for its earlier step only where a required step can take it (a phase marker that only
    // optional steps list never can: remembered, it would only push out hits that can).
    if (!counted && role.later_required && (r.tolerance.lines > 0 || r.tolerance.time.count() > 0)) {
      machine.remember_early(s, h);
    } else if (!counted && trace) {
      machine.explain_not_counted(s, h, false);
    }
  }
};

Correlator::Correlator(std::shared_ptr<const CompiledRules> rules, CorrelatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(rules), options)) {}
Correlator::~Correlator() = default;
Correlator::Correlator(Correlator&&) noexcept = default;
Correlator& Correlator::operator=(Correlator&&) noexcept = default;

void Correlator::set_stream(std::uint32_t index, StreamIdentity identity) {
  impl_->streams.set_identity(index, std::move(identity));
}

void Correlator::new_instance(std::uint32_t index, std::string instance) {
  Impl& m = *impl_;
  StreamState& s = m.streams[index];
  s.id.instance = std::move(instance);
  ++s.generation;
  s.ring.clear();
  s.last_line = 0;
  s.clock_line = 0;
  for (auto& [k, story] : m.stories.all()) {
    if (story.stream == index && m.rules[story.rule].key.stream) m.machine.reset(story, "new instance");
  }
  m.book.mark_boundary(index);
}

void Correlator::end_stream(std::uint32_t index) {
  Impl& m = *impl_;
  m.streams.end(index);
  const StreamState& s = m.streams.at(index);
  const std::size_t dropped = m.stories.drop_ended(index);
  if (m.trace && dropped > 0) {
    m.trace("stream " + s.id.name + " ended: " + std::to_string(dropped) + " partial sequence(s) of it dropped");
  }
}

void Correlator::process(const RecordBatch& batch, const std::vector<Hit>& hits, std::vector<Incident>& out) {
  Impl& m = *impl_;
  Call call{out, m.options.clock->steady(), &batch};
  call.wall = m.options.clock->now();
  // A stream's clock moves with its lines that hit and with its last lines in the batch (for a log whose times only
  // go forward, the latest of the batch). Lines between them are not read for their time.
  for (const auto& hit : hits) {
    const RecordMeta& rec = batch[hit.record];
    const Time t = m.see(rec, call);
    m.streams.clock_moved(rec.stream);
    m.on_hit(hit, t, call);
  }
  if (!batch.empty()) {
    m.streams.keep_last_lines(batch, [&](const RecordMeta& rec) { return m.see(rec, call); });
    m.book.release_lines_passed(call);
  }
}

void Correlator::advance(Time now, std::vector<Incident>& out) {
  Impl& m = *impl_;
  m.advanced = std::max(m.advanced, now);
  for (std::uint32_t i = 0; i < m.streams.size(); ++i) {
    m.streams[i].clock.advance(now);
    m.streams.clock_moved(i);
  }
  Call call{out, m.options.clock->steady(), nullptr, m.last_hit_line};
  m.settle(call);
}

void Correlator::tick(Time wall_now, std::vector<Incident>& out) {
  Impl& m = *impl_;
  for (std::uint32_t i = 0; i < m.streams.size(); ++i) {
    m.streams[i].clock.tick(wall_now);
    m.streams.clock_moved(i);
  }
  Call call{out, m.options.clock->steady(), nullptr, m.last_hit_line};
  m.settle(call);
}

void Correlator::finish(std::vector<Incident>& out) {
  Impl& m = *impl_;
  Call call{out, m.options.clock->steady(), nullptr, m.last_hit_line};
  m.settle(call);
  m.book.release_all(call);
}

void Correlator::release_held(std::vector<Incident>& out) {
  Call call{out, impl_->options.clock->steady(), nullptr, impl_->last_hit_line};
  impl_->book.release_all(call);
}

void Correlator::add_root_causes(const std::vector<Incident>& incidents) {
  Impl& m = *impl_;
  for (const auto& inc : incidents) {
    const auto i = m.streams.find(inc.stream);
    if (i && m.attribution.remember_external(inc, *i, m.options.clock->now())) {
      if (m.trace) m.trace("  " + inc.rule + " incident " + inc.id + ": a root cause for cascades");
      m.book.root_cause_arrived();
    }
  }
}

void Correlator::replace_rules(std::shared_ptr<const CompiledRules> rules) {
  Impl& m = *impl_;
  // Map old rule indexes to new ones for rules whose definition did not change.
  std::map<std::string, std::uint32_t> new_index;
  for (std::uint32_t i = 0; i < rules->rule_set().rules.size(); ++i) new_index[rules->rule(i).id] = i;
  m.stories.rekey([&](std::uint32_t old_rule) -> std::optional<std::uint32_t> {
    const Rule& r = m.rules[old_rule];
    auto it = new_index.find(r.id);
    if (it == new_index.end()) return std::nullopt;
    if (rules->rule(it->second).content_hash != r.content_hash) return std::nullopt;
    return it->second;
  });
  m.book.rekey(new_index);
  m.rules.replace(std::move(rules));
  m.rules_changed();
}

void Correlator::set_trace(std::function<void(const std::string&)> trace) { impl_->trace.set(std::move(trace)); }

std::vector<Incident> Correlator::open_incidents() const {
  std::vector<Incident> out;
  for (const auto& [k, oi] : impl_->book.all()) out.push_back(oi.incident);
  return out;
}

Time Correlator::now() const { return std::max(impl_->streams.latest(), impl_->advanced); }
Time Correlator::log_now() const {
  Time t{};
  for (std::uint32_t i = 0; i < impl_->streams.size(); ++i) t = std::max(t, impl_->streams.at(i).clock.log_now());
  return t;
}
const CorrelatorStats& Correlator::stats() const { return impl_->stats; }

std::string Correlator::save_state() const { return encode_state(impl_->state()); }
Result<void> Correlator::load_state(std::string_view json) { return decode_state(json, impl_->state()); }

}  // namespace faultline
