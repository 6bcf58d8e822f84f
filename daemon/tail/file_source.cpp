// The files kind: reading a stream's current file, truncation and replaced content, the switch to its next file
// (rename rotation, a new restart, a recreated file), finishing, and positions.
//
// A logical stream reads one file at a time: the current file is read to its end before the stream moves to its next
// file, so records of a stream stay in order and the decoder's offsets stay those of one file. A file is followed by
// its descriptor, so a rename or an unlink does not lose its tail.
#include "file_source.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace faultline::tail {

FileSource::FileSource(TailContext& ctx) : ctx_(ctx), watch_(ctx.options, ctx.stats) {}

void FileSource::restore(const TailPositions* restored) {
  if (!restored) return;
  for (const auto& p : restored->files) restored_[FileKey{p.dev, p.inode}] = p;
}

void FileSource::add_lag(std::map<std::string, std::uint64_t>& lag) const {
  for (const auto& [key, f] : files_) {
    if (f->state == FileState::finished) continue;
    std::string_view source = f->identity.label(LabelKey::source);
    std::uint64_t behind = f->last_size > f->offset ? f->last_size - f->offset : 0;
    lag[source.empty() ? std::string("file") : std::string(source)] += behind;
  }
}

bool FileSource::named_by(const std::string& path, const FollowedFile& f) const {
  auto b = by_path_.find(path);
  return b != by_path_.end() && b->second == f.key;
}

// ---- checks (full rescan and between rescans) ----

// Bytes written to a finished file after the stream moved on are not read (counted once per growth).
void FileSource::check_finished(FollowedFile& f, bool still_named) {
  if (!still_named) return;
  std::uint64_t size = 0;
  if (f.scanned) {
    size = f.scanned->size;
  } else {
    struct stat st;
    if (::stat(f.path.c_str(), &st) != 0) return;
    size = static_cast<std::uint64_t>(st.st_size);
  }
  if (size > f.last_size) {
    ctx_.stats.late_bytes += size - f.last_size;
    f.counters->late_bytes += size - f.last_size;
    f.last_size = size;
  }
}

// A followed file: deleted? grown? truncated, or its content replaced?
void FileSource::check_open(FollowedFile& f) {
  std::uint64_t size = 0;
  if (f.scanned) {  // the rescan's stat of its name is a stat of this file
    size = f.scanned->size;
    f.nlink = f.scanned->nlink;
    f.scanned.reset();
  } else if (f.parked()) {
    auto by_name = size_of(f);
    if (!by_name) return;  // its name went elsewhere: the next rescan finds it, or finds it gone
    size = *by_name;
  } else {
    struct stat st;
    if (!f.fd.valid() || ::fstat(f.fd.get(), &st) != 0) return;
    size = static_cast<std::uint64_t>(st.st_size);
    f.nlink = static_cast<std::uint64_t>(st.st_nlink);
  }
  ctx_.lag_stale = true;
  if (f.nlink == 0 && f.presence != Presence::deleted) {
    f.presence = Presence::deleted;
    ctx_.streams.activate(f.stream);
    spdlog::debug("{} deleted (reading it to its end)", f.path);
  }
  if (size != f.offset) {
    f.ready = true;
    ctx_.streams.activate(f.stream);
    if (f.parked()) descriptor_check_ = true;
  }
  if (f.state == FileState::current && f.fd.valid()) check_content(f, size);
  f.last_size = size;
}

// A current file's size changed since the last look: shrunk below the offset, or refilled past it with other leading
// bytes (copytruncate, and the writer went on before we looked). Both the watcher's check and the read path call
// this, so whichever sees the new size first tells a replaced file from one that grew.
void FileSource::check_content(FollowedFile& f, std::uint64_t size) {
  if (size < f.offset) {
    truncate_restart(f, "shrank below the read offset");
    return;
  }
  if (size == f.last_size) return;
  // Grew: the fingerprint extends over the leading bytes it did not cover yet, taken from the same read that checks
  // the bytes it covers, never after a read of the file's lines (it could be replaced between that read and this).
  const bool extend = f.fp.bytes < ctx_.options.fingerprint_bytes && size > f.fp.bytes;
  if (f.fp.bytes == 0 && !extend) return;
  std::string& buf = ctx_.check_buf;
  buf.resize(extend ? ctx_.options.fingerprint_bytes : f.fp.bytes);
  const ssize_t n = pread_full(f.fd.get(), buf.data(), buf.size(), 0);
  if (n < 0) return;
  const auto got = static_cast<std::size_t>(n);
  if (f.fp.bytes > 0 && got >= f.fp.bytes) {
    const std::string_view known(buf.data(), f.fp.bytes);
    const bool have_head = f.head_hash == f.fp.hash && f.head.size() == f.fp.bytes;
    const bool same = have_head ? known == f.head : fingerprint_of_bytes(known).hash == f.fp.hash;
    if (!same) {
      truncate_restart(f, "content replaced");
      return;
    }
    if (!have_head) {
      f.head.assign(known);
      f.head_hash = f.fp.hash;
    }
  }
  if (extend) {
    f.head.assign(buf.data(), got);
    f.fp = fingerprint_of_bytes(f.head);
    f.head_hash = f.fp.hash;
  }
}

