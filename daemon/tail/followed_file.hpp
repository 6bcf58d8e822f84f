// One file followed by its descriptor (so a rename or an unlink does not lose its tail), and its identity key.
// Beyond max_open_files a live file may be held without a descriptor ("parked"): its offset, dev/inode and
// fingerprint say where reading continues once it is reopened by name (descriptors.cpp). Owned by the FileSource;
// one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "faultline/tail.hpp"
#include "file_io.hpp"
#include "source.hpp"

namespace faultline::tail {

using FileKey = std::pair<std::uint64_t, std::uint64_t>;  // dev, inode

// Where the file is in a stream's life.
enum class FileState : std::uint8_t {
  pending,   // waits for the stream's current file to finish
  current,   // the stream reads it
  finished,  // read to its end and left behind; remembered so it is not read again
};

// What its path says of it.
enum class Presence : std::uint8_t {
  named,         // its path names it
  rotated_away,  // its path names another file now, or nothing
  deleted,       // unlinked (no name at all); read to its end through the descriptor
};

// A stat of the file by name, taken by the current full rescan: no fstat needed for it.
struct NameStat {
  std::uint64_t size = 0;
  std::uint64_t nlink = 0;
};

struct FollowedFile {
  FileKey key;
  std::string path;  // as found (its name in the stream)
  std::string real;  // resolved
  Fingerprint fp;
  // The leading bytes `fp` covers, kept from the last check while fp.hash == head_hash: a grown file's start is
  // compared with them (memcmp) instead of hashed again at every read. Empty until the first check.
  std::string head;
  std::uint64_t head_hash = 0;
  std::string open_path;         // the name it was last found under (a parked file is reopened by it)
  UniqueFd fd;                   // closed once finished; also closed while parked
  std::uint64_t offset = 0;      // read up to here
  std::uint64_t line_next = 1;   // number of the line after the last newline read
  std::uint64_t nl_end = 0;      // offset just after the last newline read
  std::uint64_t start_offset = 0;
  std::uint64_t start_line = 1;
  std::uint64_t last_size = 0;   // at the last stat
  std::int64_t ordinal = -1;     // restart number; orders a stream's files
  std::int64_t mtime_ns = 0;
  std::uint64_t nlink = 1;       // at the last stat
  std::uint64_t seq = 0;         // discovery order
  StreamIdentity identity;       // of the stream in this file
  std::string instance_key;      // compared (pod uid + restart)
  SourceTailStats* counters = nullptr;  // of the source that found it
  std::uint32_t stream = 0;
  FileState state = FileState::pending;
  Presence presence = Presence::named;
  FileStart how = FileStart::first;
  bool ready = false;    // bytes may be waiting (an event, a stat, a read that ran out of budget)
  bool at_eof = false;   // the last read reached the end
  bool touched = false;  // an inotify event named it since it was last stat'ed
  std::optional<NameStat> scanned;
  Steady last_growth{};
  Steady wait_since{};   // parked: since when (the longest waiting gets the next descriptor)

  bool live() const { return state != FileState::finished; }
  bool parked() const { return live() && !fd.valid(); }
  // Parked with bytes that may wait to be read: it wants a descriptor.
  bool wants_descriptor() const { return parked() && (ready || last_size > offset); }
};

}  // namespace faultline::tail
