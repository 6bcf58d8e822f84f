// The checkpoint reader over any bytes; what it accepts must write back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "faultline/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  auto checkpoint = faultline::checkpoint_from_json(json);
  if (checkpoint.ok()) (void)faultline::checkpoint_to_json(*checkpoint);
  return 0;
}
