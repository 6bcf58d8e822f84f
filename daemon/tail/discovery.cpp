// Discovery for the files kind: globs → candidates → new, rotated away, deleted; where a new file starts (the
// checkpoint's position, its end at the first start, or 0); the order of a stream's files.
#include <fcntl.h>
#include <fnmatch.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "file_source.hpp"
#include "glob.hpp"
#include "identity.hpp"

namespace faultline::tail {

bool FileSource::warn_once(const std::string& what, const std::string& path) {
  if (warned_.size() > 10000) warned_.clear();
  return warned_.insert(what + path).second;
}

bool FileSource::excluded(const SourceSpec& src, const std::string& path, const std::string& real) const {
  for (const auto& pat : src.exclude) {
    if (::fnmatch(pat.c_str(), path.c_str(), 0) == 0 || ::fnmatch(pat.c_str(), real.c_str(), 0) == 0) return true;
  }
  return false;
}

bool FileSource::self_excluded(const PathIdentity& id) const {
  if (!id.kubernetes) return false;
  for (const auto& pat : ctx_.options.exclude_self) {
    if (::fnmatch(pat.c_str(), id.pod.c_str(), 0) == 0 || ::fnmatch(pat.c_str(), id.container.c_str(), 0) == 0)
      return true;
  }
  return false;
}

// The counters of the first file source whose glob names `path` (the first file source when none does).
SourceTailStats& FileSource::counters_for_path(const std::string& path) {
  for (const auto& src : specs_)
    for (const auto& pattern : src.paths)
      if (glob_matches(pattern, path)) return ctx_.source_stats.of(source_label(src));
  return ctx_.source_stats.of(specs_.empty() ? std::string("file") : source_label(specs_.front()));
}

// A finished file is closed, so once it is unlinked its inode number is free, and ext4 hands it to the next file
// created at once (a writer rotating again: app.log.1 replaced, a new app.log). Its size then differs from what the
// finished file had; the fingerprint tells which it is. A finished file that only grew keeps its fingerprint.
bool FileSource::reused_inode(const FollowedFile& f, const std::string& path, const struct stat& st) const {
  if (f.state != FileState::finished || static_cast<std::uint64_t>(st.st_size) == f.last_size || f.fp.bytes == 0)
    return false;
  auto fp = fingerprint_of_path(path, f.fp.bytes);
  return fp && *fp != f.fp;
}

void FileSource::forget_finished(std::map<FileKey, std::unique_ptr<FollowedFile>>::iterator it) {
  spdlog::debug("{}: a new file has the inode of this finished one", it->second->path);
  files_.erase(it);  // its key stays in finished_order_, as for finished files the rescan drops
}

void FileSource::rescan() {
  TailStats& stats = ctx_.stats;
  ++stats.rescans;
  ctx_.lag_stale = true;
  watch_.begin_scan();
  std::vector<std::string> dirs;
  std::unordered_map<std::string, FileKey> new_by_path;
  std::vector<Candidate> found;
  std::set<FileKey> seen;
  for (const auto& src : specs_) {
    for (const auto& pattern : src.paths) {
      bool complete = true;
      auto paths = expand_glob(pattern, &dirs, &complete);
      if (!complete) watch_.mark_glob_incomplete();
      for (auto& path : paths) {
        struct stat st;
        if (::stat(path.c_str(), &st) != 0) {
          if (errno != ENOENT) {
            ++stats.unreadable;
            ++ctx_.source_stats.of(source_label(src)).unreadable;
            if (warn_once("stat", path)) spdlog::warn("cannot stat {}: {}", path, std::strerror(errno));
          }
          continue;
        }
        if (!S_ISREG(st.st_mode)) continue;
        FileKey key{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        if (new_by_path.count(path)) continue;
        new_by_path[path] = key;
        if (seen.count(key)) continue;  // the same file under another name (a symlink) in this scan
        seen.insert(key);
        auto it = files_.find(key);
        if (it != files_.end() && reused_inode(*it->second, path, st)) {
          forget_finished(it);  // and find the new file below
          it = files_.end();
        }
        if (it != files_.end()) {
          it->second->open_path = path;
          it->second->scanned =
              NameStat{static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_nlink)};
          continue;
        }
        if (excluded_keys_.count(key)) continue;
        found.push_back(Candidate{&src, path, st});
      }
    }
  }
  for (const auto& d : dirs) watch_.watch_dir(d);

  // Files already followed: still named by their path? deleted? grown?
  for (auto it = files_.begin(); it != files_.end();) {
    FollowedFile& f = *it->second;
    auto named = new_by_path.find(f.path);
    bool still_named = named != new_by_path.end() && named->second == f.key;
    if (f.state == FileState::finished) {
      if (!seen.count(f.key) && !still_named) {
        it = files_.erase(it);
        continue;
      }
      check_finished(f, still_named);
      ++it;
      continue;
    }
    if (f.parked() && !seen.count(f.key) && f.presence != Presence::deleted) {
      lose_parked(f);
      ++it;
      continue;
    }
    if (!still_named && f.presence == Presence::named) {
      f.presence = Presence::rotated_away;
      spdlog::debug("{} rotated away (following it to its end)", f.path);
    } else if (still_named && f.presence == Presence::rotated_away) {
      f.presence = Presence::named;  // renamed back
    }
    check_open(f);
    ++it;
  }

  // New files: in each stream, by restart number, then modification time, then name.
  std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.st.st_mtim.tv_sec, a.st.st_mtim.tv_nsec, a.path) <
           std::tie(b.st.st_mtim.tv_sec, b.st.st_mtim.tv_nsec, b.path);
  });
  std::vector<FollowedFile*> added;
  for (auto& c : found) {
    if (FollowedFile* f = discover(c)) added.push_back(f);
  }
  // Files known from the checkpoint were there before the new ones of their stream.
  std::stable_sort(added.begin(), added.end(), [](const FollowedFile* a, const FollowedFile* b) {
    return std::make_tuple(a->ordinal, a->how != FileStart::resumed) <
           std::make_tuple(b->ordinal, b->how != FileStart::resumed);
  });
  for (FollowedFile* f : added) attach(*f);

  for (auto it = new_by_path.begin(); it != new_by_path.end();)
    it = files_.count(it->second) ? std::next(it) : new_by_path.erase(it);
  by_path_.swap(new_by_path);
  // Resolved paths and their directories (symlink targets live elsewhere: /var/log/containers -> /var/log/pods).
  for (auto& [key, f] : files_) {
    if (f->state == FileState::finished || f->real == f->path) continue;
    by_path_.emplace(f->real, key);
    watch_.watch_dir(dir_of(f->real));
  }

  if (initial_scan_) count_gone_while_stopped();
  std::size_t live = 0;
  for (auto& [k, f] : files_)
    if (f->state != FileState::finished) ++live;
  stats.watched_files = live;
  initial_scan_ = false;

  // Every file was just looked at. From now on, which ones must be stat'ed without an event?
  const bool covered = watch_.covers();
  unvouched_.clear();
  touched_.clear();
  for (auto& [key, f] : files_) {
    f->touched = false;
    f->scanned.reset();
    if (!covered || !reported_by_inotify(*f)) unvouched_.push_back(key);
  }
  // A directory watched only now may have gained entries between its listing and its watch: look once more.
  if (covered && watch_.added_watches()) rescan_needed_ = true;
  // Every stream gets a look now and then, whatever it was told.
  ctx_.streams.activate_all();
}

