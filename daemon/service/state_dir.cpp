// The state dir's lock: an flock on <dir>/lock, held by an open descriptor for the daemon's lifetime.
#include "state_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

namespace faultline::service_detail {

StateDir::~StateDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

StateDir::StateDir(StateDir&& other) noexcept
    : layout_(std::move(other.layout_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

StateDir& StateDir::operator=(StateDir&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    layout_ = std::move(other.layout_);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

Result<StateDir> StateDir::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create the state dir " + dir + ": " + ec.message()};
  StateDir s;
  s.layout_.dir = dir;
  s.lock_fd_ = ::open(s.layout_.lock_file().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (s.lock_fd_ < 0) return Error::from_errno("cannot write in the state dir", dir);
  if (::flock(s.lock_fd_, LOCK_EX | LOCK_NB) != 0) return Error{"another faultline uses the state dir " + dir};
  return s;
}

}  // namespace faultline::service_detail
