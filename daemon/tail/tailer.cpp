// The Tailer: discovery, identity, rotation, truncation, deletion, inotify wake-ups, stdin and /dev/kmsg.
//
// A logical stream (a path, or a Kubernetes container) reads one file at a time: the current file is read to its
// end before the stream moves to its next file (rename rotation, a new restart, a recreated file), so records of a
// stream stay in order and the decoder's offsets stay those of one file. A file is followed by its descriptor, so a
// rename or an unlink does not lose its tail.
//
// Idle cost. inotify reports every write, truncation, creation, rename and deletion in a watched directory of a local
// filesystem, so while it covers everything (every directory watched, the globs fully expanded, no watch on a network
// filesystem or reached through a symlink) a file without an event has not changed: each rescan_interval only the
// files an event named, and those inotify cannot vouch for (rotated away, deleted, hard-linked), are stat'ed — with
// the same checks as the full rescan, so a copytruncate refilled past the offset is still told by its fingerprint.
// Directory events trigger the full rescan (glob expansion) at once; it also runs every covered_rescan_interval.
// Otherwise the full rescan runs every rescan_interval, as the fallback.
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "faultline/tail.hpp"

namespace faultline {

namespace {

using Key = std::pair<std::uint64_t, std::uint64_t>;  // dev, inode
using Steady = std::chrono::steady_clock::time_point;

// Content fingerprints in checkpoints were written with this seed (not FNV's standard offset basis): keep it, or
// every followed file would look new after an upgrade.
constexpr std::uint64_t kFingerprintSeed = 1469598103934665603ULL;

// Reads up to `want` bytes at `offset`; short only at the end of the file or on error.
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

std::optional<Fingerprint> fingerprint_of(int fd, std::size_t bytes) {
  std::string buf(bytes, '\0');
  ssize_t n = pread_full(fd, buf.data(), bytes, 0);
  if (n < 0) return std::nullopt;
  return Fingerprint{fnv1a64(std::string_view(buf.data(), static_cast<std::size_t>(n)), kFingerprintSeed),
                     static_cast<std::uint32_t>(n)};
}

std::optional<Fingerprint> fingerprint_of_path(const std::string& path, std::size_t bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto fp = fingerprint_of(fd, bytes);
  ::close(fd);
  return fp;
}

// Newlines in [from, to) of the file.
std::uint64_t count_newlines(int fd, std::uint64_t from, std::uint64_t to) {
  std::uint64_t count = 0;
  std::string buf(256 * 1024, '\0');
  while (from < to) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
    ssize_t n = pread_full(fd, buf.data(), want, from);
    if (n <= 0) break;
    count += static_cast<std::uint64_t>(std::count(buf.data(), buf.data() + n, '\n'));
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

std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

Time boot_wall_time() {
  timespec rt{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &rt);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  auto ns = (static_cast<std::int64_t>(rt.tv_sec) - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
  return Time{Duration{ns}};
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

enum class FileState : std::uint8_t { pending, current, finished };

struct TFile {
  Key key;
  std::string path;       // as found (its name in the stream)
  std::string real;       // resolved
  Fingerprint fp;
  int fd = -1;
  std::uint64_t offset = 0;     // read up to here
  std::uint64_t line_next = 1;  // number of the line after the last newline read
  std::uint64_t nl_end = 0;     // offset just after the last newline read
  std::uint64_t start_offset = 0;
  std::uint64_t start_line = 1;
  std::uint64_t last_size = 0;  // at the last stat
  std::int64_t ordinal = -1;    // restart number; orders a stream's files
  std::int64_t mtime_ns = 0;
  std::uint64_t nlink = 1;      // at the last stat
  std::uint64_t seq = 0;        // discovery order
  StreamIdentity identity;      // of the stream in this file
  std::string instance_key;     // compared (pod uid + restart)
  std::uint32_t stream = 0;
  FileState state = FileState::pending;
  FileStart how = FileStart::first;
  bool rotated = false;  // its path no longer names it
  bool deleted = false;  // unlinked
  bool ready = false;
  bool at_eof = false;
  bool seen = false;     // in the last rescan
  bool touched = false;  // an inotify event named it since it was last stat'ed
  bool scanned = false;  // the current full rescan stat'ed it by name (scan_size, scan_nlink): no fstat needed
  std::uint64_t scan_size = 0, scan_nlink = 0;
  Steady last_growth{};
};

struct TStream {
  StreamIdentity identity;
  ContainerFormat format = ContainerFormat::auto_detect;
  std::uint32_t handle = 0;
  bool opened = false;  // handler.open_stream was called
  bool had_file = false;
  std::string last_instance_key;
  TFile* current = nullptr;
  std::vector<TFile*> pending;  // ordered
  Steady last_data{};
  bool idle_sent = true;
  bool active = false;  // listed in Impl::active
};

// Nothing to read, no successor waiting, no timer running: poll_once() leaves the stream alone until something
// happens to one of its files (Impl::activate).
bool quiet(const TStream& s) {
  if (!s.idle_sent || !s.pending.empty()) return false;
  return !s.current || (!s.current->ready && !s.current->deleted);
}

struct Candidate {
  const SourceSpec* source;
  std::string path;
  struct stat st;
};

}  // namespace

struct Tailer::Impl {
  TailOptions opt;
  Clock& clock;
  TailHandler& handler;
  std::vector<SourceSpec> sources;
  TailStats stats;

  std::map<Key, std::unique_ptr<TFile>> files;
  std::deque<Key> finished_order;
  std::vector<std::unique_ptr<TStream>> streams;
  std::unordered_map<std::string, std::uint32_t> stream_by_logical;
  std::unordered_map<std::string, Key> by_path;  // path as found and resolved path -> file
  std::map<Key, FilePosition> restored;
  std::set<Key> restore_checked;
  bool first_start = true;
  bool initial_scan = true;
  bool stopped = false;
  std::uint64_t next_seq = 0;
  std::size_t open_fds = 0;
  std::unordered_set<std::string> warned;  // paths already logged as unreadable / excluded
  std::set<Key> excluded_keys;

  int inotify_fd = -1;
  std::unordered_map<int, std::string> wd_dir;
  std::unordered_map<std::string, int> dir_wd;
  bool inotify_warned = false;
  bool rescan_needed = true;
  Steady next_rescan{};       // the next check (full rescan, or stat of what inotify did not vouch for)
  Steady next_full_rescan{};  // while inotify covers everything
  // What inotify covers, as of the last full rescan (see the top of the file).
  bool watch_failed = false;           // a directory could not be watched
  bool glob_incomplete = false;        // a directory a glob needs is missing or unreadable
  bool open_deferred = false;          // a file waits for a descriptor
  std::unordered_set<int> unsure_wds;  // watches on another filesystem, or on a directory reached through a symlink
  std::size_t new_watches = 0;         // added by the current full rescan
  std::vector<Key> unvouched;          // files stat'ed at every check: inotify does not report their changes
  std::vector<Key> touched;            // files an event named since the last check

  std::optional<Steady> switch_deadline;  // of the streams' timers, as of the end of the last poll_once()
  // Streams that are not quiet(): the only ones an idle poll_once() looks at (touching every stream's state at every
  // wake-up is most of the idle cost once the rescan is cheap).
  std::vector<std::uint32_t> active;
  // lag_by_source(), until a file's size, offset or state changes.
  mutable std::vector<std::pair<std::string, std::uint64_t>> lag_cache;
  mutable bool lag_stale = true;
  std::string read_buf;
  std::string event_path;  // reused by drain_inotify
  std::size_t cursor = 0;  // round-robin start among streams

  // stdin
  int stdin_stream = -1;
  bool stdin_eof = false;

  // kmsg
  int kmsg_fd = -1;
  bool kmsg_is_file = false;
  std::string kmsg_path;
  int kmsg_stream = -1;
  std::string kmsg_boot_id;
  Time kmsg_boot{};
  std::uint64_t kmsg_skip_through = 0;  // records with seq <= this were processed before a restart
  bool kmsg_skip = false;
  std::uint64_t kmsg_last_seq = 0;
  bool kmsg_any = false;
  std::uint64_t kmsg_offset = 0, kmsg_line = 1;
  std::uint64_t kmsg_file_offset = 0;
  std::string kmsg_carry;

  Impl(TailOptions o, Clock& c, TailHandler& h) : opt(std::move(o)), clock(c), handler(h) {
    read_buf.resize(opt.read_chunk_bytes);
    if (opt.use_inotify) {
      inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (inotify_fd < 0) spdlog::warn("inotify unavailable ({}); polling every {}", std::strerror(errno),
                                       format_duration(opt.rescan_interval));
    }
  }

  ~Impl() {
    for (auto& [k, f] : files)
      if (f->fd >= 0) ::close(f->fd);
    if (inotify_fd >= 0) ::close(inotify_fd);
    if (kmsg_fd >= 0) ::close(kmsg_fd);
  }

  // ---- streams ----

  std::uint32_t stream_for(const StreamIdentity& identity, ContainerFormat format) {
    auto it = stream_by_logical.find(identity.logical);
    if (it != stream_by_logical.end()) return it->second;
    auto s = std::make_unique<TStream>();
    s->identity = identity;
    s->format = format;
    auto index = static_cast<std::uint32_t>(streams.size());
    streams.push_back(std::move(s));
    stream_by_logical.emplace(identity.logical, index);
    return index;
  }

  void activate(std::uint32_t index) {
    if (index >= streams.size()) return;
    TStream& s = *streams[index];
    if (!s.active) {
      s.active = true;
      active.push_back(index);
    }
  }

  void ensure_open(TStream& s) {
    if (!s.opened) {
      s.handle = handler.open_stream(s.identity, s.format);
      s.opened = true;
    }
  }

  // ---- watches ----

  void watch_dir(const std::string& dir) {
    if (inotify_fd < 0 || dir_wd.count(dir)) return;
    int wd = ::inotify_add_watch(inotify_fd, dir.c_str(),
                                 IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_ATTRIB |
                                     IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
    if (wd < 0) {
      watch_failed = true;
      if (!inotify_warned) {
        spdlog::warn("cannot watch {} ({}); relying on the {} rescan", dir, std::strerror(errno),
                     format_duration(opt.rescan_interval));
        inotify_warned = true;
      }
      return;
    }
    auto old = wd_dir.find(wd);  // the same directory under another name
    if (old != wd_dir.end()) {
      dir_wd.erase(old->second);
      unsure_wds.insert(wd);  // events carry one of its names only
    } else {
      ++new_watches;
      // A directory reached through a symlink can be swapped without an event in it; another filesystem may change
      // without events.
      if (real_path(dir) != dir || !inotify_complete_on(dir)) unsure_wds.insert(wd);
    }
    wd_dir[wd] = dir;
    dir_wd[dir] = wd;
    stats.watched_dirs = wd_dir.size();
  }

  void forget_watch(std::unordered_map<int, std::string>::iterator it) {
    dir_wd.erase(it->second);
    unsure_wds.erase(it->first);
    wd_dir.erase(it);
    stats.watched_dirs = wd_dir.size();
  }

  // While this holds, a file or directory without an inotify event has not changed (as of the last full rescan).
  bool inotify_covers() const {
    return inotify_fd >= 0 && !watch_failed && !glob_incomplete && !open_deferred && unsure_wds.empty();
  }

  // inotify reports the changes of `f`: its events arrive under a name that maps back to it.
  bool reported_by_inotify(const TFile& f) const {
    auto named = [&](const std::string& path) {
      auto b = by_path.find(path);
      return b != by_path.end() && b->second == f.key;
    };
    if (f.state == FileState::finished) {
      // Only a finished file that keeps its name is looked at (late bytes); a rename is a directory event.
      if (!named(f.path)) return true;
      return f.nlink == 1 && dir_wd.count(dir_of(f.path)) > 0;
    }
    // Writes show under the resolved name (a symlink is resolved when the writer opens the file).
    return !f.rotated && !f.deleted && f.nlink == 1 && named(f.real) && dir_wd.count(dir_of(f.real)) > 0;
  }

  void drain_inotify() {
    if (inotify_fd < 0) return;
    alignas(inotify_event) char buf[64 * 1024];
    while (true) {
      ssize_t n = ::read(inotify_fd, buf, sizeof buf);
      if (n <= 0) break;
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        p += sizeof(inotify_event) + ev->len;
        ++stats.inotify_events;
        if (ev->mask & IN_Q_OVERFLOW) {
          ++stats.inotify_overflows;
          rescan_needed = true;
          continue;
        }
        if (ev->mask & IN_IGNORED) {
          auto it = wd_dir.find(ev->wd);
          if (it != wd_dir.end()) forget_watch(it);
          rescan_needed = true;
          continue;
        }
        auto it = wd_dir.find(ev->wd);
        if (it == wd_dir.end()) continue;
        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
          // A moved directory keeps its watch but no longer has the name we know it by: drop it, so that the rescan
          // watches whatever now has that name.
          ::inotify_rm_watch(inotify_fd, ev->wd);
          forget_watch(it);
          rescan_needed = true;
          continue;
        }
        if (ev->len == 0) continue;
        event_path.assign(it->second);
        if (event_path != "/") event_path += '/';
        event_path += ev->name;
        auto f = by_path.find(event_path);
        if (f != by_path.end()) {
          auto file = files.find(f->second);
          if (file != files.end()) {
            TFile& tf = *file->second;
            tf.ready = true;
            if (tf.state != FileState::finished) activate(tf.stream);
            if (!tf.touched) {
              tf.touched = true;
              touched.push_back(tf.key);
            }
          }
        }
        if (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB)) rescan_needed = true;
      }
    }
  }

  // ---- discovery ----

  bool excluded(const SourceSpec& src, const std::string& path, const std::string& real) const {
    for (const auto& pat : src.exclude) {
      if (::fnmatch(pat.c_str(), path.c_str(), 0) == 0 || ::fnmatch(pat.c_str(), real.c_str(), 0) == 0) return true;
    }
    return false;
  }

  bool self_excluded(const PathIdentity& id) const {
    if (!id.kubernetes) return false;
    for (const auto& pat : opt.exclude_self) {
      if (::fnmatch(pat.c_str(), id.pod.c_str(), 0) == 0 || ::fnmatch(pat.c_str(), id.container.c_str(), 0) == 0)
        return true;
    }
    return false;
  }

  StreamIdentity identity_for(const SourceSpec& src, const std::string& path, const PathIdentity& pid,
                              std::string& instance_key) const {
    StreamIdentity id;
    id.set_label(LabelKey::source, src.source.empty() ? "file" : src.source);
    std::string derived;
    if (pid.kubernetes) {
      derived = pid.namespace_ + "/" + pid.pod + "/" + pid.container;
      id.set_label(LabelKey::namespace_, pid.namespace_);
      id.set_label(LabelKey::pod, pid.pod);
      id.set_label(LabelKey::container, pid.container);
      if (!pid.restart.empty()) id.set_label(LabelKey::restart, pid.restart);
      id.instance = pid.restart.empty() ? pid.container_id.substr(0, 12) : pid.restart;
      instance_key = pid.uid + "/" + pid.restart + "/" + pid.container_id;
    } else if (pid.docker) {
      derived = "docker/" + pid.container_id.substr(0, 12);
      id.set_label(LabelKey::container, pid.container_id.substr(0, 12));
      id.instance = pid.container_id.substr(0, 12);
      instance_key = pid.container_id;
    } else {
      derived = path;
    }
    if (!opt.node_name.empty()) id.set_label(LabelKey::node, opt.node_name);
    for (const auto& [k, v] : src.labels) set_field(id.labels, k, v);
    if (src.name.empty()) {
      id.name = derived;
    } else {
      std::string base = base_of(path);
      auto dot = base.rfind('.');
      std::string n = src.name;
      n = replace_all(n, "{path}", path);
      n = replace_all(n, "{file}", base);
      n = replace_all(n, "{stem}", dot == std::string::npos || dot == 0 ? base : base.substr(0, dot));
      n = replace_all(n, "{namespace}", pid.namespace_);
      n = replace_all(n, "{pod}", pid.pod);
      n = replace_all(n, "{container}", pid.container);
      id.name = n;
    }
    id.logical = id.name;
    return id;
  }

  bool warn_once(const std::string& what, const std::string& path) {
    if (warned.size() > 10000) warned.clear();
    return warned.insert(what + path).second;
  }

  void rescan() {
    ++stats.rescans;
    lag_stale = true;
    watch_failed = false;
    glob_incomplete = false;
    open_deferred = false;
    new_watches = 0;
    std::vector<std::string> dirs;
    std::unordered_map<std::string, Key> new_by_path;
    std::vector<Candidate> found;
    std::set<Key> seen;
    for (const auto& src : sources) {
      if (src.kind != SourceKind::files) continue;
      for (const auto& pattern : src.paths) {
        bool complete = true;
        auto paths = expand_glob(pattern, &dirs, &complete);
        if (!complete) glob_incomplete = true;
        for (auto& path : paths) {
          struct stat st;
          if (::stat(path.c_str(), &st) != 0) {
            if (errno != ENOENT) {
              ++stats.unreadable;
              if (warn_once("stat", path)) spdlog::warn("cannot stat {}: {}", path, std::strerror(errno));
            }
            continue;
          }
          if (!S_ISREG(st.st_mode)) continue;
          Key key{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
          if (new_by_path.count(path)) continue;
          new_by_path[path] = key;
          if (seen.count(key)) continue;  // the same file under another name (a symlink) in this scan
          seen.insert(key);
          auto it = files.find(key);
          if (it != files.end()) {
            TFile& f = *it->second;
            f.seen = true;
            f.scanned = true;
            f.scan_size = static_cast<std::uint64_t>(st.st_size);
            f.scan_nlink = static_cast<std::uint64_t>(st.st_nlink);
            continue;
          }
          if (excluded_keys.count(key)) continue;
          found.push_back(Candidate{&src, path, st});
        }
      }
    }
    for (const auto& d : dirs) watch_dir(d);

    // Files already followed: still named by their path? deleted? grown?
    for (auto it = files.begin(); it != files.end();) {
      TFile& f = *it->second;
      auto named = new_by_path.find(f.path);
      bool still_named = named != new_by_path.end() && named->second == f.key;
      if (f.state == FileState::finished) {
        if (!seen.count(f.key) && !still_named) {
          it = files.erase(it);
          continue;
        }
        check_finished(f, still_named);
        ++it;
        continue;
      }
      if (!still_named && !f.rotated) {
        f.rotated = true;
        spdlog::debug("{} rotated away (following it to its end)", f.path);
      } else if (still_named && f.rotated) {
        f.rotated = false;  // renamed back
      }
      check_open(f);
      ++it;
    }

    // New files: in each stream, by restart number, then modification time, then name.
    std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.st.st_mtim.tv_sec, a.st.st_mtim.tv_nsec, a.path) <
             std::tie(b.st.st_mtim.tv_sec, b.st.st_mtim.tv_nsec, b.path);
    });
    std::vector<TFile*> added;
    for (auto& c : found) {
      if (TFile* f = discover(c)) added.push_back(f);
    }
    // Files known from the checkpoint were there before the new ones of their stream.
    std::stable_sort(added.begin(), added.end(), [](const TFile* a, const TFile* b) {
      return std::make_tuple(a->ordinal, a->how != FileStart::resumed) <
             std::make_tuple(b->ordinal, b->how != FileStart::resumed);
    });
    for (TFile* f : added) attach(*f);

