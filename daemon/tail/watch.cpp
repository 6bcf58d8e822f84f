// Wake-ups of the files kind: inotify watches on the directories the globs look into, the event drain, and the
// choice at each rescan_interval between the full rescan and a stat of a few files.
//
// Idle cost. inotify reports every write, truncation, creation, rename and deletion in a watched directory of a local
// filesystem, so while it covers everything (every directory watched, the globs fully expanded, no watch on a network
// filesystem or reached through a symlink) a file without an event has not changed: each rescan_interval only the
// files an event named, and those inotify cannot vouch for (rotated away, deleted, hard-linked), are stat'ed — with
// the same checks as the full rescan, so a copytruncate refilled past the offset is still told by its fingerprint.
// Directory events trigger the full rescan (glob expansion) at once; it also runs every covered_rescan_interval.
// Otherwise (no inotify, or it does not cover everything) the full rescan runs every rescan_interval, as the fallback.
#include "watch.hpp"

#include <sys/inotify.h>
#include <sys/vfs.h>

#include <spdlog/spdlog.h>

#include "file_io.hpp"
#include "file_source.hpp"

namespace faultline::tail {

namespace {

constexpr std::uint32_t kDirMask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_ATTRIB |
                                   IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// Filesystems on which inotify sees every change (made on this host). Elsewhere (NFS, SMB, FUSE, 9p, ...) changes
// may come without events, so directories there keep the periodic rescan.
bool inotify_complete_on(const std::string& dir) {
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  switch (static_cast<std::uint64_t>(fs.f_type)) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // xfs
    case 0x9123683E:  // btrfs
    case 0x01021994:  // tmpfs
    case 0x858458F6:  // ramfs
    case 0x794C7630:  // overlayfs
    case 0xF2F52010:  // f2fs
    case 0x2FC12FC1:  // zfs
    case 0xCA451A4E:  // bcachefs
    case 0x3153464A:  // jfs
      return true;
    default:
      return false;
  }
}

}  // namespace

// ---- Watcher ----

Watcher::Watcher(const TailOptions& options, TailStats& stats) : options_(options), stats_(stats) {
  if (!options_.use_inotify) return;
  auto reader = InotifyReader::open();
  if (reader)
    reader_ = std::move(*reader);
  else
    spdlog::warn("inotify unavailable ({}); polling every {}", reader.error().message,
                 format_duration(options_.rescan_interval));
}

void Watcher::begin_scan() {
  watch_failed_ = false;
  glob_incomplete_ = false;
  new_watches_ = 0;
}

void Watcher::watch_dir(const std::string& dir) {
  if (!reader_.valid() || dir_wd_.count(dir)) return;
  auto added = reader_.add_watch(dir, kDirMask);
  if (!added) {
    watch_failed_ = true;
    if (!warned_) {
      spdlog::warn("{}; relying on the {} rescan", added.error().message, format_duration(options_.rescan_interval));
      warned_ = true;
    }
    return;
  }
  const int wd = *added;
  auto old = wd_dir_.find(wd);  // the same directory under another name
  if (old != wd_dir_.end()) {
    dir_wd_.erase(old->second);
    unsure_wds_.insert(wd);  // events carry one of its names only
  } else {
    ++new_watches_;
    // A directory reached through a symlink can be swapped without an event in it; another filesystem may change
    // without events.
    if (real_path(dir) != dir || !inotify_complete_on(dir)) unsure_wds_.insert(wd);
  }
  wd_dir_[wd] = dir;
  dir_wd_[dir] = wd;
  stats_.watched_dirs = wd_dir_.size();
}

void Watcher::forget(std::unordered_map<int, std::string>::iterator it) {
  dir_wd_.erase(it->second);
  unsure_wds_.erase(it->first);
  wd_dir_.erase(it);
  stats_.watched_dirs = wd_dir_.size();
}