// Checkpointed files that are gone: what was not read of them is lost.
void FileSource::count_gone_while_stopped() {
  for (auto& [key, pos] : restored_) {
    if (pos.finished || files_.count(key)) continue;
    if (pos.size > pos.offset) {
      ctx_.stats.rotated_unread_bytes += pos.size - pos.offset;
      counters_for_path(pos.path).rotated_unread_bytes += pos.size - pos.offset;
      spdlog::warn("{} went away while faultline was stopped; {} bytes were not read", pos.path,
                   pos.size - pos.offset);
    }
  }
}

FollowedFile* FileSource::discover(const Candidate& c) {
  const SourceSpec& src = *c.source;
  TailStats& stats = ctx_.stats;
  SourceTailStats& counters = ctx_.source_stats.of(source_label(src));
  FileKey key{static_cast<std::uint64_t>(c.st.st_dev), static_cast<std::uint64_t>(c.st.st_ino)};
  std::string real = real_path(c.path);
  if (excluded(src, c.path, real)) {
    excluded_keys_.insert(key);
    return nullptr;
  }
  // A file known from the checkpoint keeps the name it had then (app.log renamed to app.log.1 while stopped is
  // still the stream app.log, finished before the new app.log).
  std::string name_path = c.path;
  if (auto r = restored_.find(key); r != restored_.end() && !r->second.path.empty() && r->second.path != c.path) {
    if (auto fp0 = fingerprint_of_path(c.path, r->second.fingerprint.bytes); fp0 && *fp0 == r->second.fingerprint)
      name_path = r->second.path;
  }
  PathIdentity pid = parse_log_path(name_path);
  if (real != c.path) {
    PathIdentity target = parse_log_path(real);
    if (target.kubernetes && !target.restart.empty()) {
      if (pid.kubernetes && target.container_id.empty()) target.container_id = pid.container_id;
      pid = target;
    }
  }
  if (self_excluded(pid)) {
    excluded_keys_.insert(key);
    spdlog::debug("not tailing {}: faultline's own log", c.path);
    return nullptr;
  }
  // Beyond max_open_files the file is looked at through a descriptor held only here, then parked (descriptors.cpp).
  UniqueFd fd(open_for_reading(c.path));
  if (!fd.valid()) {
    if (errno != ENOENT) {
      ++stats.unreadable;
      ++counters.unreadable;
      if (warn_once("open", c.path)) spdlog::warn("cannot open {}: {}", c.path, std::strerror(errno));
    }
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_ino) != key.second)
    return nullptr;  // replaced between the scan and the open; the next scan sees the new one
  ++open_fds_;
  ++stats.files_opened;
  ++counters.files_opened;
  auto f = std::make_unique<FollowedFile>();
  f->key = key;
  f->path = name_path;
  f->open_path = c.path;
  f->real = real;
  f->fd = std::move(fd);
  f->seq = next_seq_++;
  f->counters = &counters;
  f->mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  f->nlink = static_cast<std::uint64_t>(st.st_nlink);
  f->last_size = static_cast<std::uint64_t>(st.st_size);
  f->last_growth = ctx_.clock.steady();
  if (!pid.restart.empty()) f->ordinal = std::stoll(pid.restart);
  f->identity = file_identity(src, ctx_.options.node_name, name_path, pid, f->instance_key);
  auto size = static_cast<std::uint64_t>(st.st_size);
  const int raw_fd = f->fd.get();
  f->fp = fingerprint_of(raw_fd, ctx_.options.fingerprint_bytes).value_or(Fingerprint{});

  // Where to start.
  auto r = restored_.find(key);
  bool from_checkpoint = false;
  if (r != restored_.end()) {
    const FilePosition& pos = r->second;
    auto fp = fingerprint_of(raw_fd, pos.fingerprint.bytes);
    if (fp && *fp == pos.fingerprint) {
      from_checkpoint = true;
      if (pos.finished) {
        f->state = FileState::finished;
        f->offset = pos.offset;
        f->last_size = size;
        f->fd.reset();
        --open_fds_;
        files_.emplace(key, std::move(f));
        finished_order_.push_back(key);
        return nullptr;
      }
      if (size < pos.offset) {
        ++stats.truncations;
        ++counters.truncations;
        spdlog::info("{} was truncated while faultline was stopped; reading it from the start", c.path);
        f->how = FileStart::truncated;
      } else {
        f->offset = pos.offset;
        f->line_next = pos.line;
        f->nl_end = pos.offset;
        f->how = FileStart::resumed;
      }
    } else {
      spdlog::debug("{}: inode reused by a new file (fingerprint differs); reading it from the start", c.path);
    }
  }
  if (!from_checkpoint && ctx_.first_start && initial_scan_ && src.start_at == StartAt::end) {
    f->offset = size;
    f->nl_end = size;
    f->line_next = 1 + (size <= (64u << 20) ? count_newlines(raw_fd, 0, size) : 0);
  }
  // Where each file starts and why, so that a first run that shows nothing explains itself.
  if (f->how == FileStart::resumed) {
    spdlog::info("{}: resuming at byte {} of {} (line {}), where the checkpoint left it", c.path, f->offset, size,
                 f->line_next);
  } else if (f->how != FileStart::truncated) {
    if (!from_checkpoint && ctx_.first_start && initial_scan_ && src.start_at == StartAt::end) {
      if (size > 0)
        spdlog::info("{}: starting at its end (byte {}, line {}): it existed before this first start and start_at "
                     "is end; only lines written from now on are read (--start-at beginning reads it whole)",
                     c.path, size, f->line_next);
      else
        spdlog::info("{}: following from its start (empty so far)", c.path);
    } else if (ctx_.first_start && initial_scan_) {
      spdlog::info("{}: reading from the beginning ({} bytes; start_at is beginning)", c.path, size);
    } else if (initial_scan_) {
      spdlog::info("{}: reading from the beginning ({} bytes): the checkpoint does not know it", c.path, size);
    } else {
      spdlog::info("{}: reading from the beginning ({} bytes): a new file", c.path, size);
    }
  }
  f->start_offset = f->offset;
  f->start_line = f->line_next;
  f->ready = true;
  f->stream = ctx_.streams.find_or_add(f->identity,
                                       src.format != ContainerFormat::auto_detect ? src.format : pid.format_hint, *this);
  ctx_.lag_stale = true;
  if (open_fds_ > ctx_.options.max_open_files) {
    ++stats.open_deferred;
    if (warn_once("fds", ""))
      spdlog::warn("{} files open (tail.max_open_files): descriptors rotate among the others", open_fds_ - 1);
    park(*f);
    descriptor_check_ = true;
  }
  auto* raw = f.get();
  files_.emplace(key, std::move(f));
  return raw;
}

void FileSource::attach(FollowedFile& f) {
  LogicalStream& s = ctx_.streams[f.stream];
  if (!s.current) {
    begin(s, f);
    return;
  }
  auto pos = std::upper_bound(s.pending.begin(), s.pending.end(), &f, [](const FollowedFile* a, const FollowedFile* b) {
    return std::tie(a->ordinal, a->seq) < std::tie(b->ordinal, b->seq);
  });
  s.pending.insert(pos, &f);
  ctx_.streams.activate(f.stream);
}

}  // namespace faultline::tail