    for (auto it = new_by_path.begin(); it != new_by_path.end();)
      it = files.count(it->second) ? std::next(it) : new_by_path.erase(it);
    by_path.swap(new_by_path);
    // Resolved paths and their directories (symlink targets live elsewhere: /var/log/containers -> /var/log/pods).
    for (auto& [key, f] : files) {
      if (f->state == FileState::finished || f->real == f->path) continue;
      by_path.emplace(f->real, key);
      watch_dir(dir_of(f->real));
    }

    if (initial_scan) {
      // Checkpointed files that are gone: what was not read of them is lost.
      for (auto& [key, pos] : restored) {
        if (pos.finished || files.count(key)) continue;
        if (pos.size > pos.offset) {
          stats.rotated_unread_bytes += pos.size - pos.offset;
          spdlog::warn("{} went away while faultline was stopped; {} bytes were not read", pos.path,
                       pos.size - pos.offset);
        }
      }
    }
    std::size_t live = 0;
    for (auto& [k, f] : files)
      if (f->state != FileState::finished) ++live;
    stats.watched_files = live;
    initial_scan = false;

    // Every file was just looked at. From now on, which ones must be stat'ed without an event?
    const bool covered = inotify_covers();
    unvouched.clear();
    touched.clear();
    for (auto& [key, f] : files) {
      f->touched = false;
      f->scanned = false;
      if (!covered || !reported_by_inotify(*f)) unvouched.push_back(key);
    }
    // A directory watched only now may have gained entries between its listing and its watch: look once more.
    if (covered && new_watches > 0) rescan_needed = true;
    // Every stream gets a look now and then, whatever it was told.
    for (std::uint32_t i = 0; i < streams.size(); ++i) activate(i);
  }

