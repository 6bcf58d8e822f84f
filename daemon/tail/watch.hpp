// The inotify side of the files kind: directory watches, the event drain, and whether inotify covers everything
// (so a file without an event has not changed). See watch.cpp for the idle-cost reasoning. One thread.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "faultline/tail.hpp"

namespace faultline::tail {

class Watcher {
 public:
  Watcher(const TailOptions& options, TailStats& stats);

  int fd() const { return reader_.fd(); }  // -1 without inotify

  // A full rescan starts: what it finds decides coverage anew.
  void begin_scan();
  void watch_dir(const std::string& dir);
  bool watches(const std::string& dir) const { return dir_wd_.count(dir) > 0; }
  void mark_glob_incomplete() { glob_incomplete_ = true; }  // a directory a glob needs is missing or unreadable
  // While this holds, a file or directory without an inotify event has not changed (as of the last full rescan).
  bool covers() const;
  bool added_watches() const { return new_watches_ > 0; }  // by the current full rescan

  // Reads the queued events. `on_path` gets the path an event names (in a watched directory). Returns true when a
  // full rescan is needed (a directory changed, a watch went away, the queue overflowed).
  bool drain(const std::function<void(const std::string& path)>& on_path);

 private:
  void forget(std::unordered_map<int, std::string>::iterator it);

  const TailOptions& options_;
  TailStats& stats_;
  InotifyReader reader_;
  std::unordered_map<int, std::string> wd_dir_;
  std::unordered_map<std::string, int> dir_wd_;
  bool warned_ = false;
  bool watch_failed_ = false;    // a directory could not be watched
  bool glob_incomplete_ = false;
  std::unordered_set<int> unsure_wds_;  // watches on another filesystem, or on a directory reached through a symlink
  std::size_t new_watches_ = 0;
  std::string event_path_;  // reused by drain
};

}  // namespace faultline::tail
