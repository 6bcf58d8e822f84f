#include "faultline/pipeline.hpp"

#include <string.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace faultline {

struct Pipeline::Impl {
  std::shared_ptr<const CompiledRules> rules;
  Scanner scanner;
  Correlator correlator;
  Detector detector;
  IncidentHandler on_incident;
  HitObserver observer;
  PipelineOptions options;
  PipelineStats stats;
  // Each stream's decoder, made when the stream is first fed or asked to resume, and again after a new instance or
  // the stream's end: a stream that ended holds none (a node's pods come and go: each one's ~1 KiB stayed).
  std::vector<std::optional<Decoder>> decoders;
  std::vector<DecodeOptions> decode_options;
  RecordBatch batch;
  std::vector<Hit> hits;
  std::vector<AnchorHit> anchors;
  std::vector<Incident> incidents;
  std::function<void(const std::string&)> trace;

  // --explain: a line an event matched that its level filter dropped is said, not silently skipped.
  void trace_level_filter() {
    if (!trace) {
      scanner.set_level_filtered(nullptr);
      return;
    }
    scanner.set_level_filtered([this](const RecordBatch& b, std::uint32_t record, EventRef ref) {
      const RecordMeta& meta = b[record];
      const Rule& r = rules->rule(ref.rule);
      const EventPattern& ev = r.events[ref.event];
      std::string levels;
      for (Level l : ev.levels) levels += (levels.empty() ? "" : ", ") + std::string(to_string(l));
      trace("line " + std::to_string(meta.line) + ": " + r.id + "/" + ev.name +
            " matched, dropped by its level filter (line level: " + std::string(to_string(meta.level)) +
            "; the event takes: " + levels + ")");
    });
  }

  std::vector<Incident> unclassified;  // the detector's, before they join `incidents`

  // The detector runs before the correlator: its unclassified failures are root causes that the correlator's
  // held cascades (an engine that died of a failure no rule knows) point at. Their revisions go out after the
  // correlator's.
  template <class Step>
  void detect(Step&& step) {
    unclassified.clear();
    step(unclassified);
    correlator.add_root_causes(unclassified);
  }
  void detected() {
    incidents.insert(incidents.end(), unclassified.begin(), unclassified.end());
    unclassified.clear();
  }

  Impl(std::shared_ptr<const CompiledRules> r, IncidentHandler h, PipelineOptions o)
      : rules(r), scanner(r), correlator(r, o.correlator), detector(r, o.fingerprint), on_incident(std::move(h)),
        options(o) {}

  // A cascade that an unclassified failure explains does not page on its own: the cause pages for it, so it is
  // raised to the cascade's severity when lower (docs/fingerprints.md, "One incident per unknown failure").
  void escalate_causes() {
    std::vector<Incident> raised;
    for (const auto& inc : incidents) {
      if (inc.caused_by && inc.caused_by_rule == kUnclassifiedRule)
        detector.escalate(*inc.caused_by, inc.severity, raised);
    }
    if (raised.empty()) return;
    correlator.add_root_causes(raised);
    incidents.insert(incidents.end(), raised.begin(), raised.end());
  }

  void deliver() {
    escalate_causes();
    for (const auto& inc : incidents) {
      ++stats.incidents;
      if (on_incident) on_incident(inc);
    }
    incidents.clear();
  }

  // The stream's decoder starts over (a new instance, or the stream's end): what is batched is correlated first, and
  // no time is inherited from before.
  void fresh_decoder(std::uint32_t stream) {
    drain();
    batch.forget_stream(stream);
    decoders.at(stream).reset();
  }

  Decoder& decoder(std::uint32_t stream) {
    std::optional<Decoder>& d = decoders.at(stream);
    if (!d) d.emplace(stream, decode_options.at(stream));
    return *d;
  }

  void drain() {
    if (batch.empty()) return;
    hits.clear();
    anchors.clear();
    scanner.scan(batch, hits, anchors);
    stats.hits += hits.size();
    stats.lines += batch.size();
    for (const auto& rec : batch.records()) stats.truncated += rec.truncated ? 1 : 0;
    if (observer) {
      for (const auto& h : hits) observer(h, batch);
    }
    detect([&](std::vector<Incident>& out) { detector.process(batch, anchors, hits, out); });
    correlator.process(batch, hits, incidents);
    detected();
    batch.clear();
    deliver();
  }
};

