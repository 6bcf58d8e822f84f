// The rule loader over any bytes as one rule file; what loads is compiled too (patterns reach Hyperscan and RE2).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "faultline/match.hpp"
#include "faultline/rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view yaml(reinterpret_cast<const char*>(data), size);
  auto loaded = faultline::load_rules_from_string(yaml, "fuzz.yaml");
  for (const auto& d : loaded.diagnostics) (void)d;
  if (loaded.ok() && !loaded.rules.rules.empty()) (void)faultline::compile_rules(std::move(loaded.rules));
  return 0;
}
