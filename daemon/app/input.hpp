// Input of `faultline scan`: the bytes of one file or of standard input, in large pieces.
// Regular files are mapped into memory a window at a time (the decoder reads the page cache directly, no copy into
// a buffer); pipes, terminals and anything that cannot be mapped are read into a buffer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "faultline/incident.hpp"
#include "faultline/types.hpp"

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

// A regular file mapped whole (scan -j: its parts are decoded on several threads at once). Pages are read in as they
// are touched. A file that another process truncates while it is mapped makes reading past its new end raise
// SIGBUS, which is reported as that and exits 2.
class MappedFile {
 public:
  // Maps `path` if it is a regular file (an empty one maps to no bytes). Otherwise, or on failure, ok() is false and
  // error() says why; `not_regular()` tells a pipe or a terminal (read it with ScanInput) from an error.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool ok() const { return error_.empty() && !not_regular_; }
  bool not_regular() const { return not_regular_; }
  const std::string& error() const { return error_; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  // Nothing refers to bytes [from, to) any more: the whole pages among them leave the process's memory (they stay in
  // the page cache), so a scan of a large file holds only the parts in flight.
  void release(std::size_t from, std::size_t to);

 private:
  std::string error_;
  bool not_regular_ = false;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace faultline::app
