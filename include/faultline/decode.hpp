// decode: turns the bytes of one stream into records — lines with their event time and level.
// Handles framing (LF, CRLF, partial last lines, a maximum length), container wrappers (Kubernetes CRI with P/F
// joining, docker json-file), ANSI colour codes, and the timestamp/level shapes that serving stacks print.
// A Decoder belongs to one stream and one thread; RecordBatch is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/types.hpp"

namespace faultline {

enum class ContainerFormat : std::uint8_t { auto_detect, raw, cri, docker };

std::string_view to_string(ContainerFormat format);
std::optional<ContainerFormat> parse_container_format(std::string_view text);  // auto|raw|cri|docker

// How to read times that the log prints incompletely.
struct TimeContext {
  // A time printed without a year gets the year that puts it nearest to, and not more than a day after, this
  // reference (the file's modification time, or --now), so a replay gives the same answer on any day. Unset (the
  // epoch): a Decoder uses the read_time given to feed(), parse_line_meta the wall clock.
  Time reference{};
  // Zone of times printed without one.
  std::chrono::seconds utc_offset{0};
};

struct DecodeOptions {
  ContainerFormat format = ContainerFormat::auto_detect;
  std::size_t max_line_bytes = 64 * 1024;  // longer lines are cut to this and counted
  TimeContext time;
};

// One record (line) in a batch. Its text lives in RecordBatch::buffer().
struct RecordMeta {
  std::uint32_t stream = 0;       // caller's stream index
  std::uint32_t text_begin = 0;   // into the batch buffer
  std::uint32_t text_size = 0;
  std::uint64_t line = 0;         // 1-based physical line number in the stream
  std::uint64_t offset = 0;       // byte offset of the line's start in the stream
  Time time{};                    // event time
  Level level = Level::unknown;
  bool time_from_log = false;     // false: inherited from the previous line, or the time of reading
  bool time_inherited = false;    // not in the line: the time of an earlier line of the stream
  bool truncated = false;
  // Time and level are not worked out yet (`time` holds the time of reading, or the container's time): a Decoder
  // leaves that to RecordBatch::operator[], which does it on first access — a matcher looks at the lines that hit
  // and at a few for context and the clock, not at every line. records() shows them as they are.
  std::uint8_t deferred = 0;
};

// Records of one or more streams, each text followed by '\n', laid out one after the other at increasing batch
// offsets, so a whole batch can be scanned at once. The text of a record never contains '\n'. clear() keeps
// capacity: no allocation per line.
// A batch may refer to its caller's bytes instead of copying them (append_in_place): records that lie one after the
// other in memory, as the lines of a read buffer or a mapped file do, form a span that is scanned where it is. The
// batch is then a few spans (referred or copied) rather than one buffer; the caller keeps referred bytes valid until
// clear() or materialize().
class RecordBatch {
 public:
  // A run of whole records and the blank lines between them, and the batch offset of its first byte.
  struct Span {
    std::string_view bytes;
    std::size_t offset = 0;
  };

  std::size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  // Record i with its time and level (worked out now if they were deferred).
  const RecordMeta& operator[](std::size_t i) const {
    if (records_[i].deferred != 0) resolve(i);
    return records_[i];
  }
  // Record i's level alone, read from its text if need be. Its time is left as it is: a deferred record that prints
  // none inherits the time of the lines before it, which a batch matched apart from its predecessors (scan -j) learns
  // only when it is correlated in order.
  Level level(std::size_t i) const {
    if (records_[i].deferred == 1) parse(i);
    return records_[i].level;
  }
  std::string_view text(std::size_t i) const;
  // The records as they are: stream, line, offset and text are always set; time and level only where not deferred.
  const std::vector<RecordMeta>& records() const { return records_; }
  std::size_t bytes() const { return bytes_; }  // the spans' total size
  std::size_t span_count() const { return spans_.size(); }
  Span span(std::size_t k) const;
  // Every span joined, copied (for tests and diagnostics).
  std::string joined() const;
  // The index of the record whose text (or trailing '\n') holds batch offset `pos`; size() if pos >= bytes().
  // An offset in a blank line between records gives the record before it.
  std::size_t record_at(std::size_t pos) const;