  // Between full rescans while inotify covers everything: stat the files an event named and those inotify does not
  // vouch for, with the same checks as the full rescan.
  void check_files() {
    auto check = [&](const Key& key) {
      auto it = files.find(key);
      if (it == files.end()) return;
      TFile& f = *it->second;
      f.touched = false;
      if (f.state == FileState::finished) {
        auto named = by_path.find(f.path);
        check_finished(f, named != by_path.end() && named->second == f.key);
      } else {
        check_open(f);
      }
    };
    for (const Key& key : unvouched) check(key);
    for (const Key& key : touched) {
      auto it = files.find(key);
      if (it != files.end() && it->second->touched) check(key);
    }
    touched.clear();
  }

  // Bytes written to a finished file after the stream moved on are not read (counted once per growth).
  void check_finished(TFile& f, bool still_named) {
    if (!still_named) return;
    std::uint64_t size = 0;
    if (f.scanned) {
      size = f.scan_size;
    } else {
      struct stat st;
      if (::stat(f.path.c_str(), &st) != 0) return;
      size = static_cast<std::uint64_t>(st.st_size);
    }
    if (size > f.last_size) {
      stats.late_bytes += size - f.last_size;
      f.last_size = size;
    }
  }

  // A followed file: deleted? grown? truncated, or its content replaced?
  void check_open(TFile& f) {
    std::uint64_t size = 0;
    if (f.scanned) {  // the rescan's stat of its name is a stat of this file
      f.scanned = false;
      size = f.scan_size;
      f.nlink = f.scan_nlink;
    } else {
      struct stat st;
      if (f.fd < 0 || ::fstat(f.fd, &st) != 0) return;
      size = static_cast<std::uint64_t>(st.st_size);
      f.nlink = static_cast<std::uint64_t>(st.st_nlink);
    }
    lag_stale = true;
    if (f.nlink == 0 && !f.deleted) {
      f.deleted = true;
      activate(f.stream);
      spdlog::debug("{} deleted (reading it to its end)", f.path);
    }
    if (size != f.offset) {
      f.ready = true;
      activate(f.stream);
    }
    if (size != f.last_size && f.state == FileState::current && f.fp.bytes > 0 && size >= f.offset) {
      // Content replaced in place (copytruncate refilled past our offset before we looked)?
      auto fp = fingerprint_of(f.fd, f.fp.bytes);
      if (fp && fp->bytes == f.fp.bytes && fp->hash != f.fp.hash) truncate_restart(f, "content replaced");
    }
    f.last_size = size;
  }