bool Watcher::covers() const {
  return reader_.valid() && !watch_failed_ && !glob_incomplete_ && unsure_wds_.empty();
}

bool Watcher::drain(const std::function<void(const std::string& path)>& on_path) {
  bool rescan = false;
  reader_.drain([&](const InotifyEvent& ev) {
    ++stats_.inotify_events;
    if (ev.mask & IN_Q_OVERFLOW) {
      ++stats_.inotify_overflows;
      rescan = true;
      return;
    }
    if (ev.mask & IN_IGNORED) {
      auto it = wd_dir_.find(ev.wd);
      if (it != wd_dir_.end()) forget(it);
      rescan = true;
      return;
    }
    auto it = wd_dir_.find(ev.wd);
    if (it == wd_dir_.end()) return;
    if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
      // A moved directory keeps its watch but no longer has the name we know it by: drop it, so that the rescan
      // watches whatever now has that name.
      reader_.remove_watch(ev.wd);
      forget(it);
      rescan = true;
      return;
    }
    if (ev.name.empty()) return;
    event_path_.assign(it->second);
    if (event_path_ != "/") event_path_ += '/';
    event_path_ += ev.name;
    on_path(event_path_);
    if (ev.mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB)) rescan = true;
  });
  return rescan;
}

// ---- the files kind's wake-ups ----

std::optional<Steady> FileSource::due() const {
  if (rescan_needed_ || descriptor_check_) return Steady::min();
  return next_rescan_;
}

void FileSource::prepare() {
  if (watch_.drain([this](const std::string& path) { on_event_path(path); })) rescan_needed_ = true;
  Steady now = ctx_.clock.steady();
  const bool checked = rescan_needed_ || now >= next_rescan_;
  if (checked) {
    const bool full = rescan_needed_ || now >= next_full_rescan_ || !watch_.covers();
    rescan_needed_ = false;
    if (full) {
      rescan();
      next_full_rescan_ = now + to_steady(ctx_.options.covered_rescan_interval);
    } else {
      check_files();
    }
    next_rescan_ = now + to_steady(ctx_.options.rescan_interval);
  }
  if (checked || descriptor_check_) rotate_descriptors();
}

void FileSource::on_event_path(const std::string& path) {
  auto named = by_path_.find(path);
  if (named == by_path_.end()) return;
  auto file = files_.find(named->second);
  if (file == files_.end()) return;
  FollowedFile& f = *file->second;
  f.ready = true;
  if (f.state != FileState::finished) ctx_.streams.activate(f.stream);
  if (f.parked()) descriptor_check_ = true;
  if (!f.touched) {
    f.touched = true;
    touched_.push_back(f.key);
  }
}

bool FileSource::reported_by_inotify(const FollowedFile& f) const {
  if (f.state == FileState::finished) {
    // Only a finished file that keeps its name is looked at (late bytes); a rename is a directory event.
    if (!named_by(f.path, f)) return true;
    return f.nlink == 1 && watch_.watches(dir_of(f.path));
  }
  // Writes show under the resolved name (a symlink is resolved when the writer opens the file).
  return f.presence == Presence::named && f.nlink == 1 && named_by(f.real, f) && watch_.watches(dir_of(f.real));
}

// Between full rescans while inotify covers everything: stat the files an event named and those inotify does not
// vouch for, with the same checks as the full rescan.
void FileSource::check_files() {
  auto check = [&](const FileKey& key) {
    auto it = files_.find(key);
    if (it == files_.end()) return;
    FollowedFile& f = *it->second;
    f.touched = false;
    if (f.state == FileState::finished)
      check_finished(f, named_by(f.path, f));
    else
      check_open(f);
  };
  for (const FileKey& key : unvouched_) check(key);
  for (const FileKey& key : touched_) {
    auto it = files_.find(key);
    if (it != files_.end() && it->second->touched) check(key);
  }
  touched_.clear();
}

}  // namespace faultline::tail