  // The streams the batch's records are of, in order of first appearance (and any stream whose time context was set
  // since clear(): it may have none). What is done per stream and batch looks at these, not at every stream there
  // ever was (scan reads thousands of files, a node sees thousands of pods).
  const std::vector<std::uint32_t>& streams_present() const { return present_; }
  // Each stream's last record in the batch, as (stream, record index), newest first: found walking back from the end
  // until every stream of streams_present() that has a record is found. Valid until the batch changes.
  const std::vector<std::pair<std::uint32_t, std::size_t>>& last_records() const;

  // Empties the batch. Each stream's latest time is kept: a deferred record of a later batch that prints no time
  // inherits it.
  void clear();
  // Empties the batch as if it were new (no stream's time or context kept), keeping its capacity: a batch used again
  // for other input.
  void reset();
  // A stream's deferred records are read with this context (a Decoder sets it before it appends records of the
  // stream).
  void set_time_context(std::uint32_t stream, const TimeContext& context);
  // The stream starts over (a new instance): no time is inherited from before.
  void forget_stream(std::uint32_t stream);
  // Appends one record, copying its text; `text` must not contain '\n'. meta.text_begin/text_size are filled in.
  void append(const RecordMeta& meta, std::string_view text);
  // Appends one record whose text is followed in memory by '\n' and stays valid until clear() or materialize().
  // Nothing is copied; when it continues the previous record in memory (only blank lines in between), it joins its
  // span.
  void append_in_place(const RecordMeta& meta, std::string_view text);
  // As the two above, but the record is returned to be filled in where it lies: text_begin and text_size are set,
  // every other field is as in RecordMeta{}. (A decoder's way: a RecordMeta passed in is copied through the stack, and
  // reading it back right after its fields were written stalled on every line.) Valid until the next append. Its
  // stream must be one whose time context was set since clear() (streams_present()).
  RecordMeta& append(std::string_view text);
  RecordMeta& append_in_place(std::string_view text);
  // Appends the lines of `run` as append_in_place() would, one record per line that is not blank: line k is
  // [run + ends[k - 1] + 1, run + ends[k]) (line 0 starts at `run`), each end a '\n'. Each record is `meta` with
  // line and offset moved on to that line (meta.line + k, meta.offset + its start). Returns the records appended.
  std::size_t append_lines_in_place(const RecordMeta& meta, const char* run, const std::uint32_t* ends,
                                    std::size_t count);
  // Copies every referred byte into the batch's own buffer (before the caller's bytes go away).
  void materialize();
  // A batch decoded apart from the ones before it (scan -j): its line numbers move on by `lines`, and it takes each
  // stream's latest time from `earlier` (the batch before it in the stream's order, after that one's clear()), so
  // that its deferred records inherit as if it had been decoded in one pass with them. After its own clear(), the
  // batch after it takes them from this one.
  void continue_after(const RecordBatch& earlier, std::uint64_t lines = 0);

 private:
  struct Run {
    const char* referred = nullptr;  // null: the bytes are buffer_[own, own + size)
    std::size_t own = 0;
    std::size_t offset = 0;          // batch offset of its first byte
    std::size_t size = 0;
  };
  const char* run_data(const Run& r) const { return r.referred != nullptr ? r.referred : buffer_.data() + r.own; }
  struct StreamTime {
    std::uint32_t stream = 0;
    TimeContext context;
    std::optional<Time> last;  // the latest time printed by the stream before this batch
    bool present = false;      // in present_
    mutable std::uint64_t walk = 0;  // the last_records() walk that found its last record
  };
  void resolve(std::size_t i) const;
  void parse(std::size_t i) const;
  const StreamTime* find(std::uint32_t stream) const;
  StreamTime& entry(std::uint32_t stream);    // the stream's entry, added if it has none
  StreamTime& present(std::uint32_t stream);  // the stream's entry, marked present