  TFile* discover(const Candidate& c) {
    const SourceSpec& src = *c.source;
    Key key{static_cast<std::uint64_t>(c.st.st_dev), static_cast<std::uint64_t>(c.st.st_ino)};
    std::string real = real_path(c.path);
    if (excluded(src, c.path, real)) {
      excluded_keys.insert(key);
      return nullptr;
    }
    // A file known from the checkpoint keeps the name it had then (app.log renamed to app.log.1 while stopped is
    // still the stream app.log, finished before the new app.log).
    std::string name_path = c.path;
    if (auto r = restored.find(key); r != restored.end() && !r->second.path.empty() && r->second.path != c.path) {
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
      excluded_keys.insert(key);
      spdlog::debug("not tailing {}: faultline's own log", c.path);
      return nullptr;
    }
    if (open_fds >= opt.max_open_files) {
      ++stats.open_deferred;
      open_deferred = true;
      if (warn_once("fds", "")) spdlog::warn("{} files open: more wait for descriptors", open_fds);
      return nullptr;
    }
    int fd = ::open(c.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT) {
        ++stats.unreadable;
        if (warn_once("open", c.path)) spdlog::warn("cannot open {}: {}", c.path, std::strerror(errno));
      }
      return nullptr;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_ino) != key.second) {
      ::close(fd);  // replaced between the scan and the open; the next scan sees the new one
      return nullptr;
    }
    ++open_fds;
    ++stats.files_opened;
    auto f = std::make_unique<TFile>();
    f->key = key;
    f->path = name_path;
    f->real = real;
    f->fd = fd;
    f->seq = next_seq++;
    f->seen = true;
    f->mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    f->nlink = static_cast<std::uint64_t>(st.st_nlink);
    f->last_size = static_cast<std::uint64_t>(st.st_size);
    f->last_growth = clock.steady();
    if (!pid.restart.empty()) f->ordinal = std::stoll(pid.restart);
    std::string instance_key;
    StreamIdentity identity = identity_for(src, name_path, pid, instance_key);
    f->identity = identity;
    f->instance_key = instance_key;
    auto size = static_cast<std::uint64_t>(st.st_size);
    f->fp = fingerprint_of(fd, opt.fingerprint_bytes).value_or(Fingerprint{});

    // Where to start.
    auto r = restored.find(key);
    bool from_checkpoint = false;
    if (r != restored.end()) {
      const FilePosition& pos = r->second;
      auto fp = fingerprint_of(fd, pos.fingerprint.bytes);
      if (fp && *fp == pos.fingerprint) {
        from_checkpoint = true;
        if (pos.finished) {
          f->state = FileState::finished;
          f->offset = pos.offset;
          f->last_size = size;
          ::close(f->fd);
          f->fd = -1;
          --open_fds;
          files.emplace(key, std::move(f));
          finished_order.push_back(key);
          return nullptr;
        }
        if (size < pos.offset) {
          ++stats.truncations;
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
    if (!from_checkpoint && first_start && initial_scan && src.start_at == StartAt::end) {
      f->offset = size;
      f->nl_end = size;
      f->line_next = 1 + (size <= (64u << 20) ? count_newlines(fd, 0, size) : 0);
    }
    f->start_offset = f->offset;
    f->start_line = f->line_next;
    f->ready = true;
    f->stream = stream_for(identity, src.format != ContainerFormat::auto_detect ? src.format : pid.format_hint);
    lag_stale = true;
    auto* raw = f.get();
    files.emplace(key, std::move(f));
    return raw;
  }

  void attach(TFile& f) {
    TStream& s = *streams[f.stream];
    if (!s.current) {
      begin(s, f);
      return;
    }
    auto pos = std::upper_bound(s.pending.begin(), s.pending.end(), &f, [](const TFile* a, const TFile* b) {
      return std::tie(a->ordinal, a->seq) < std::tie(b->ordinal, b->seq);
    });
    s.pending.insert(pos, &f);
    activate(f.stream);
  }

  void begin(TStream& s, TFile& f) {
    ensure_open(s);
    FileStart how = f.how;
    if (s.had_file && how != FileStart::resumed) {
      how = f.instance_key != s.last_instance_key ? FileStart::new_instance : FileStart::rotated;
      ++stats.rotations;
    } else if (s.had_file && f.instance_key != s.last_instance_key) {
      how = FileStart::new_instance;
    }
    s.current = &f;
    activate(f.stream);
    s.had_file = true;
    s.last_instance_key = f.instance_key;
    f.state = FileState::current;
    f.ready = true;
    f.last_growth = clock.steady();
    spdlog::debug("{}: reading {} from offset {} ({})", s.identity.name, f.path, f.offset, to_string(how));
    handler.begin_file(s.handle, how, f.identity, f.offset, f.line_next);
  }

  void truncate_restart(TFile& f, const char* why) {
    ++stats.truncations;
    spdlog::info("{} {} (copytruncate?): reading it again from the start", f.path, why);
    f.offset = 0;
    f.nl_end = 0;
    f.line_next = 1;
    f.at_eof = false;
    f.ready = true;
    activate(f.stream);
    lag_stale = true;
    f.fp = fingerprint_of(f.fd, opt.fingerprint_bytes).value_or(Fingerprint{});
    if (f.state == FileState::current) {
      TStream& s = *streams[f.stream];
      handler.begin_file(s.handle, FileStart::truncated, f.identity, 0, 1);
    } else {
      f.start_offset = 0;
      f.start_line = 1;
    }
  }

  void finish_file(TStream& s, TFile& f) {
    if (f.deleted) ++stats.deleted;
    if (stats.watched_files > 0) --stats.watched_files;
    if (f.fd >= 0) {
      ::close(f.fd);
      f.fd = -1;
      --open_fds;
    }
    f.state = FileState::finished;
    f.last_size = f.offset;
    lag_stale = true;
    s.current = nullptr;
    if (f.deleted) {
      files.erase(f.key);  // gone: nothing to remember
    } else {
      finished_order.push_back(f.key);
      while (finished_order.size() > opt.max_finished) {
        auto it = files.find(finished_order.front());
        if (it != files.end() && it->second->state == FileState::finished) files.erase(it);
        finished_order.pop_front();
      }
    }
  }

  // ---- reading ----

  // Reads what `f` has, up to `budget` bytes. Returns the bytes read.
  std::size_t read_file(TStream& s, TFile& f, std::size_t budget) {
    struct stat st;
    if (::fstat(f.fd, &st) != 0) return 0;
    auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < f.offset) truncate_restart(f, "shrank below the read offset");
    f.last_size = size;
    lag_stale = true;
    std::size_t total = 0;
    Time now = clock.now();
    while (total < budget) {
      std::size_t want = std::min(read_buf.size(), budget - total);
      ssize_t n = ::pread(f.fd, read_buf.data(), want, static_cast<off_t>(f.offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        ++stats.unreadable;
        if (warn_once("read", f.path)) spdlog::warn("cannot read {}: {}", f.path, std::strerror(errno));
        f.at_eof = true;
        f.ready = false;
        break;
      }
      if (n == 0) {
        f.at_eof = true;
        f.ready = false;
        break;
      }
      std::string_view bytes(read_buf.data(), static_cast<std::size_t>(n));
      auto nl = static_cast<std::uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
      if (nl > 0) {
        f.line_next += nl;
        f.nl_end = f.offset + bytes.rfind('\n') + 1;
      }
      f.offset += static_cast<std::uint64_t>(n);
      f.at_eof = false;
      total += static_cast<std::size_t>(n);
      stats.bytes += static_cast<std::uint64_t>(n);
      s.last_data = clock.steady();
      s.idle_sent = false;
      f.last_growth = s.last_data;
      handler.data(s.handle, bytes, now);
      if (stopped) break;
    }
    if (f.fp.bytes < opt.fingerprint_bytes && f.offset > f.fp.bytes) {
      f.fp = fingerprint_of(f.fd, opt.fingerprint_bytes).value_or(f.fp);
    }
    if (total >= budget) f.ready = true;  // maybe more
    return total;
  }

  // The current file is done when it is at its end, quiet for rotate_wait, and either has a successor or is gone.
  void maybe_switch(TStream& s, Steady now_steady) {
    while (s.current) {
      TFile& f = *s.current;
      if (!f.at_eof || f.ready) return;
      if (s.pending.empty() && !f.deleted) return;
      if (now_steady - f.last_growth < opt.rotate_wait) return;
      // One last look: nothing more?
      struct stat st;
      if (f.fd >= 0 && ::fstat(f.fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > f.offset) {
        f.ready = true;
        return;
      }
      finish_file(s, f);
      if (s.pending.empty()) return;
      TFile* next = s.pending.front();
      s.pending.erase(s.pending.begin());
      begin(s, *next);
    }
  }

  // When the stream's timers (rotate_wait of a finished-looking file, the partial-line timeout) next need a poll.
  void stream_deadline(const TStream& s, std::optional<Steady>& best) const {
    using std::chrono::steady_clock;
    if (s.current && s.current->at_eof && (!s.pending.empty() || s.current->deleted)) {
      Steady t = s.current->last_growth + std::chrono::duration_cast<steady_clock::duration>(opt.rotate_wait);
      if (!best || t < *best) best = t;
    }
    if (!s.idle_sent) {
      Steady t = s.last_data + std::chrono::duration_cast<steady_clock::duration>(opt.partial_timeout);
      if (!best || t < *best) best = t;
    }
  }

  // ---- stdin ----

  bool read_stdin(std::size_t budget) {
    if (stdin_stream < 0 || stdin_eof) return false;
    TStream& s = *streams[static_cast<std::size_t>(stdin_stream)];
    std::size_t total = 0;
    while (total < budget) {
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
      ssize_t n = ::read(0, read_buf.data(), std::min(read_buf.size(), budget - total));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) return false;
        spdlog::warn("cannot read standard input: {}", std::strerror(errno));
        n = 0;
      }
      if (n == 0) {
        stdin_eof = true;
        handler.end_of_stream(s.handle, clock.now());
        s.idle_sent = true;
        return false;
      }
      total += static_cast<std::size_t>(n);
      stats.bytes += static_cast<std::uint64_t>(n);
      s.last_data = clock.steady();
      s.idle_sent = false;
      activate(static_cast<std::uint32_t>(stdin_stream));
      handler.data(s.handle, std::string_view(read_buf.data(), static_cast<std::size_t>(n)), clock.now());
      if (stopped) return false;
    }
    return true;
  }

  // ---- kmsg ----

  void open_kmsg(const SourceSpec& src, const KmsgPosition* pos) {
    kmsg_path = src.paths.empty() ? "/dev/kmsg" : src.paths.front();
    kmsg_fd = ::open(kmsg_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (kmsg_fd < 0) {
      if (src.optional)
        spdlog::info("kernel log {} not readable ({}); not following it", kmsg_path, std::strerror(errno));
      else
        spdlog::error("cannot open kernel log {}: {}", kmsg_path, std::strerror(errno));
      ++stats.unreadable;
      return;
    }
    struct stat st;
    ::fstat(kmsg_fd, &st);
    kmsg_is_file = S_ISREG(st.st_mode);
    kmsg_boot_id = kmsg_is_file ? "file:" + kmsg_path : read_boot_id();
    kmsg_boot = boot_wall_time();
    StreamIdentity id;
    id.name = "kmsg";
    id.logical = opt.node_name.empty() ? "kmsg" : "kmsg/" + opt.node_name;
    id.instance = kmsg_boot_id;
    id.set_label(LabelKey::source, src.source.empty() ? "kmsg" : src.source);
    if (!opt.node_name.empty()) id.set_label(LabelKey::node, opt.node_name);
    for (const auto& [k, v] : src.labels) set_field(id.labels, k, v);
    if (!src.name.empty()) id.name = src.name;
    kmsg_stream = static_cast<int>(stream_for(id, ContainerFormat::raw));
    TStream& s = *streams[static_cast<std::size_t>(kmsg_stream)];
    ensure_open(s);
    s.had_file = true;
    if (pos && pos->valid && pos->boot_id == kmsg_boot_id) {
      kmsg_skip = true;
      kmsg_skip_through = pos->seq;
      kmsg_last_seq = pos->seq;
      kmsg_any = true;
      kmsg_offset = pos->offset;
      kmsg_line = pos->line;
      handler.begin_file(s.handle, FileStart::resumed, s.identity, kmsg_offset, kmsg_line);
    } else {
      if (first_start && src.start_at == StartAt::end) {
        if (kmsg_is_file)
          kmsg_file_offset = static_cast<std::uint64_t>(st.st_size);
        else
          ::lseek(kmsg_fd, 0, SEEK_END);
      }
      handler.begin_file(s.handle, FileStart::first, s.identity, 0, 1);
    }
  }

  void kmsg_record(std::string_view rec, std::string& out) {
    auto r = parse_kmsg_record(rec);
    if (!r) return;
    if (kmsg_skip && r->seq <= kmsg_skip_through) return;
    kmsg_skip = false;
    if (kmsg_any && r->seq > kmsg_last_seq + 1 && !kmsg_is_file) stats.kmsg_lost += r->seq - kmsg_last_seq - 1;
    kmsg_last_seq = r->seq;
    kmsg_any = true;
    ++stats.kmsg_records;
    std::string line = format_kmsg_line(*r, kmsg_boot);
    line += '\n';
    kmsg_offset += line.size();
    ++kmsg_line;
    out += line;
  }

  bool read_kmsg(std::size_t budget) {
    if (kmsg_fd < 0) return false;
    TStream& s = *streams[static_cast<std::size_t>(kmsg_stream)];
    std::string out;
    bool more = false;
    if (kmsg_is_file) {
      ssize_t n = ::pread(kmsg_fd, read_buf.data(), std::min(read_buf.size(), budget),
                          static_cast<off_t>(kmsg_file_offset));
      if (n > 0) {
        kmsg_file_offset += static_cast<std::uint64_t>(n);
        kmsg_carry.append(read_buf.data(), static_cast<std::size_t>(n));
        std::size_t start = 0;
        while (true) {
          auto nl = kmsg_carry.find('\n', start);
          if (nl == std::string::npos) break;
          std::string_view rec(kmsg_carry.data() + start, nl - start);
          if (!rec.empty() && rec.front() != ' ') kmsg_record(rec, out);
          start = nl + 1;
        }
        kmsg_carry.erase(0, start);
        more = static_cast<std::size_t>(n) == std::min(read_buf.size(), budget);
      }
    } else {
      char rec[16 * 1024];
      std::size_t total = 0;
      while (total < budget) {
        ssize_t n = ::read(kmsg_fd, rec, sizeof rec - 1);
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EPIPE) {  // overwritten before we read it; the next read continues after the gap
            continue;
          }
          break;  // EAGAIN: nothing more
        }
        if (n == 0) break;
        total += static_cast<std::size_t>(n);
        kmsg_record(std::string_view(rec, static_cast<std::size_t>(n)), out);
      }
      more = total >= budget;
    }
    if (!out.empty()) {
      stats.bytes += out.size();
      s.last_data = clock.steady();
      handler.data(s.handle, out, clock.now());
    }
    return more;
  }

  // ---- the step ----

  bool poll_once() {
    if (stopped) return false;
    drain_inotify();
    Steady now = clock.steady();
    if (rescan_needed || now >= next_rescan) {
      const bool full = rescan_needed || now >= next_full_rescan || !inotify_covers();
      rescan_needed = false;
      if (full) {
        rescan();
        next_full_rescan =
            now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(opt.covered_rescan_interval);
      } else {
        check_files();
      }
      next_rescan = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(opt.rescan_interval);
    }
    std::size_t budget = opt.max_bytes_per_poll;
    bool more = false;
    if (stdin_stream >= 0) more |= read_stdin(budget / 4 + 1);
    if (kmsg_fd >= 0) more |= read_kmsg(budget / 4 + 1);
    // Round-robin over the active streams with a ready current file; each gets a fair share of the budget per pass.
    const std::size_t n = active.size();
    if (n > 0) {
      std::size_t share = std::max<std::size_t>(opt.read_chunk_bytes, budget / streams.size());
      for (std::size_t i = 0; i < n && budget > 0 && !stopped; ++i) {
        TStream& s = *streams[active[(cursor + i) % n]];
        if (!s.current || !s.current->ready || s.current->fd < 0) continue;
        budget -= read_file(s, *s.current, std::min(share, budget));
      }
      cursor = (cursor + 1) % n;
    }
    // Rotation, partial-line timeouts and the next deadline; streams with nothing left to do leave the active list.
    Steady after = clock.steady();
    switch_deadline.reset();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::uint32_t index = active[i];
      TStream& s = *streams[index];
      maybe_switch(s, after);
      if (s.current && s.current->ready) more = true;
      if (!s.idle_sent && after - s.last_data >= opt.partial_timeout) {
        s.idle_sent = true;
        handler.idle(s.handle, clock.now());
      }
      stream_deadline(s, switch_deadline);  // the streams change only in poll_once: next_timeout() reuses this
      if (quiet(s))
        s.active = false;
      else
        active[kept++] = index;
    }
    active.resize(kept);
    return more && !stopped;
  }

  std::chrono::milliseconds next_timeout() const {
    using namespace std::chrono;
    Steady now = clock.steady();
    if (rescan_needed) return milliseconds(0);
    Steady deadline = next_rescan;
    if (switch_deadline && *switch_deadline < deadline) deadline = *switch_deadline;
    if (deadline <= now) return milliseconds(0);
    return duration_cast<milliseconds>(deadline - now) + milliseconds(1);
  }

  TailPositions positions() {
    TailPositions out;
    for (auto& [key, fp] : files) {
      TFile& f = *fp;
      FilePosition p;
      p.path = f.path;
      p.dev = key.first;
      p.inode = key.second;
      p.fingerprint = f.fp;
      p.size = f.last_size;
      if (f.state == FileState::finished) {
        p.offset = f.offset;
        p.line = f.line_next;
        p.finished = true;
      } else if (f.state == FileState::pending) {
        p.offset = f.start_offset;
        p.line = f.start_line;
      } else {
        TStream& s = *streams[f.stream];
        auto committed = handler.committed(s.handle);
        std::uint64_t c = std::min(committed.offset, f.offset);
        p.offset = c;
        if (committed.line > 0 && committed.offset <= f.offset) {
          p.line = committed.line;
        } else if (c >= f.nl_end) {
          p.line = f.line_next;
        } else {
          p.line = f.line_next - count_newlines(f.fd, c, f.nl_end);
        }
        struct stat st;
        if (::fstat(f.fd, &st) == 0) p.size = static_cast<std::uint64_t>(st.st_size);
      }
      out.files.push_back(std::move(p));
    }
    if (kmsg_fd >= 0 && kmsg_any) {
      out.kmsg.valid = true;
      out.kmsg.boot_id = kmsg_boot_id;
      out.kmsg.seq = kmsg_last_seq;
      out.kmsg.offset = kmsg_offset;
      out.kmsg.line = kmsg_line;
    }
    return out;
  }
};

