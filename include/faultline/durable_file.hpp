// durable_file: the one way faultline makes a file survive a crash or power loss — checkpoints, spool entries, the
// incident store's compaction, the compiled-rules cache, the emitted-revision journal. Write to a temporary file
// beside the target, fsync it, rename it over the target, fsync the directory. Stateless; thread-safe for distinct
// paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "faultline/result.hpp"

namespace faultline {

// Replaces `path` with `data` atomically: a reader sees the old content or the new, never a mix, and after success
// the new content survives a crash. The temporary file is removed on failure.
Result<void> write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0640);

// A file replaced as write_file_atomic replaces it, its content written in pieces: for content too large to build as
// one string first (the incident log's compaction), whose buffer would outlive the write at the top of the heap.
// Pieces go through one fixed buffer. Nothing replaces `path` until commit(); an object destroyed uncommitted removes
// its temporary file. Move-only; one thread at a time.
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> create(std::string path, unsigned mode = 0640);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  // Adds `piece` at the end. A write error is kept and returned by commit(); pieces after it are dropped.
  void append(std::string_view piece);
  // Bytes appended so far.
  std::uint64_t size() const { return size_; }
  // Flushes, fsyncs, renames over the target and fsyncs its directory; the first error of any step, the temporary
  // file removed. Once only.
  Result<void> commit();

 private:
  friend Result<void> write_file_atomic(const std::string& path, std::string_view data, unsigned mode);
  AtomicFileWriter(std::string path, std::string tmp, int fd);
  void flush();
  // Writes `bytes` to the temporary file unless an error came before (kept for commit()).
  void write_out(std::string_view bytes);
  void abandon();

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  std::string buffer_;
  std::uint64_t size_ = 0;
  std::optional<Error> error_;
};

// Writes all of `data` to `fd` (retrying short writes and EINTR). `what` names the file in the error.
Result<void> write_all(int fd, std::string_view data, std::string_view what);

// fsync of the directory holding `path`, so a create, rename or unlink in it is durable.
Result<void> sync_parent_dir(const std::string& path);

// The whole content of a file; an Error names the path and the reason.
Result<std::string> read_file(const std::string& path);

// A whole file mapped read-only, its pages mapped in one call: for large files that are only ever replaced by a
// rename (write_file_atomic), never rewritten or cut in place, such as the caches. Cheaper than read_file for them: no
// copy and no fresh memory to fill. Move-only; unmaps when destroyed. An empty file is an empty view.
class ReadOnlyMapping {
 public:
  ReadOnlyMapping() = default;
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping& operator=(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping();

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  friend Result<ReadOnlyMapping> map_file(const std::string& path);
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// `path` mapped read-only; an Error names the path and the reason (a file that is not regular is refused).
Result<ReadOnlyMapping> map_file(const std::string& path);

}  // namespace faultline
