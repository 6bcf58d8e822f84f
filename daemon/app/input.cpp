#include "input.hpp"

#include "faultline/clock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace faultline::app {

namespace {

constexpr std::size_t kBuffer = 1u << 20;    // read() at a time otherwise

// A mapped file that another process truncates makes reading past its new end raise SIGBUS. That is reported as
// what it is, not as a crash.
void on_sigbus(int) {
  static constexpr char kMsg[] =
      "faultline scan: an input file shrank while it was being read (truncated by another process); scan it again\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  ::_exit(2);
}

void install_sigbus_handler() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

}  // namespace

ScanInput::ScanInput(const std::string& path, std::size_t window) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  window_size_ = std::max<std::size_t>(1, (window + page - 1) / page) * page;
  if (path == "-") {
    fd_ = STDIN_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = std::strerror(errno);
      return;
    }
    owns_fd_ = true;
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    mapped_ = true;
    size_ = static_cast<std::size_t>(st.st_size);
    install_sigbus_handler();
  }
}

ScanInput::~ScanInput() {
  unmap();
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

void ScanInput::unmap() {
  if (window_ != nullptr) ::munmap(window_, window_len_);
  window_ = nullptr;
  window_len_ = 0;
}

bool ScanInput::next(std::string_view& piece) {
  if (!ok()) return false;
  if (mapped_) {
    unmap();
    if (offset_ < size_) {
      // Only what the file still holds is mapped: a file that shrank since it was opened ends early.
      struct stat st {};
      if (::fstat(fd_, &st) == 0) size_ = std::min(size_, static_cast<std::size_t>(st.st_size));
    }
    if (offset_ >= size_) return false;
    const std::size_t len = std::min(window_size_, size_ - offset_);
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, static_cast<off_t>(offset_));
    if (p == MAP_FAILED) {
      // Not mappable after all (some file systems): read the rest.
      mapped_ = false;
      if (::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET) < 0) {
        error_ = std::strerror(errno);
        return false;
      }
      return next(piece);
    }
    ::madvise(p, len, MADV_SEQUENTIAL);
    window_ = p;
    window_len_ = len;
    offset_ += len;
    piece = std::string_view(static_cast<const char*>(p), len);
    return true;
  }
  buffer_.resize(kBuffer);
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n > 0) {
      offset_ += static_cast<std::size_t>(n);
      piece = std::string_view(buffer_.data(), static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    error_ = std::strerror(errno);
    return false;
  }
}

MappedFile::MappedFile(const std::string& path) {
  if (path == "-") {
    not_regular_ = true;
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error_ = std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error_ = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    not_regular_ = true;
  } else if (st.st_size > 0) {
    size_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      not_regular_ = true;  // not mappable (some file systems): read it
      size_ = 0;
    } else {
      data_ = p;
      ::madvise(p, size_, MADV_SEQUENTIAL);
      install_sigbus_handler();
    }
  }
  ::close(fd);
}

void MappedFile::release(std::size_t from, std::size_t to) {
  if (data_ == nullptr) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t a = (from + page - 1) / page * page;
  const std::size_t b = std::min(to, size_) / page * page;
  if (b > a) ::madvise(static_cast<char*>(data_) + a, b - a, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

// What a file's bytes were read at: --now, else its modification time; standard input is read now.
Time input_read_time(const std::string& input, const std::optional<Time>& now) {
  if (now) return *now;
  if (input != "-") {
    struct stat st {};
    if (::stat(input.c_str(), &st) == 0) {
      return Time(std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    }
  }
  return SystemClock::instance().now();
}

StreamIdentity input_identity(const std::string& input) {
  const bool is_stdin = input == "-";
  StreamIdentity id;
  id.name = is_stdin ? "stdin" : input;
  id.logical = id.name;
  id.instance = id.name;
  id.set_label(LabelKey::source, is_stdin ? "stdin" : "file");
  // A scan knows nothing of hosts: each input is a node of its own, so that rules keyed by node (the kernel log)
  // never join lines of two files, and the order of the files does not matter.
  id.set_label(LabelKey::node, id.name);
  return id;
}

}  // namespace faultline::app
