// File access the tail room's sources share: an owned descriptor, full preads, content fingerprints, newline counts
// and path pieces. Stateless functions; a UniqueFd belongs to one owner (one thread).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "faultline/tail.hpp"

namespace faultline::tail {

// Owns one descriptor: closed when replaced or destroyed. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);  // closes the one held

 private:
  int fd_ = -1;
};

// Opens a followed file for reading. Reads do not update its access time where the system lets this process say so
// (O_NOATIME: the file's owner or CAP_FOWNER; else it is opened without): a log written all the time had its inode
// dirtied, and journalled, by every read after a write (relatime). -1 and errno as open(2) when it cannot be opened.
int open_for_reading(const std::string& path);

// Reads up to `want` bytes at `offset`; short only at the end of the file or on error (-1 when nothing was read).
ssize_t pread_full(int fd, char* buf, std::size_t want, std::uint64_t offset);

// The hash of the first `bytes` bytes (fewer when the file is shorter); nullopt when it cannot be read.
std::optional<Fingerprint> fingerprint_of(int fd, std::size_t bytes);
std::optional<Fingerprint> fingerprint_of_path(const std::string& path, std::size_t bytes);
// The fingerprint of bytes already read (a file's first ones).
Fingerprint fingerprint_of_bytes(std::string_view bytes);

// Newlines in `bytes`; in [from, to) of the file.
std::uint64_t count_newlines(std::string_view bytes);
std::uint64_t count_newlines(int fd, std::uint64_t from, std::uint64_t to);

std::string dir_of(const std::string& path);   // "." for a bare name, "/" for a file in the root
std::string base_of(const std::string& path);
std::string real_path(const std::string& path);  // resolved; `path` itself when it cannot be resolved

}  // namespace faultline::tail
