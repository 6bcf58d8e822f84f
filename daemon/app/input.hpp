// Input of `faultline scan`: the bytes of one file or of standard input, in large pieces; gzip and zstd inputs (told
// by their magic bytes) decompressed on the way.
// Regular files are mapped into memory a window at a time (the decoder reads the page cache directly, no copy into
// a buffer); pipes, terminals and anything that cannot be mapped are read into a buffer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/types.hpp"

namespace faultline {
class Replay;
}

namespace faultline::app {

// What a file's bytes were read at: `now` when given, else its modification time; standard input is read now.
Time input_read_time(const std::string& input, const std::optional<Time>& now);
// The stream a `scan` input is: its path (or "stdin") as name and logical identity, labelled by its source kind.
StreamIdentity input_identity(const std::string& input);

// How an input's bytes are stored, told by its first bytes (not by its name): a rotated container log is often
// `*.log.gz`, and a renamed one may carry no suffix at all.
enum class InputEncoding : std::uint8_t { plain, gzip, zstd };
std::string_view to_string(InputEncoding encoding);

class Decompressor;  // one gzip or zstd stream (input.cpp)

class ScanInput {
 public:
  // Opens `path` ("-": standard input). On failure error() says why and next() returns false. `window`: bytes mapped
  // at a time (rounded up to whole pages).
  explicit ScanInput(const std::string& path, std::size_t window = std::size_t{64} << 20);
  ~ScanInput();
  ScanInput(const ScanInput&) = delete;
  ScanInput& operator=(const ScanInput&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool mapped() const { return mapped_; }
  // Known after the first next(): gzip and zstd inputs are handed out decompressed. A format that cannot be read
  // (xz, bzip2, zip, lz4) is an error() naming it, never an input of no lines.
  InputEncoding encoding() const { return encoding_; }
  // Bytes of the file read so far (compressed, for a compressed input) and its size (0: unknown, a pipe).
  std::size_t consumed() const { return offset_; }
  std::size_t size() const { return size_; }

  // The next piece of the input (decompressed); false at the end (or on a read or decompression error: see
  // error()). A piece stays valid until the next call.
  bool next(std::string_view& piece);

 private:
  void unmap();
  bool next_raw(std::string_view& piece);  // the bytes as stored
  bool sniff(std::string_view& piece);     // the first piece: tells the encoding
  bool next_decompressed(std::string_view& piece);

  bool sniffed_ = false;
  InputEncoding encoding_ = InputEncoding::plain;
  std::string head_;             // the first raw bytes, when the first pieces were too short to tell the encoding
  std::string_view pending_;     // raw bytes the decompressor has not taken yet
  bool raw_ended_ = false;
  std::unique_ptr<Decompressor> decompressor_;
  std::vector<char> decompressed_;

  std::string error_;
  int fd_ = -1;
  bool owns_fd_ = false;
  bool mapped_ = false;
  std::size_t size_ = 0;     // mapped files: the size when opened
  std::size_t offset_ = 0;   // next byte to hand out
  std::size_t window_size_ = 0;
  void* window_ = nullptr;
  std::size_t window_len_ = 0;
  std::vector<char> buffer_;
};

// A progress line on standard error for an input that takes a while: bytes read (of its size, when known), lines/s
// and the time left, redrawn about once a second after the first kAfter, and cleared at the end. Only when
// standard error is a terminal: a pipe or a log file gets nothing.
class ScanProgress {
 public:
  static constexpr std::chrono::seconds kAfter{3};
  explicit ScanProgress(std::string input, bool enabled);
  ~ScanProgress();
  ScanProgress(const ScanProgress&) = delete;
  ScanProgress& operator=(const ScanProgress&) = delete;
  // After each piece: the file's bytes read so far, its size (0: unknown) and the lines read so far.
  void update(std::size_t consumed, std::size_t size, std::uint64_t lines);
  void done();

  // The line itself (without the carriage return): "scan pod.log.gz: 312.0 MiB of 1.2 GiB (26%), 1.9M lines/s, 9 s
  // left".
  static std::string line(const std::string& input, std::size_t consumed, std::size_t size, std::uint64_t lines,
                          double seconds);

 private:
  std::string input_;
  bool enabled_ = false;
  bool shown_ = false;
  std::chrono::steady_clock::time_point started_, next_draw_;
};

// A regular file held whole (scan -j: its parts are decoded on several threads at once). A large one is mapped:
// pages are read in as they are touched, and a file that another process truncates while it is mapped makes reading
// past its new end raise SIGBUS, which is reported as that and exits 2. A small one (up to kReadWholeBelow bytes) is
// read into memory of its own: for a file of a few pages, mapping and unmapping it (a TLB shootdown on every thread)
// cost more than the copy (a scan of 10,000 files of 17 KB).
class MappedFile {
 public:
  // Holds `path` whole if it is a regular file (an empty one holds no bytes). Otherwise, or on failure, ok() is false
  // and error() says why; `not_regular()` tells a pipe, a terminal or a compressed file (read it with ScanInput) from
  // an error.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static constexpr std::size_t kReadWholeBelow = std::size_t{128} << 10;

  bool ok() const { return error_.empty() && !not_regular_; }
  // Its modification time, as it was when opened (when ok()).
  Time modified() const { return modified_; }
  bool not_regular() const { return not_regular_; }
  const std::string& error() const { return error_; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  // Nothing refers to bytes [from, to) any more: the whole pages among them leave the process's memory (they stay in
  // the page cache), so a scan of a large file holds only the parts in flight.
  void release(std::size_t from, std::size_t to);
  // Reads bytes [offset, offset + size) of the file into `out` (pread: any thread, no page of the mapping touched);
  // false if the file holds fewer of them now, or a read failed.
  bool copy(std::size_t offset, char* out, std::size_t size) const;

 private:
  std::string error_;
  bool not_regular_ = false;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::unique_ptr<char[]> owned_;  // a small file's bytes (data_ points here), else empty: data_ is a mapping
  int fd_ = -1;  // kept open for copy() of a mapped file
  Time modified_{};
};

// Feeds all of `in` to `replay` as `stream`, read at the time of the input's first timestamp (looked for in its first
// 1000 lines or 1 MiB, decoded with `decode`), so that the lines before it take that time; an input that prints none
// so early is read at `read_time`. `scan`, `fingerprints` and `rules draft` stamp untimed lines the same way with it.
// `progress`, when given, is updated after each piece. Returns false when the input could not be read to its end
// (in.error() says why). Defined in input_clock.cpp.
bool feed_input(Replay& replay, std::uint32_t stream, ScanInput& in, const DecodeOptions& decode, Time read_time,
                ScanProgress* progress = nullptr);

// The time the first line of `head` that prints one prints (within that look-ahead), decoded as the stream will be;
// `scan` uses it for a file it maps whole.
std::optional<Time> first_time_in(std::string_view head, const DecodeOptions& decode, Time read_time);

}  // namespace faultline::app