// ---- a stream's files ----

void FileSource::begin(LogicalStream& s, FollowedFile& f) {
  StreamTable::open(s, ctx_.handler);
  FileStart how = f.how;
  if (s.had_file && how != FileStart::resumed) {
    how = f.instance_key != s.last_instance_key ? FileStart::new_instance : FileStart::rotated;
    ++ctx_.stats.rotations;
    ++f.counters->rotations;
  } else if (s.had_file && f.instance_key != s.last_instance_key) {
    how = FileStart::new_instance;
  }
  s.current = &f;
  ctx_.streams.activate(f.stream);
  s.had_file = true;
  s.last_instance_key = f.instance_key;
  f.state = FileState::current;
  f.ready = true;
  f.last_growth = ctx_.clock.steady();
  if (f.parked()) descriptor_check_ = true;
  spdlog::debug("{}: reading {} from offset {} ({})", s.identity.name, f.path, f.offset, to_string(how));
  ctx_.handler.begin_file(s.handle, how, f.identity, f.offset, f.line_next);
}

void FileSource::truncate_restart(FollowedFile& f, const char* why) {
  ++ctx_.stats.truncations;
  ++f.counters->truncations;
  spdlog::info("{} {} (copytruncate?): reading it again from the start", f.path, why);
  f.offset = 0;
  f.nl_end = 0;
  f.line_next = 1;
  f.at_eof = false;
  f.ready = true;
  ctx_.streams.activate(f.stream);
  ctx_.lag_stale = true;
  f.fp = fingerprint_of(f.fd.get(), ctx_.options.fingerprint_bytes).value_or(Fingerprint{});
  if (f.state == FileState::current) {
    LogicalStream& s = ctx_.streams[f.stream];
    ctx_.handler.begin_file(s.handle, FileStart::truncated, f.identity, 0, 1);
  } else {
    f.start_offset = 0;
    f.start_line = 1;
  }
}

void FileSource::finish_file(LogicalStream& s, FollowedFile& f) {
  const bool deleted = f.presence == Presence::deleted;
  if (deleted) {
    ++ctx_.stats.deleted;
    ++f.counters->deleted;
  }
  if (ctx_.stats.watched_files > 0) --ctx_.stats.watched_files;
  if (f.fd.valid()) {
    f.fd.reset();
    --open_fds_;
  }
  f.state = FileState::finished;
  std::string().swap(f.head);  // only a current file's growth is checked
  f.last_size = f.offset;
  ctx_.lag_stale = true;
  s.current = nullptr;
  if (deleted) {
    files_.erase(f.key);  // gone: nothing to remember
  } else {
    finished_order_.push_back(f.key);
    while (finished_order_.size() > ctx_.options.max_finished) {
      auto it = files_.find(finished_order_.front());
      if (it != files_.end() && it->second->state == FileState::finished) files_.erase(it);
      finished_order_.pop_front();
    }
  }
}

// ---- the scheduler's per-stream hooks ----

bool FileSource::ready(const LogicalStream& s) const { return s.current && s.current->ready && s.current->fd.valid(); }

