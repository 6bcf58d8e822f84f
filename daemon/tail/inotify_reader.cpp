// InotifyReader: the descriptor, its watches, and the event drain (records are variable length, name padded).
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "faultline/tail.hpp"

namespace faultline {

Result<InotifyReader> InotifyReader::open() {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return Error{std::string("inotify_init1: ") + std::strerror(errno)};
  return InotifyReader(fd);
}

InotifyReader::~InotifyReader() {
  if (fd_ >= 0) ::close(fd_);
}

InotifyReader::InotifyReader(InotifyReader&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

InotifyReader& InotifyReader::operator=(InotifyReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Result<int> InotifyReader::add_watch(const std::string& path, std::uint32_t mask) {
  int wd = fd_ < 0 ? (errno = EBADF, -1) : ::inotify_add_watch(fd_, path.c_str(), mask);
  if (wd < 0) return Error::from_errno("cannot watch", path);
  return wd;
}

void InotifyReader::remove_watch(int wd) {
  if (fd_ >= 0) ::inotify_rm_watch(fd_, wd);
}

std::size_t InotifyReader::drain(const std::function<void(const InotifyEvent&)>& on_event) {
  if (fd_ < 0) return 0;
  std::size_t count = 0;
  alignas(inotify_event) char buf[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      ++count;
      on_event(InotifyEvent{ev->wd, ev->mask, ev->len > 0 ? std::string_view(ev->name) : std::string_view()});
    }
  }
  return count;
}

}  // namespace faultline
