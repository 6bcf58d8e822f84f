// Evidence assembly and the streams' rings of last lines.
#include "evidence.hpp"

#include <algorithm>

namespace faultline::correlate {

namespace {

constexpr std::size_t kRingLines = 20;
// Context lines older than this are no use as the lines before a decisive one; an idle stream's are freed, so a node
// that sees thousands of short-lived pods does not keep their last lines forever.
constexpr Duration kRingIdle = std::chrono::minutes(5);

// Stream order: by stream, then position in it.
bool evidence_before(const EvidenceLine& a, const EvidenceLine& b) {
  return a.stream != b.stream ? a.stream < b.stream : a.offset != b.offset ? a.offset < b.offset : a.line < b.line;
}

bool same_line(const EvidenceLine& a, const EvidenceLine& b) {
  return a.stream == b.stream && a.line == b.line && a.offset == b.offset;
}

}  // namespace

ContextLine& LineRing::push(std::size_t capacity) {
  if (lines_.size() < capacity) {
    if (lines_.empty()) lines_.reserve(capacity);
    return lines_.emplace_back();
  }
  ContextLine& slot = lines_[head_];
  head_ = (head_ + 1) % lines_.size();
  return slot;
}

void LineRing::clear() {
  lines_.clear();
  head_ = 0;
}

void LineRing::release() {
  std::vector<ContextLine>().swap(lines_);
  head_ = 0;
}

StreamState& Streams::operator[](std::uint32_t index) {
  if (index >= streams_.size()) streams_.resize(index + 1);
  return streams_[index];
}

void Streams::name_taken(const std::string& name, std::uint32_t index) {
  if (name.empty()) return;
  auto [it, added] = first_named_.try_emplace(name, index);
  if (!added && index < it->second) it->second = index;
}

std::optional<std::uint32_t> Streams::find(const std::string& name) const {
  if (name.empty()) {  // streams not named yet (indexes asked for before they were described)
    for (std::uint32_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].id.name.empty()) return i;
    }
    return std::nullopt;
  }
  auto it = first_named_.find(name);
  if (it == first_named_.end()) return std::nullopt;
  return it->second;
}

void Streams::set_identity(std::uint32_t index, StreamIdentity identity) {
  StreamState& s = (*this)[index];
  if (!s.id.name.empty() && s.id.name != identity.name) {
    s.clock = EventClock{};  // the index stood for another stream
    s.clock_line = 0;
    // The old name's first stream may have been this one: it is the next of that name now, if any.
    if (auto it = first_named_.find(s.id.name); it != first_named_.end() && it->second == index) {
      first_named_.erase(it);
      for (std::uint32_t i = 0; i < streams_.size(); ++i) {
        if (i != index && streams_[i].id.name == s.id.name) {
          name_taken(s.id.name, i);
          break;
        }
      }
    }
  }
  s.id = std::move(identity);
  name_taken(s.id.name, index);
  s.described = true;
  auto it = restored_.find(s.id.name);
  if (it == restored_.end()) return;
  s.clock.restore(it->second.now, it->second.log_now, it->second.log_time_seen);
  restored_.erase(it);
}

void Streams::restore_clock(const std::string& name, Time now, Time log_now, bool log_time_seen) {
  for (auto& st : streams_) {
    if (st.described && st.id.name == name) {
      st.clock.restore(now, log_now, log_time_seen);
      return;
    }
  }
  restored_[name] = RestoredClock{now, log_now, log_time_seen};
}

std::string Streams::name_of(std::uint32_t index) const {
  return index < streams_.size() ? streams_[index].id.name : std::string();
}

std::uint32_t Streams::find_or_add(const std::string& name) {
  if (auto found = find(name)) return *found;
  streams_.emplace_back();
  streams_.back().id.name = name;
  const auto index = static_cast<std::uint32_t>(streams_.size() - 1);
  name_taken(name, index);
  return index;
}

const std::string& Streams::logical_of(std::uint32_t index) {
  const StreamState& s = (*this)[index];
  return s.id.logical.empty() ? s.id.name : s.id.logical;
}

void Streams::keep_last_lines(const RecordBatch& batch, const std::function<Time(const RecordMeta&)>& see) {
  // The batch's streams, by index (the order their clocks move in). Per stream: record indexes, newest first (kept
  // from batch to batch: no allocation per batch).
  present_.assign(batch.streams_present().begin(), batch.streams_present().end());
  std::sort(present_.begin(), present_.end());
  for (std::uint32_t s : present_) {
    if (s >= newest_.size()) newest_.resize(s + 1);
    newest_[s].clear();
  }
  // Walked from the end until each stream of the batch has its last lines (one stream: kRingLines records, not the
  // batch).
  std::size_t full = 0;
  for (std::size_t i = batch.size(); i-- > 0 && full < present_.size();) {
    const RecordMeta& m = batch.records()[i];  // stream and line only: time and level may be deferred
    if (m.stream >= newest_.size()) continue;  // (not in streams_present(): none is)
    auto& v = newest_[m.stream];
    if (v.empty()) (*this)[m.stream].last_line = std::max((*this)[m.stream].last_line, m.line);
    if (v.size() < kRingLines) {
      v.push_back(i);
      if (v.size() == kRingLines) ++full;
    }
  }
  for (std::uint32_t si : present_) {
    if (newest_[si].empty()) continue;
    auto& ring = (*this)[si].ring;
    for (auto it = newest_[si].rbegin(); it != newest_[si].rend(); ++it) {
      const RecordMeta& m = batch[*it];
      const Time t = see(m);
      const std::string_view text = batch.text(*it).substr(0, kContextText);
      ContextLine& slot = ring.push(kRingLines);
      slot.line = m.line;
      slot.offset = m.offset;
      slot.time = t;
      slot.text.assign(text);
      ring_due_ = std::min(ring_due_, t + kRingIdle);
    }
    clock_moved(si);
  }
}