  // The bytes the batch copies. It grows without clearing what it adds: each append writes those bytes at once.
  class OwnBytes {
   public:
    char* extend(std::size_t n) {
      if (n > capacity_ - size_) grow(n);
      char* at = data_.get() + size_;
      size_ += n;
      return at;
    }
    const char* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    void clear() { size_ = 0; }

   private:
    void grow(std::size_t n);
    std::unique_ptr<char[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
  };

  OwnBytes buffer_;
  std::vector<Run> spans_;
  mutable std::vector<RecordMeta> records_;  // deferred fields are filled in on access
  // Each stream's time context and latest time, for the streams the batch has held since reset(): entries_ is compact
  // (a batch holds one stream or a few, however many there are), entry_of_ maps a stream index to its entry (kNone:
  // none; 4 bytes a stream). A table dense by stream index was resized to every stream there ever was in each batch
  // used again: quadratic in the files of a scan.
  static constexpr std::uint32_t kNone = 0xffffffffu;
  std::vector<std::uint32_t> entry_of_;
  std::vector<StreamTime> entries_;
  std::vector<std::uint32_t> present_;  // streams_present()
  std::vector<std::uint32_t> carried_;  // the streams whose latest time the last clear() carried over
  mutable std::vector<std::pair<std::uint32_t, std::size_t>> lasts_;  // last_records()
  mutable std::uint64_t walks_ = 0;
  std::size_t bytes_ = 0;
};

struct DecodeStats {
  std::uint64_t bytes = 0;            // bytes fed
  std::uint64_t lines = 0;            // records produced
  std::uint64_t truncated = 0;        // lines cut at max_line_bytes
  std::uint64_t partials_joined = 0;  // CRI 'P' fragments joined into a record
  std::uint64_t malformed = 0;        // lines that did not fit the stream's container format (kept as raw text)
};

// How much of an input's start to feed a Decoder at a time while looking for something there (its container format,
// its first printed time): 1 KiB first, so that a small file is not decoded whole for it, then twice as much each time
// up to 64 KiB while nothing is found.
class HeadPieces {
 public:
  std::size_t next() {
    const std::size_t n = size_;
    size_ = size_ * 2 < kLargest ? size_ * 2 : kLargest;
    return n;
  }

 private:
  static constexpr std::size_t kLargest = 64 * 1024;
  std::size_t size_ = 1024;
};

// Decodes one stream. feed() may end anywhere, even inside a UTF-8 sequence or a CRI wrapper; the rest of an
// incomplete line waits for the next feed() or flush().
class Decoder {
 public:
  Decoder(std::uint32_t stream, DecodeOptions options);
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;

  // `read_time` stands in for the event time of lines that carry none and follow no timed line.
  // `in_place`: records may refer to `bytes` instead of copying them (RecordBatch::append_in_place); the caller then
  // keeps `bytes` valid until it clears or materializes `out`.
  void feed(std::string_view bytes, Time read_time, RecordBatch& out, bool in_place = false);
  // Emits a pending partial line (end of input, or the partial-line timeout of a live source).
  void flush(Time read_time, RecordBatch& out);
  bool has_partial() const;

  // Stream offset up to which every byte has become a record; a checkpoint stores this. Held back to the start of
  // any line still open (a partial last line, a CRI 'P' chain waiting for its 'F'), so a restart re-reads it.
  std::uint64_t committed_offset() const;
  // The line number at committed_offset(): pass both to resume_at() after a restart.
  std::uint64_t committed_line() const;
  // Start numbering lines and offsets as if `offset` bytes and `line - 1` lines came before (resume).
  void resume_at(std::uint64_t offset, std::uint64_t line);

  ContainerFormat format() const;  // the detected format once known
  const DecodeStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the message of one line says about itself. Exposed for tests and `scan --explain`.
struct LineMeta {
  std::optional<Time> time;
  Level level = Level::unknown;
};
LineMeta parse_line_meta(std::string_view message, const TimeContext& context);

// Removes ANSI escape sequences (ESC [ ... final byte) and their caret-notation copies ("^[[1;36m") in place.
void strip_ansi(std::string& text);

}  // namespace faultline
