// The state dir's lock: an flock on <dir>/lock, held by an open descriptor for the daemon's lifetime.
#include "state_dir.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
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

Result<void> StateDir::check(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) return Error{"no state dir given"};
  std::error_code ec;
  fs::path at = fs::absolute(dir, ec);
  if (ec) return Error{"cannot create the state dir " + dir + ": " + ec.message()};
  at = at.lexically_normal();
  // The dir itself when it exists, else the nearest ancestor that does: create_directories makes the rest in it.
  while (true) {
    auto st = fs::status(at, ec);
    if (!ec && fs::exists(st)) {
      if (!fs::is_directory(st)) {
        return Error{"cannot create the state dir " + dir + ": " + at.string() + " is not a directory"};
      }
      // Root passes access() everywhere: a read-only mount and the kernel's own file systems are refused by name.
      struct statvfs vfs {};
      if (::statvfs(at.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0)
        return Error{"cannot create the state dir " + dir + ": " + at.string() + " is on a read-only file system"};
      struct statfs fsinfo {};
      if (::statfs(at.c_str(), &fsinfo) == 0 &&
          (fsinfo.f_type == PROC_SUPER_MAGIC || fsinfo.f_type == SYSFS_MAGIC || fsinfo.f_type == CGROUP2_SUPER_MAGIC ||
           fsinfo.f_type == CGROUP_SUPER_MAGIC || fsinfo.f_type == DEBUGFS_MAGIC))
        return Error{"cannot create the state dir " + dir + ": " + at.string() +
                     " is a kernel file system (proc, sysfs, cgroup)"};
      if (::access(at.c_str(), W_OK | X_OK) != 0) {
        return Error::from_errno(at.string() == fs::path(dir).lexically_normal().string()
                                     ? "cannot write in the state dir"
                                     : "cannot create the state dir " + dir + " in",
                                 at.string());
      }
      return {};
    }
    if (!at.has_parent_path() || at.parent_path() == at) break;
    at = at.parent_path();
  }
  return Error{"cannot create the state dir " + dir + ": no existing directory above it"};
}

}  // namespace faultline::service_detail
