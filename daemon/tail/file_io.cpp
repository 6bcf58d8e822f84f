// Descriptors, full preads, fingerprints, newline counts, path pieces; and the open-files limit.
#include "file_io.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "faultline/types.hpp"

namespace faultline {

namespace tail {

namespace {

// Content fingerprints in checkpoints were written with this seed (not FNV's standard offset basis): keep it, or
// every followed file would look new after an upgrade.
constexpr std::uint64_t kFingerprintSeed = 1469598103934665603ULL;

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int open_for_reading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
  if (fd >= 0 || errno != EPERM) return fd;
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

ssize_t pread_full(int fd, char* buf, std::size_t want, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, buf + got, want - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return got > 0 ? static_cast<ssize_t>(got) : -1;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

Fingerprint fingerprint_of_bytes(std::string_view bytes) {
  return Fingerprint{fnv1a64(bytes, kFingerprintSeed), static_cast<std::uint32_t>(bytes.size())};
}

std::optional<Fingerprint> fingerprint_of(int fd, std::size_t bytes) {
  std::string buf(bytes, '\0');
  ssize_t n = pread_full(fd, buf.data(), bytes, 0);
  if (n < 0) return std::nullopt;
  return fingerprint_of_bytes(std::string_view(buf.data(), static_cast<std::size_t>(n)));
}

std::optional<Fingerprint> fingerprint_of_path(const std::string& path, std::size_t bytes) {
  UniqueFd fd(open_for_reading(path));
  if (!fd.valid()) return std::nullopt;
  return fingerprint_of(fd.get(), bytes);
}

std::uint64_t count_newlines(std::string_view bytes) {
  // One byte-wide count per lane, summed before it can wrap: the compiler makes the inner loop a vector compare and
  // subtract. (std::count widens every byte's result to 64 bits: ~0.27 ns a byte, 15 % of the daemon's CPU while it
  // caught up on a backlog.)
  constexpr std::size_t kLanes = 32;
  constexpr std::size_t kBlock = kLanes * 255;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t left = bytes.size();
  std::uint64_t total = 0;
  while (left >= kLanes) {
    const std::size_t block = std::min(left, kBlock) / kLanes * kLanes;
    unsigned char lanes[kLanes] = {};
    for (std::size_t i = 0; i < block; i += kLanes) {
      for (std::size_t k = 0; k < kLanes; ++k) lanes[k] = static_cast<unsigned char>(lanes[k] + (p[i + k] == '\n'));
    }
    for (std::size_t k = 0; k < kLanes; ++k) total += lanes[k];
    p += block;
    left -= block;
  }
  for (std::size_t i = 0; i < left; ++i) total += p[i] == '\n' ? 1 : 0;
  return total;
}

std::uint64_t count_newlines(int fd, std::uint64_t from, std::uint64_t to) {
  std::uint64_t count = 0;
  std::string buf(256 * 1024, '\0');
  while (from < to) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
    ssize_t n = pread_full(fd, buf.data(), want, from);
    if (n <= 0) break;
    count += count_newlines(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    from += static_cast<std::uint64_t>(n);
  }
  return count;
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  return path;
}

}  // namespace tail

std::uint64_t raise_open_files_limit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace faultline