void Streams::end(std::uint32_t index) {
  StreamState& st = (*this)[index];
  st.ended = true;
  st.ring.release();
  if (index < newest_.size()) std::vector<std::size_t>().swap(newest_[index]);
}

void Streams::free_idle_rings() {
  // No ring can be idle before ring_due_ on any clock: the sweep would touch every stream for nothing.
  if (latest() <= ring_due_) return;
  ring_due_ = Time::max();
  for (auto& st : streams_) {
    if (st.ring.empty()) continue;
    if (st.ring.newest().time + kRingIdle < st.clock.now())
      st.ring.release();
    else
      ring_due_ = std::min(ring_due_, st.ring.newest().time + kRingIdle);
  }
}

std::string Streams::node_name(std::uint32_t index) {
  std::string node((*this)[index].id.label(LabelKey::node));
  return node.empty() ? std::string("local") : node;
}

Time Streams::node_now_of(std::uint32_t index) {
  const StreamState& s = (*this)[index];
  std::string_view node = s.id.label(LabelKey::node);
  auto it = node_clocks_.find(node.empty() ? std::string_view("local") : node);
  return it == node_clocks_.end() ? s.clock.now() : std::max(it->second, s.clock.now());
}

void Streams::clock_moved(std::uint32_t index) {
  const StreamState& s = (*this)[index];
  if (!s.clock.known()) return;
  std::string_view node = s.id.label(LabelKey::node);
  if (node.empty()) node = "local";
  auto it = node_clocks_.find(node);
  if (it == node_clocks_.end())
    node_clocks_.emplace(std::string(node), s.clock.now());
  else
    it->second = std::max(it->second, s.clock.now());
}

Time Streams::latest_of_all() const {
  Time t = latest();
  for (const auto& [node, now] : node_clocks_) t = std::max(t, now);
  return t;
}

Time Streams::latest() const {
  Time t{};
  for (const auto& st : streams_) t = std::max(t, st.clock.now());
  return t;
}

void collect_context(Streams& streams, const RecordBatch& batch, std::uint32_t rec, std::size_t want,
                     std::vector<EvidenceLine>& into) {
  if (want == 0) return;
  const RecordMeta& meta = batch[rec];
  const StreamState& stream = streams[meta.stream];
  std::vector<EvidenceLine> found;
  for (std::size_t i = rec; i-- > 0 && found.size() < want;) {
    if (batch.records()[i].stream != meta.stream) continue;
    found.push_back(evidence_line(stream, batch[i], batch.text(i), kContextText));
  }
  for (std::size_t i = 0; i < stream.ring.size() && found.size() < want; ++i) {
    const ContextLine& l = stream.ring.from_newest(i);
    if (l.line >= meta.line) continue;
    found.push_back(evidence_line(stream, l, l.text, kContextText));
  }
  into.insert(into.end(), std::make_move_iterator(found.rbegin()), std::make_move_iterator(found.rend()));
}

EvidenceLine& step_evidence_slot(std::vector<EvidenceLine>& lines) {
  if (lines.size() < kHitsPerStep) return lines.emplace_back();
  return lines.back();  // keep the first ones and the latest
}

std::vector<EvidenceLine> assemble_evidence(std::vector<EvidenceLine> all) {
  std::sort(all.begin(), all.end(), evidence_before);
  std::vector<EvidenceLine> unique;
  for (auto& e : all) {
    if (!unique.empty() && same_line(unique.back(), e)) {
      if (unique.back().event.empty()) unique.back() = e;
      continue;
    }
    unique.push_back(e);
  }
  if (unique.size() > kMaxEvidenceLines) {
    // Drop context lines from the front first, then the oldest lines.
    std::vector<EvidenceLine> kept;
    std::size_t excess = unique.size() - kMaxEvidenceLines;
    for (auto& e : unique) {
      if (excess > 0 && e.event.empty()) {
        --excess;
        continue;
      }
      kept.push_back(std::move(e));
    }
    if (kept.size() > kMaxEvidenceLines) {
      kept.erase(kept.begin(), kept.begin() + static_cast<long>(kept.size() - kMaxEvidenceLines));
    }
    unique = std::move(kept);
  }
  return unique;
}

std::vector<EvidenceLine> merge_evidence(std::vector<EvidenceLine> ev, const EvidenceLine& add) {
  for (const auto& e : ev) {
    if (same_line(e, add)) return ev;
  }
  ev.push_back(add);
  std::sort(ev.begin(), ev.end(), evidence_before);
  if (ev.size() > kMaxEvidenceLines) ev.erase(ev.begin());
  return ev;
}

}  // namespace faultline::correlate
