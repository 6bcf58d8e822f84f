// The stream table and the per-source counters.
#include "source.hpp"

namespace faultline::tail {

std::uint32_t StreamTable::find_or_add(const StreamIdentity& identity, ContainerFormat format, Source& source) {
  auto it = by_logical_.find(identity.logical);
  if (it != by_logical_.end()) return it->second;
  auto s = std::make_unique<LogicalStream>();
  s->identity = identity;
  s->format = format;
  s->source = &source;
  auto index = static_cast<std::uint32_t>(streams_.size());
  streams_.push_back(std::move(s));
  by_logical_.emplace(identity.logical, index);
  return index;
}

void StreamTable::activate(std::uint32_t index) {
  if (index >= streams_.size()) return;
  LogicalStream& s = *streams_[index];
  if (!s.active) {
    s.active = true;
    active_.push_back(index);
  }
}

void StreamTable::activate_all() {
  for (std::uint32_t i = 0; i < streams_.size(); ++i) activate(i);
}

void StreamTable::open(LogicalStream& s, TailHandler& handler) {
  if (!s.opened) {
    s.handle = handler.open_stream(s.identity, s.format);
    s.opened = true;
  }
}

SourceTailStats& SourceStatsBook::of(const std::string& label) {
  auto [it, added] = by_label_.try_emplace(label);
  if (added) it->second.source = label;
  return it->second;
}

std::vector<SourceTailStats> SourceStatsBook::list() const {
  std::vector<SourceTailStats> out;
  out.reserve(by_label_.size());
  for (const auto& [label, stats] : by_label_) out.push_back(stats);
  return out;
}

}  // namespace faultline::tail
