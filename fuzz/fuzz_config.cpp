// The config loader over any bytes as one config file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "faultline/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view yaml(reinterpret_cast<const char*>(data), size);
  auto loaded = faultline::load_config_from_string(yaml, "fuzz-config.yaml");
  (void)loaded.ok();
  return 0;
}
