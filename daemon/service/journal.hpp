// The emitted-revision journal: the (incident id, revision) pairs emitted since the last checkpoint, one
// "id revision" line each in the state dir. After a crash the lines after the checkpoint are read again and give the
// same revisions; the journal keeps them from being emitted twice. Emptied at every checkpoint. Internal to the
// service room; owned by the pipeline thread.
#pragma once

#include <cstdint>
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

  // Reads what an earlier run left in `path`, then appends to it.
  Result<void> open(const std::string& path);

  bool enabled() const { return fd_ >= 0; }
  std::size_t size() const { return seen_.size(); }
  bool contains(const std::string& id, std::uint32_t revision) const;
  // Records one emitted revision (appended at once: a crash right after it still knows). An Error: it could not be
  // written (it is remembered in memory all the same; after a crash it would be emitted again).
  Result<void> record(const std::string& id, std::uint32_t revision);
  // After a durable checkpoint: revisions before it cannot come again.
  void truncate();

 private:
  static std::string key(const std::string& id, std::uint32_t revision);
  std::string path_;
  int fd_ = -1;
  bool write_failed_ = false;
  std::unordered_set<std::string> seen_;
};

}  // namespace faultline::service_detail