Pipeline::Pipeline(std::shared_ptr<const CompiledRules> rules, IncidentHandler on_incident, PipelineOptions options)
    : impl_(std::make_unique<Impl>(std::move(rules), std::move(on_incident), options)) {}
Pipeline::~Pipeline() = default;

std::uint32_t Pipeline::add_stream(StreamIdentity identity, DecodeOptions decode) {
  auto index = static_cast<std::uint32_t>(impl_->decoders.size());
  impl_->decoders.emplace_back();
  impl_->decode_options.push_back(decode);
  impl_->detector.set_stream(index, identity);
  impl_->correlator.set_stream(index, std::move(identity));
  return index;
}

void Pipeline::new_instance(std::uint32_t stream, StreamIdentity identity, std::uint64_t offset) {
  impl_->fresh_decoder(stream);
  if (offset != 0) impl_->decoder(stream).resume_at(offset, 1);
  impl_->detect([&](std::vector<Incident>& out) { impl_->detector.new_instance(stream, out); });
  impl_->correlator.new_instance(stream, identity.instance);
  impl_->detected();
  impl_->detector.set_stream(stream, identity);
  impl_->correlator.set_stream(stream, std::move(identity));
  impl_->deliver();
}

void Pipeline::end_stream(std::uint32_t stream) {
  impl_->fresh_decoder(stream);
  impl_->detect([&](std::vector<Incident>& out) { impl_->detector.end_stream(stream, out); });
  impl_->correlator.end_stream(stream);
  impl_->detected();
  impl_->deliver();
}

void Pipeline::resume(std::uint32_t stream, std::uint64_t offset, std::uint64_t line) {
  impl_->decoder(stream).resume_at(offset, line);
}

void Pipeline::feed(std::uint32_t stream, std::string_view bytes, Time read_time) {
  impl_->stats.bytes += bytes.size();
  // Feed in slices so one huge read never makes one huge batch.
  while (!bytes.empty()) {
    std::size_t room = impl_->options.batch_bytes > impl_->batch.bytes() ? impl_->options.batch_bytes - impl_->batch.bytes() : 0;
    std::size_t take = std::min(bytes.size(), std::max<std::size_t>(room, 4096));
    if (take < bytes.size()) {
      // End the slice after a newline, so no line is cut in two and the batch can go on referring to `bytes`.
      if (const void* nl = ::memrchr(bytes.data(), '\n', take)) take = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
    }
    impl_->decoder(stream).feed(bytes.substr(0, take), read_time, impl_->batch, /*in_place=*/true);
    bytes.remove_prefix(take);
    if (impl_->batch.bytes() >= impl_->options.batch_bytes) impl_->drain();
  }
  // The batch may refer to the caller's bytes, which are gone after this call. One at least half full is scanned now
  // instead of copied: a reader whose reads are about a batch's size (the tailer's are) had nearly every byte copied
  // once more, since a read cut at its last newline never quite fills a batch.
  if (impl_->batch.bytes() >= impl_->options.batch_bytes / 2) {
    impl_->drain();
  } else {
    impl_->batch.materialize();
  }
}

void Pipeline::flush_partial(std::uint32_t stream, Time read_time) {
  std::optional<Decoder>& d = impl_->decoders.at(stream);
  if (!d) return;  // nothing fed since it was made fresh
  d->flush(read_time, impl_->batch);
  if (impl_->batch.bytes() >= impl_->options.batch_bytes) impl_->drain();
}

void Pipeline::drain() { impl_->drain(); }

