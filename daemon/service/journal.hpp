// The emitted-revision journal: the (incident id, revision) pairs emitted since the last checkpoint, one
// "id revision" line each in the state dir. After a crash the lines after the checkpoint are read again and give the
// same revisions; the journal keeps them from being emitted twice. Emptied at every checkpoint. Its first line,
// "@output N", is the size the JSON-lines output file had then: a revision written to the output just before a crash
// and not yet journalled is found there (Delivery::recover_output). Internal to the service room; owned by the
// pipeline thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

#include "faultline/result.hpp"

namespace faultline::service_detail {

class Journal {
 public:
  Journal() = default;  // disabled: remembers nothing, writes nothing
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Reads what an earlier run left in `path`, then appends to it. `output_size`: the output file's size now (none:
  // the output is no file); a journal that names no output size yet (new, or written before it did) is given it.
  Result<void> open(const std::string& path, std::optional<std::uint64_t> output_size = std::nullopt);
  // The output file's size at the last checkpoint (or when the journal began): the revisions written after it are
  // the ones a crash can have left unjournalled.
  std::optional<std::uint64_t> output_mark() const { return output_mark_; }

  bool enabled() const { return fd_ >= 0; }
  std::size_t size() const { return seen_.size(); }
  bool contains(const std::string& id, std::uint32_t revision) const;
  // Records one emitted revision (appended at once: a crash right after it still knows). An Error: it could not be
  // written (it is remembered in memory all the same; after a crash it would be emitted again).
  Result<void> record(const std::string& id, std::uint32_t revision);
  // After a durable checkpoint: revisions before it cannot come again. `output_size` as for open().
  void truncate(std::optional<std::uint64_t> output_size = std::nullopt);

 private:
  static std::string key(const std::string& id, std::uint32_t revision);
  void write_mark(std::optional<std::uint64_t> output_size);
  std::string path_;
  int fd_ = -1;
  bool write_failed_ = false;
  std::unordered_set<std::string> seen_;
  std::optional<std::uint64_t> output_mark_;
};

}  // namespace faultline::service_detail
