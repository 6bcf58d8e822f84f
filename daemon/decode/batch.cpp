// RecordBatch: records of one or more streams, their texts in spans that are referred to or copied ('\n' after each).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "decode_internal.hpp"
#include "faultline/decode.hpp"

namespace faultline {

namespace {
// [from, to) holds whole blank lines only (white space, each line ended by '\n').
bool blank_lines(const char* from, const char* to) {
  if (from == to) return true;
  if (to[-1] != '\n') return false;
  for (const char* p = from; p != to; ++p) {
    if (*p != '\n' && !decode_detail::white_space(*p)) return false;
  }
  return true;
}
}  // namespace

void RecordBatch::OwnBytes::grow(std::size_t n) {
  const std::size_t capacity = std::max({size_ + n, 2 * capacity_, std::size_t{4096}});
  auto data = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

RecordMeta& RecordBatch::append(std::string_view text) {
  // The last span grows when it is the batch's own and ends where the buffer does.
  if (spans_.empty() || spans_.back().referred != nullptr || spans_.back().own + spans_.back().size != buffer_.size()) {
    spans_.push_back(Run{nullptr, buffer_.size(), bytes_, 0});
  }
  RecordMeta& m = records_.emplace_back();
  m.text_begin = static_cast<std::uint32_t>(bytes_);
  m.text_size = static_cast<std::uint32_t>(text.size());
  char* at = buffer_.extend(text.size() + 1);
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  at[text.size()] = '\n';
  spans_.back().size += text.size() + 1;
  bytes_ += text.size() + 1;
  return m;
}

RecordMeta& RecordBatch::append_in_place(std::string_view text) {
  std::size_t gap = 0;
  bool joins = false;
  if (!spans_.empty() && spans_.back().referred != nullptr) {
    const char* end = spans_.back().referred + spans_.back().size;
    if (text.data() >= end && blank_lines(end, text.data())) {
      joins = true;
      gap = static_cast<std::size_t>(text.data() - end);
    }
  }
  if (!joins) spans_.push_back(Run{text.data(), 0, bytes_, 0});
  RecordMeta& m = records_.emplace_back();
  m.text_begin = static_cast<std::uint32_t>(bytes_ + gap);
  m.text_size = static_cast<std::uint32_t>(text.size());
  spans_.back().size += gap + text.size() + 1;
  bytes_ += gap + text.size() + 1;
  return m;
}

namespace {
// `meta` with the text fields of `placed` (a record just appended).
void fill(RecordMeta& placed, const RecordMeta& meta) {
  const std::uint32_t begin = placed.text_begin, size = placed.text_size;
  placed = meta;
  placed.text_begin = begin;
  placed.text_size = size;
}
}  // namespace

void RecordBatch::append(const RecordMeta& meta, std::string_view text) {
  present(meta.stream);
  fill(append(text), meta);
}

void RecordBatch::append_in_place(const RecordMeta& meta, std::string_view text) {
  present(meta.stream);
  fill(append_in_place(text), meta);
}

const RecordBatch::StreamTime* RecordBatch::find(std::uint32_t stream) const {
  if (stream >= entry_of_.size() || entry_of_[stream] == kNone) return nullptr;
  return &entries_[entry_of_[stream]];
}

RecordBatch::StreamTime& RecordBatch::entry(std::uint32_t stream) {
  if (stream >= entry_of_.size()) entry_of_.resize(std::max<std::size_t>(stream + 1, 2 * entry_of_.size()), kNone);
  if (entry_of_[stream] == kNone) {
    entry_of_[stream] = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back().stream = stream;
  }
  return entries_[entry_of_[stream]];
}

RecordBatch::StreamTime& RecordBatch::present(std::uint32_t stream) {
  StreamTime& st = entry(stream);
  if (!st.present) {
    st.present = true;
    present_.push_back(stream);
  }
  return st;
}

std::size_t RecordBatch::append_lines_in_place(const RecordMeta& meta, const char* run, const std::uint32_t* ends,
                                               std::size_t count) {
  // (The stream is marked present by the first record, which goes through append_in_place(meta, text).)
  // A line is no record when it and its '\n' are a blank line (as the decoder drops white-space lines).
  const auto blank = [run](std::size_t start, std::size_t end) { return blank_lines(run + start, run + end + 1); };
  std::size_t added = 0;
  std::size_t start = 0;
  std::size_t k = 0;
  // The first line that is a record goes the usual way: it may join the span before it or begin one.
  for (; k < count && added == 0; ++k) {
    const std::size_t end = ends[k];
    if (!blank(start, end)) {
      RecordMeta m = meta;
      m.line = meta.line + k;
      m.offset = meta.offset + start;
      append_in_place(m, std::string_view(run + start, end - start));
      added = 1;
    }
    start = end + 1;
  }
  if (k >= count) return added;
  // The rest lie right after it in memory: they grow its span, blank lines and all, up to the last record's '\n'.
  Run& span = spans_.back();
  const std::size_t at = span.offset + static_cast<std::size_t>(run - span.referred);  // batch offset of run[0]
  std::size_t last_end = span.offset + span.size;
  const RecordMeta like = meta;  // (a local copy: written records cannot alias it, so it is not read again each time)
  records_.reserve(records_.size() + (count - k));
  for (; k < count; ++k) {
    const std::size_t end = ends[k];
    // No '\n' lies between a line's start and its end: a line is blank when it is empty or begins with white space
    // and holds nothing else (most begin with a word, and only their first byte is read).
    if (start != end && (!decode_detail::white_space(run[start]) || !blank(start, end))) {
      RecordMeta& m = records_.emplace_back(like);
      m.line = like.line + k;
      m.offset = like.offset + start;
      m.text_begin = static_cast<std::uint32_t>(at + start);
      m.text_size = static_cast<std::uint32_t>(end - start);
      last_end = at + end + 1;
      ++added;
    }
    start = end + 1;
  }
  span.size = last_end - span.offset;
  bytes_ = last_end;
  return added;
}

void RecordBatch::materialize() {
  // Referred spans are copied to the end of the batch's buffer (owned ones stay where they are), then spans that
  // now follow each other both in the batch and in the buffer are merged.
  bool referred = false;
  for (auto& r : spans_) {
    if (r.referred == nullptr) continue;
    referred = true;
    r.own = buffer_.size();
    std::memcpy(buffer_.extend(r.size), r.referred, r.size);
    r.referred = nullptr;
  }
  if (!referred) return;
  std::size_t w = 0;
  for (std::size_t k = 0; k < spans_.size(); ++k) {
    if (w > 0) {
      Run& prev = spans_[w - 1];
      if (prev.own + prev.size == spans_[k].own && prev.offset + prev.size == spans_[k].offset) {
        prev.size += spans_[k].size;
        continue;
      }
    }
    spans_[w++] = spans_[k];
  }
  spans_.resize(w);
}

std::string_view RecordBatch::text(std::size_t i) const {
  const RecordMeta& m = records_[i];
  // The last span that begins at or before the text (batches have a few spans at most).
  auto it = std::upper_bound(spans_.begin(), spans_.end(), static_cast<std::size_t>(m.text_begin),
                             [](std::size_t p, const Run& r) { return p < r.offset; });
  const Run& r = *(it - 1);
  return std::string_view(run_data(r) + (m.text_begin - r.offset), m.text_size);
}

RecordBatch::Span RecordBatch::span(std::size_t k) const {
  const Run& r = spans_[k];
  return Span{std::string_view(run_data(r), r.size), r.offset};
}

std::string RecordBatch::joined() const {
  std::string out;
  out.reserve(bytes_);
  for (const auto& r : spans_) out.append(run_data(r), r.size);
  return out;
}

// ---- deferred time and level -------------------------------------------------------------------------------------
// deferred: 1 = nothing worked out; 2 = the text was read and prints no time, the inherited time is still open.

void RecordBatch::set_time_context(std::uint32_t stream, const TimeContext& context) {
  present(stream).context = context;
}

void RecordBatch::forget_stream(std::uint32_t stream) {
  if (stream >= entry_of_.size() || entry_of_[stream] == kNone) return;
  StreamTime& st = entries_[entry_of_[stream]];
  st.last.reset();
  if (st.present) return;  // it has records here, or will: its context stays
  // Its entry goes (a stream that ended; the daemon's batch lives as long as the daemon): the last one takes its place.
  const std::uint32_t at = entry_of_[stream];
  entry_of_[stream] = kNone;
  if (at + 1 != entries_.size()) {
    entries_[at] = std::move(entries_.back());
    entry_of_[entries_[at].stream] = at;
  }
  entries_.pop_back();
}

void RecordBatch::parse(std::size_t i) const {
  RecordMeta& r = records_[i];
  if (r.deferred != 1) return;
  static const TimeContext kNoContext{};
  const StreamTime* st = find(r.stream);
  const TimeContext& context = st != nullptr ? st->context : kNoContext;
  const LineMeta m = decode_detail::parse_line_meta(text(i), context, r.time);
  r.level = m.level;
  if (!r.time_from_log && m.time) {
    r.time = *m.time;
    r.time_from_log = true;
  }
  r.deferred = r.time_from_log ? 0 : 2;
}

void RecordBatch::resolve(std::size_t i) const {
  parse(i);
  if (records_[i].deferred == 0) return;
  // Prints no time: it has that of the nearest earlier line of its stream that has one (itself printed or inherited),
  // else the stream's latest time before this batch, else its time of reading. The records walked over on the way
  // print no time either and get the same.
  const std::uint32_t stream = records_[i].stream;
  std::optional<Time> base;
  std::size_t j = i;
  while (j-- > 0) {
    if (records_[j].stream != stream) continue;
    parse(j);
    const RecordMeta& p = records_[j];
    if (p.deferred == 0) {
      if (p.time_from_log || p.time_inherited) base = p.time;
      else base.reset();  // it had no earlier time either
      break;
    }
  }
  if (j == static_cast<std::size_t>(-1)) {
    if (const StreamTime* st = find(stream)) base = st->last;
  }
  for (std::size_t k = j == static_cast<std::size_t>(-1) ? 0 : j + 1; k <= i; ++k) {
    RecordMeta& r = records_[k];
    if (r.stream != stream || r.deferred != 2) continue;
    if (base) {
      r.time = *base;
      r.time_inherited = true;
    }
    r.deferred = 0;
  }
}

void RecordBatch::continue_after(const RecordBatch& earlier, std::uint64_t lines) {
  if (lines != 0) {
    for (auto& r : records_) r.line += lines;
  }
  // Only the streams it holds need earlier's times, and only those earlier's last clear() moved can differ from what
  // this one took before (per stream in the batch, not per stream there ever was).
  const auto take = [&](std::uint32_t s) {
    const StreamTime* e = earlier.find(s);
    if (e == nullptr) return;
    entry(s).last = e->last;
  };
  for (std::uint32_t s : present_) take(s);
  for (std::uint32_t s : earlier.carried_) take(s);
}

const std::vector<std::pair<std::uint32_t, std::size_t>>& RecordBatch::last_records() const {
  lasts_.clear();
  const std::uint64_t walk = ++walks_;  // an entry found in this walk carries its number: nothing to reset after
  for (std::size_t i = records_.size(); i-- > 0 && lasts_.size() < present_.size();) {
    const std::uint32_t s = records_[i].stream;
    if (s >= entry_of_.size() || entry_of_[s] == kNone) continue;
    const StreamTime& st = entries_[entry_of_[s]];
    if (!st.present || st.walk == walk) continue;
    st.walk = walk;
    lasts_.emplace_back(s, i);
  }
  return lasts_;
}

void RecordBatch::clear() {
  // Carry each stream's latest time over: that of its last record, worked out if need be.
  for (const auto& [s, i] : last_records()) {
    const RecordMeta& r = (*this)[i];
    if (r.time_from_log || r.time_inherited) entries_[entry_of_[s]].last = r.time;
  }
  for (std::uint32_t s : present_) entries_[entry_of_[s]].present = false;
  carried_.assign(present_.begin(), present_.end());  // (both keep their capacity: no allocation per batch)
  present_.clear();
  buffer_.clear();
  spans_.clear();
  records_.clear();
  bytes_ = 0;
}

void RecordBatch::reset() {
  buffer_.clear();
  spans_.clear();
  records_.clear();
  for (const StreamTime& st : entries_) entry_of_[st.stream] = kNone;
  entries_.clear();
  present_.clear();
  carried_.clear();
  bytes_ = 0;
}

std::size_t RecordBatch::record_at(std::size_t pos) const {
  if (pos >= bytes_) return records_.size();
  // The last record that begins at or before pos; texts are laid out in record order.
  auto it = std::upper_bound(records_.begin(), records_.end(), pos,
                             [](std::size_t p, const RecordMeta& m) { return p < m.text_begin; });
  return static_cast<std::size_t>(it - records_.begin()) - 1;
}

}  // namespace faultline