// Reads what the current file has, up to `budget` bytes. Returns the bytes read.
std::size_t FileSource::read_stream(LogicalStream& s, std::size_t budget) {
  FollowedFile& f = *s.current;
  struct stat st;
  if (::fstat(f.fd.get(), &st) != 0) return 0;
  auto size = static_cast<std::uint64_t>(st.st_size);
  check_content(f, size);
  f.last_size = size;
  ctx_.lag_stale = true;
  std::string& buf = ctx_.read_buf;
  std::size_t total = 0;
  Time now = ctx_.clock.now();
  const auto at_end = [&] {
    f.at_eof = true;
    f.ready = false;
    if (parked_ > 0) descriptor_check_ = true;  // this one may give its descriptor to a waiting file
  };
  while (total < budget) {
    std::size_t want = std::min(buf.size(), budget - total);
    ssize_t n = ::pread(f.fd.get(), buf.data(), want, static_cast<off_t>(f.offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      ++ctx_.stats.unreadable;
      ++f.counters->unreadable;
      if (warn_once("read", f.path)) spdlog::warn("cannot read {}: {}", f.path, std::strerror(errno));
      f.at_eof = true;
      f.ready = false;
      break;
    }
    if (n == 0) {
      at_end();
      break;
    }
    std::string_view bytes(buf.data(), static_cast<std::size_t>(n));
    const std::uint64_t nl = count_newlines(bytes);
    if (nl > 0) {
      f.line_next += nl;
      f.nl_end = f.offset + bytes.rfind('\n') + 1;
    }
    f.offset += static_cast<std::uint64_t>(n);
    f.at_eof = false;
    total += static_cast<std::size_t>(n);
    ctx_.stats.bytes += static_cast<std::uint64_t>(n);
    f.counters->bytes += static_cast<std::uint64_t>(n);
    s.last_data = ctx_.clock.steady();
    s.idle_sent = false;
    f.last_growth = s.last_data;
    ctx_.handler.data(s.handle, bytes, now);
    if (ctx_.stopped) break;
    // A short read of a regular file is its end, now: no second read to learn it (a line appended since wakes the
    // stream again, as after a read of nothing).
    if (static_cast<std::size_t>(n) < want && S_ISREG(st.st_mode)) {
      at_end();
      break;
    }
  }
  if (total >= budget) f.ready = true;  // maybe more
  return total;
}

// The current file is done when it is at its end, quiet for rotate_wait, and either has a successor or is gone.
void FileSource::settle(LogicalStream& s, Steady now) {
  while (s.current) {
    FollowedFile& f = *s.current;
    if (!f.at_eof || f.ready) return;
    if (s.pending.empty() && f.presence != Presence::deleted) return;
    if (now - f.last_growth < ctx_.options.rotate_wait) return;
    // One last look: nothing more?
    if (auto size = size_of(f); size && *size > f.offset) {
      f.ready = true;
      if (f.parked()) descriptor_check_ = true;
      return;
    }
    const bool gone = f.presence == Presence::deleted;
    finish_file(s, f);  // (`f` is no more when it was deleted)
    if (s.pending.empty()) {
      if (gone) end_stream(s);
      return;
    }
    FollowedFile* next = s.pending.front();
    s.pending.erase(s.pending.begin());
    begin(s, *next);
  }
}

// The stream's last file is gone and read: the handler lets its state go, and a later file of the same logical
// stream opens it anew.
void FileSource::end_stream(LogicalStream& s) {
  ctx_.handler.end_of_stream(s.handle, ctx_.clock.now());
  s.opened = false;
  s.had_file = false;
  s.last_instance_key.clear();
  ++ctx_.stats.streams_ended;
}

// rotate_wait of a file that looks finished.
void FileSource::deadline(const LogicalStream& s, std::optional<Steady>& best) const {
  if (s.current && s.current->at_eof && (!s.pending.empty() || s.current->presence == Presence::deleted)) {
    Steady t = s.current->last_growth + to_steady(ctx_.options.rotate_wait);
    if (!best || t < *best) best = t;
  }
}

bool FileSource::quiet(const LogicalStream& s) const {
  if (!s.pending.empty()) return false;
  return !s.current || (!s.current->ready && s.current->presence != Presence::deleted);
}

void FileSource::positions(TailPositions& out) {
  for (auto& [key, fp] : files_) {
    FollowedFile& f = *fp;
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
      LogicalStream& s = ctx_.streams[f.stream];
      auto committed = ctx_.handler.committed(s.handle);
      std::uint64_t c = std::min(committed.offset, f.offset);
      p.offset = c;
      if (committed.line > 0 && committed.offset <= f.offset) {
        p.line = committed.line;
      } else if (c >= f.nl_end) {
        p.line = f.line_next;
      } else if (f.fd.valid()) {
        p.line = f.line_next - count_newlines(f.fd.get(), c, f.nl_end);
      } else if (UniqueFd by_name = open_by_name(f); by_name.valid()) {
        p.line = f.line_next - count_newlines(by_name.get(), c, f.nl_end);
      } else {  // parked and out of reach: nothing more is read of it
        p.offset = f.nl_end;
        p.line = f.line_next;
      }
      if (auto size = size_of(f)) p.size = *size;
    }
    out.files.push_back(std::move(p));
  }
}

}  // namespace faultline::tail
