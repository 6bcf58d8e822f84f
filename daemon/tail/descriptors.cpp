// Descriptors of the files kind: at most max_open_files are held. Beyond that, live files wait without one
// ("parked"), and descriptors rotate among them: once per poll_once() the files that want one (parked with bytes that
// may be unread: an event, a stat by name, or never read yet) get one, the longest waiting first; a descriptor is
// freed for each by closing the least recently grown idle file (read to its end, still named by its path, one link).
// A parked file remembers its offset, dev/inode and fingerprint, and is reopened by the name it was last found under:
// same dev/inode and the same leading bytes continue exactly at its offset; other leading bytes (copytruncate
// refilled while it waited) read it again from 0. A parked file whose name went away before it was reopened cannot be
// reached: its unread bytes are counted as rotated away unread.
#include <fcntl.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "file_source.hpp"

namespace faultline::tail {

UniqueFd FileSource::open_by_name(const FollowedFile& f) const {
  UniqueFd fd(open_for_reading(f.open_path));
  if (!fd.valid()) return fd;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != f.key.first ||
      static_cast<std::uint64_t>(st.st_ino) != f.key.second)
    fd.reset();  // its name names another file now
  return fd;
}

std::optional<std::uint64_t> FileSource::size_of(const FollowedFile& f) const {
  struct stat st;
  if (f.fd.valid()) {
    if (::fstat(f.fd.get(), &st) != 0) return std::nullopt;
  } else if (::stat(f.open_path.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != f.key.first ||
             static_cast<std::uint64_t>(st.st_ino) != f.key.second) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(st.st_size);
}

void FileSource::park(FollowedFile& f) {
  if (!f.fd.valid()) return;
  f.fd.reset();
  --open_fds_;
  ++parked_;
  f.wait_since = ctx_.clock.steady();
}

bool FileSource::reopen(FollowedFile& f) {
  UniqueFd fd = open_by_name(f);
  if (!fd.valid()) {
    f.ready = false;  // the next rescan finds it under another name, or finds it gone
    return false;
  }
  f.fd = std::move(fd);
  ++open_fds_;
  if (parked_ > 0) --parked_;
  ++ctx_.stats.file_reopens;
  f.ready = true;
  ctx_.streams.activate(f.stream);
  if (f.fp.bytes > 0) {
    auto fp = fingerprint_of(f.fd.get(), f.fp.bytes);
    if (fp && *fp != f.fp) truncate_restart(f, "content replaced while it waited for a descriptor");
  }
  return true;
}

// Parked, and no name in this rescan: what was not read of it is out of reach.
void FileSource::lose_parked(FollowedFile& f) {
  if (f.last_size > f.offset) {
    ctx_.stats.rotated_unread_bytes += f.last_size - f.offset;
    f.counters->rotated_unread_bytes += f.last_size - f.offset;
    spdlog::warn("{} went away while it waited for a descriptor; {} bytes were not read", f.path,
                 f.last_size - f.offset);
  }
  f.presence = Presence::deleted;
  f.last_size = f.offset;
  f.at_eof = true;
  f.ready = false;
  f.last_growth = Steady{};  // nothing more will come: the stream moves on without waiting rotate_wait
  ctx_.streams.activate(f.stream);
}

namespace {

bool evictable(const FollowedFile& f) {
  return f.live() && f.fd.valid() && f.at_eof && !f.ready && f.presence == Presence::named && f.nlink == 1;
}

}  // namespace

void FileSource::rotate_descriptors() {
  descriptor_check_ = false;
  if (parked_ == 0) {
    ctx_.stats.files_waiting = 0;
    return;
  }
  std::vector<FollowedFile*> waiting;
  std::vector<FollowedFile*> idle;
  std::size_t parked = 0;
  for (auto& [key, f] : files_) {
    if (f->parked()) {
      ++parked;
      // Only a stream's current file is read; the others wait for their turn anyway.
      if (f->wants_descriptor() && f->state == FileState::current) waiting.push_back(f.get());
    } else if (evictable(*f)) {
      idle.push_back(f.get());
    }
  }
  parked_ = parked;  // recounted: files erased while parked leave the count
  std::sort(waiting.begin(), waiting.end(), [](const FollowedFile* a, const FollowedFile* b) {
    return std::tie(a->wait_since, a->seq) < std::tie(b->wait_since, b->seq);
  });
  const std::size_t need = waiting.size() > free_descriptors() ? waiting.size() - free_descriptors() : 0;
  if (need > 0 && !idle.empty()) {
    const std::size_t n = std::min(need, idle.size());
    std::partial_sort(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(n), idle.end(),
                      [](const FollowedFile* a, const FollowedFile* b) {
                        return std::tie(a->last_growth, a->seq) < std::tie(b->last_growth, b->seq);
                      });
    for (std::size_t i = 0; i < n; ++i) park(*idle[i]);
  }
  for (FollowedFile* f : waiting) {
    if (free_descriptors() == 0) break;
    reopen(*f);
  }
  ctx_.stats.files_waiting = 0;
  for (auto& [key, f] : files_)
    if (f->wants_descriptor()) ++ctx_.stats.files_waiting;
}

std::size_t FileSource::free_descriptors() const {
  return open_fds_ < ctx_.options.max_open_files ? ctx_.options.max_open_files - open_fds_ : 0;
}

}  // namespace faultline::tail
