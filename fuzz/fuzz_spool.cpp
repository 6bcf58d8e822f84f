// The spool reader: a fuzzed file in a spool directory, opened as after a restart, then read as the next delivery.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "faultline/sinks.hpp"

using namespace faultline;

namespace {

const std::string& spool_dir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/faultline-fuzz-spool-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) std::abort();
    return std::string(pattern);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = spool_dir() + "/00000000000000000001.json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Spool spool(spool_dir(), 1 << 20, std::chrono::hours(24));
  SpoolDrops drops;
  if (spool.open(&drops).ok()) {
    if (auto next = spool.front(&drops)) spool.remove(next->first);
  }
  ::unlink(path.c_str());
  return 0;
}