Tailer::Tailer(TailOptions options, Clock& clock, TailHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), clock, handler)) {}
Tailer::~Tailer() = default;

void Tailer::add_source(SourceSpec source) { impl_->sources.push_back(std::move(source)); }

void Tailer::restore(const TailPositions* restored) {
  auto& m = *impl_;
  m.first_start = restored == nullptr;
  if (restored) {
    for (const auto& p : restored->files) m.restored[Key{p.dev, p.inode}] = p;
  }
  for (const auto& src : m.sources) {
    if (src.kind == SourceKind::stdin_stream && m.stdin_stream < 0) {
      StreamIdentity id;
      id.name = src.name.empty() ? "stdin" : src.name;
      id.logical = id.name;
      id.set_label(LabelKey::source, src.source.empty() ? "stdin" : src.source);
      if (!m.opt.node_name.empty()) id.set_label(LabelKey::node, m.opt.node_name);
      for (const auto& [k, v] : src.labels) set_field(id.labels, k, v);
      m.stdin_stream = static_cast<int>(m.stream_for(id, src.format));
      TStream& s = *m.streams[static_cast<std::size_t>(m.stdin_stream)];
      m.ensure_open(s);
      s.had_file = true;
      m.handler.begin_file(s.handle, FileStart::first, s.identity, 0, 1);
    } else if (src.kind == SourceKind::kmsg && m.kmsg_fd < 0) {
      m.open_kmsg(src, restored ? &restored->kmsg : nullptr);
    }
  }
}

