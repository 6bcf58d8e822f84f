// The state dir: the one place that names what the daemon keeps in it, and the exclusive lock that keeps a second
// daemon out. Internal to the service room. Owned by the Service's thread.
#pragma once

#include <string>

#include "faultline/result.hpp"

namespace faultline::service_detail {

// What lives in the state dir. The checkpoint (daemon/state) and the outputs (daemon/sinks) are handed the dir
// itself and use these same names; tests/unit/test_service.cpp checks that they do.
struct StateLayout {
  std::string dir;

  std::string lock_file() const { return dir + "/lock"; }
  std::string checkpoint_file() const { return dir + "/checkpoint.json"; }  // the joint checkpoint
  std::string journal_file() const { return dir + "/emitted.log"; }         // revisions emitted since it
  std::string incident_log() const { return dir + "/incidents.jsonl"; }     // the API's incident store
  std::string spool_dir(const std::string& sink) const { return dir + "/spool/" + sink; }
  std::string cache_dir() const { return dir + "/cache"; }                  // compiled rule databases
};

// The state dir, created if missing and locked (flock) for as long as this object lives.
class StateDir {
 public:
  StateDir() = default;
  ~StateDir();
  StateDir(StateDir&& other) noexcept;
  StateDir& operator=(StateDir&& other) noexcept;
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  // Errors: the dir cannot be created or written, or another faultline holds the lock.
  static Result<StateDir> open(const std::string& dir);
  // Whether open() could create and write the dir, looked at without creating or writing anything: the dir (or its
  // nearest existing ancestor, for a dir still to be made) is a directory this process may write in. Not the lock.
  static Result<void> check(const std::string& dir);

  const StateLayout& layout() const { return layout_; }
  bool locked() const { return lock_fd_ >= 0; }

 private:
  StateLayout layout_;
  int lock_fd_ = -1;
};

}  // namespace faultline::service_detail
