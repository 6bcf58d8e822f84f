// The emitted-revision journal (journal.hpp): a set in memory, an append-only file on disk.
#include "journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "faultline/durable_file.hpp"

namespace faultline::service_detail {

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Journal::key(const std::string& id, std::uint32_t revision) {
  return id + "#" + std::to_string(revision);
}

Result<void> Journal::open(const std::string& path, std::optional<std::uint64_t> output_size) {
  path_ = path;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string id;
      std::uint64_t n = 0;
      if (!(fields >> id >> n)) continue;  // a line cut short by a crash
      if (id == "@output")
        output_mark_ = n;
      else if (n <= UINT32_MAX)
        seen_.insert(key(id, static_cast<std::uint32_t>(n)));
    }
  }
  if (!seen_.empty())
    spdlog::info("{} incident revision(s) emitted since the last checkpoint will not be emitted again", seen_.size());
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd_ < 0) return Error::from_errno("cannot open", path);
  if (!output_mark_) write_mark(output_size);
  return {};
}

void Journal::write_mark(std::optional<std::uint64_t> output_size) {
  output_mark_ = output_size;
  if (fd_ < 0 || !output_size) return;
  if (auto written = write_all(fd_, "@output " + std::to_string(*output_size) + "\n", path_); !written)
    spdlog::error("{}", written.error().message);
}

bool Journal::contains(const std::string& id, std::uint32_t revision) const {
  return !seen_.empty() && seen_.count(key(id, revision)) != 0;
}

Result<void> Journal::record(const std::string& id, std::uint32_t revision) {
  if (fd_ < 0) return {};
  seen_.insert(key(id, revision));
  auto written = write_all(fd_, id + " " + std::to_string(revision) + "\n", path_);
  if (!written && !write_failed_) spdlog::error("{}", written.error().message);
  write_failed_ = !written;
  return written;
}

void Journal::truncate(std::optional<std::uint64_t> output_size) {
  if (fd_ >= 0 && ::ftruncate(fd_, 0) == 0) {
    seen_.clear();
    write_mark(output_size);
  }
}

}  // namespace faultline::service_detail