void Pipeline::correlate(MatchedBatch& m) {
  Impl& s = *impl_;
  s.drain();
  m.batch.continue_after(s.batch, m.lines_before);
  s.stats.bytes += m.bytes;
  if (!m.batch.empty()) {
    s.stats.hits += m.hits.size();
    s.stats.lines += m.batch.size();
    for (const auto& rec : m.batch.records()) s.stats.truncated += rec.truncated ? 1 : 0;
    if (s.observer) {
      for (const auto& h : m.hits) s.observer(h, m.batch);
    }
    s.detect([&](std::vector<Incident>& out) { s.detector.process(m.batch, m.anchors, m.hits, out); });
    s.correlator.process(m.batch, m.hits, s.incidents);
    s.detected();
  }
  m.batch.clear();
  s.batch.continue_after(m.batch);
  s.deliver();
}

const DecodeOptions& Pipeline::decode_options(std::uint32_t stream) const { return impl_->decode_options.at(stream); }

void Pipeline::advance(Time now) {
  impl_->drain();
  impl_->detect([&](std::vector<Incident>& out) { impl_->detector.advance(now, out); });
  impl_->correlator.advance(now, impl_->incidents);
  impl_->detected();
  impl_->deliver();
}

void Pipeline::tick(Time wall_now) {
  impl_->drain();
  // A story the quiet closes is a root cause before a held cascade's wait ends in the same tick.
  impl_->detect([&](std::vector<Incident>& out) { impl_->detector.tick(out); });
  impl_->correlator.tick(wall_now, impl_->incidents);
  impl_->detected();
  impl_->deliver();
}

void Pipeline::finish(Time read_time) {
  for (auto& d : impl_->decoders) {
    if (d) d->flush(read_time, impl_->batch);
  }
  impl_->drain();
  impl_->detect([&](std::vector<Incident>& out) { impl_->detector.finish(out); });
  impl_->correlator.finish(impl_->incidents);
  impl_->detected();
  impl_->deliver();
}

void Pipeline::release_held() {
  impl_->drain();
  impl_->correlator.release_held(impl_->incidents);
  impl_->deliver();
}

void Pipeline::replace_rules(std::shared_ptr<const CompiledRules> rules) {
  impl_->drain();
  impl_->scanner = Scanner(rules);
  impl_->trace_level_filter();
  impl_->correlator.replace_rules(rules);
  impl_->detector.replace_rules(rules);
  impl_->rules = std::move(rules);
}

Pipeline::StreamProgress Pipeline::progress(std::uint32_t stream) const {
  const std::optional<Decoder>& d = impl_->decoders.at(stream);
  if (!d) return StreamProgress{};  // a fresh decoder's: nothing read
  return StreamProgress{d->committed_offset(), d->committed_line(), d->has_partial()};
}
const DecodeStats& Pipeline::decode_stats(std::uint32_t stream) const {
  static const DecodeStats kNone{};
  const std::optional<Decoder>& d = impl_->decoders.at(stream);
  return d ? d->stats() : kNone;
}

std::string Pipeline::save_state() const { return impl_->correlator.save_state(); }
Result<void> Pipeline::load_state(std::string_view json) { return impl_->correlator.load_state(json); }
std::string Pipeline::save_fingerprints() const {
  return inventory_state_json(impl_->detector.inventory(), impl_->detector.book_state());
}
Result<void> Pipeline::load_fingerprints(std::string_view json) {
  auto entries = inventory_from_state_json(json);
  if (!entries) return entries.error();
  auto book = book_from_state_json(json);
  if (!book) return book.error();
  impl_->detector.restore_inventory(std::move(*entries));
  impl_->detector.restore_book(std::move(*book));
  return {};
}
void Pipeline::set_trace(std::function<void(const std::string&)> trace) {
  impl_->trace = trace;
  impl_->trace_level_filter();
  impl_->correlator.set_trace(std::move(trace));
}
Time Pipeline::now() const { return impl_->correlator.now(); }
const CorrelatorStats& Pipeline::correlator_stats() const { return impl_->correlator.stats(); }
const Detector& Pipeline::detector() const { return impl_->detector; }
const CompiledRules& Pipeline::rules() const { return *impl_->rules; }
void Pipeline::set_hit_observer(HitObserver observer) { impl_->observer = std::move(observer); }
const PipelineStats& Pipeline::stats() const { return impl_->stats; }

}  // namespace faultline
