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
  bool truncated = false;
};

// Records of one or more streams, their texts joined in one buffer, each followed by '\n', so a whole batch can be
// scanned at once. The text of a record never contains '\n'. clear() keeps capacity: no allocation per line.
class RecordBatch {
 public:
  std::size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  const RecordMeta& operator[](std::size_t i) const { return records_[i]; }
  std::string_view text(std::size_t i) const {
    return std::string_view(buffer_).substr(records_[i].text_begin, records_[i].text_size);
  }
  std::string_view buffer() const { return buffer_; }
  std::size_t bytes() const { return buffer_.size(); }
  const std::vector<RecordMeta>& records() const { return records_; }
  // The index of the record whose text (or trailing '\n') holds buffer offset `pos`; size() if pos >= bytes().
  std::size_t record_at(std::size_t pos) const;

  void clear() {
    buffer_.clear();
    records_.clear();
  }
  // Appends one record; `text` must not contain '\n'. meta.text_begin/text_size are filled in.
  void append(RecordMeta meta, std::string_view text);

 private:
  std::string buffer_;
  std::vector<RecordMeta> records_;
};

struct DecodeStats {
  std::uint64_t bytes = 0;            // bytes fed
  std::uint64_t lines = 0;            // records produced
  std::uint64_t truncated = 0;        // lines cut at max_line_bytes
  std::uint64_t partials_joined = 0;  // CRI 'P' fragments joined into a record
  std::uint64_t malformed = 0;        // lines that did not fit the stream's container format (kept as raw text)
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
  void feed(std::string_view bytes, Time read_time, RecordBatch& out);
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
