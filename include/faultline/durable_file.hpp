// durable_file: the one way faultline makes a file survive a crash or power loss — checkpoints, spool entries, the
// incident store's compaction, the compiled-rules cache, the emitted-revision journal. Write to a temporary file
// beside the target, fsync it, rename it over the target, fsync the directory. Stateless; thread-safe for distinct
// paths.
#pragma once

#include <string>
#include <string_view>

#include "faultline/result.hpp"

namespace faultline {

// Replaces `path` with `data` atomically: a reader sees the old content or the new, never a mix, and after success
// the new content survives a crash. The temporary file is removed on failure.
Result<void> write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0640);

// Writes all of `data` to `fd` (retrying short writes and EINTR). `what` names the file in the error.
Result<void> write_all(int fd, std::string_view data, std::string_view what);

// fsync of the directory holding `path`, so a create, rename or unlink in it is durable.
Result<void> sync_parent_dir(const std::string& path);

// The whole content of a file; an Error names the path and the reason.
Result<std::string> read_file(const std::string& path);

}  // namespace faultline