std::vector<int> Tailer::wait_fds() const {
  std::vector<int> fds;
  if (impl_->inotify_fd >= 0) fds.push_back(impl_->inotify_fd);
  if (impl_->stdin_stream >= 0 && !impl_->stdin_eof) fds.push_back(0);
  if (impl_->kmsg_fd >= 0 && !impl_->kmsg_is_file) fds.push_back(impl_->kmsg_fd);
  return fds;
}

bool Tailer::poll_once() { return impl_->poll_once(); }
std::chrono::milliseconds Tailer::next_timeout() const { return impl_->next_timeout(); }
void Tailer::stop() { impl_->stopped = true; }
TailPositions Tailer::positions() { return impl_->positions(); }
const std::vector<std::pair<std::string, std::uint64_t>>& Tailer::lag_by_source() const {
  if (!impl_->lag_stale) return impl_->lag_cache;
  std::map<std::string, std::uint64_t> lag;
  for (const auto& src : impl_->sources)
    lag[src.source.empty() ? (src.kind == SourceKind::files ? "file" : src.kind == SourceKind::kmsg ? "kmsg" : "stdin")
                           : src.source] = 0;
  for (const auto& [key, f] : impl_->files) {
    if (f->state == FileState::finished) continue;
    std::string_view source = f->identity.label(LabelKey::source);
    std::uint64_t behind = f->last_size > f->offset ? f->last_size - f->offset : 0;
    lag[source.empty() ? std::string("file") : std::string(source)] += behind;
  }
  impl_->lag_cache.assign(lag.begin(), lag.end());
  impl_->lag_stale = false;
  return impl_->lag_cache;
}

bool Tailer::stdin_finished() const { return impl_->stdin_stream >= 0 && impl_->stdin_eof; }
bool Tailer::has_file_sources() const {
  for (const auto& s : impl_->sources)
    if (s.kind != SourceKind::stdin_stream) return true;
  return false;
}
const TailStats& Tailer::stats() const { return impl_->stats; }

}  // namespace faultline
