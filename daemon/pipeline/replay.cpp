#include "faultline/replay.hpp"

#include <algorithm>
#include <string>

namespace faultline {

Replay::Replay(std::shared_ptr<const CompiledRules> rules, ReplayOptions options)
    : on_incident_(std::move(options.on_incident)),
      rules_(rules),
      batch_bytes_(std::max<std::size_t>(options.pipeline.batch_bytes, 4096)),
      clock_(options.start),
      pipeline_(std::move(rules), [this](const Incident& incident) { collect(incident); }, options.pipeline) {}

void Replay::collect(const Incident& incident) {
  if (on_incident_) on_incident_(incident);
  auto [it, first] = index_.try_emplace(incident.id, incidents_.size());
  if (first) {
    incidents_.push_back(incident);
  } else {
    incidents_[it->second] = incident;
  }
}

std::uint32_t Replay::add_stream(StreamIdentity identity, DecodeOptions decode) {
  if (decode.time.reference == Time{}) decode.time.reference = clock_;
  return pipeline_.add_stream(std::move(identity), decode);
}

void Replay::feed(std::uint32_t stream, std::string_view bytes) { pipeline_.feed(stream, bytes, clock_); }

void Replay::line(std::uint32_t stream, std::string_view text) {
  std::string bytes(text);
  bytes += '\n';
  pipeline_.feed(stream, bytes, clock_);
  pipeline_.drain();
}

void Replay::end_stream(std::uint32_t stream) {
  pipeline_.flush_partial(stream, clock_);
  pipeline_.drain();
}

void Replay::close_stream(std::uint32_t stream) {
  end_stream(stream);
  pipeline_.end_stream(stream);
}

void Replay::start(Time t) { clock_ = t; }

void Replay::after(Duration d) {
  pipeline_.drain();
  if (pipeline_.stats().lines > 0) clock_ = pipeline_.now();
  clock_ += d;
  pipeline_.advance(clock_);
}

void Replay::advance(Time t) {
  clock_ = t;
  pipeline_.advance(t);
}

void Replay::finish() { pipeline_.finish(clock_); }

}  // namespace faultline
