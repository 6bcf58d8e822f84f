// Input of `faultline scan`: the bytes of one file or of standard input, in large pieces.
// Regular files are mapped into memory a window at a time (the decoder reads the page cache directly, no copy into
// a buffer); pipes, terminals and anything that cannot be mapped are read into a buffer.
#pragma once

#include <cstddef>
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

  // The next piece of the input; false at the end (or on a read error: see error()). A piece stays valid until the
  // next call.
  bool next(std::string_view& piece);

 private:
  void unmap();

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

// Feeds all of `in` to `replay` as `stream`, read at the time of the input's first timestamp (looked for in its first
// 1000 lines or 1 MiB, decoded with `decode`), so that the lines before it take that time; an input that prints none
// so early is read at `read_time`. `scan`, `fingerprints` and `rules draft` stamp untimed lines the same way with it.
// Returns false when the input could not be read to its end (in.error() says why). Defined in input_clock.cpp.
bool feed_input(Replay& replay, std::uint32_t stream, ScanInput& in, const DecodeOptions& decode, Time read_time);

}  // namespace faultline::app
