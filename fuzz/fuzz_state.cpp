// The correlator's saved state (the `correlator` field of a checkpoint) read back by a correlator of the shipped
// catalog, then saved again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "faultline/correlate.hpp"
#include "faultline/match.hpp"
#include "faultline/rules.hpp"

using namespace faultline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::shared_ptr<const CompiledRules> rules = [] {
    auto loaded = load_rules({FAULTLINE_RULES_DIR});
    if (!loaded.ok()) std::abort();
    auto compiled = compile_rules(std::move(loaded.rules));
    if (!compiled.rules) std::abort();
    return compiled.rules;
  }();
  Correlator correlator(rules);
  std::string_view json(reinterpret_cast<const char*>(data), size);
  if (correlator.load_state(json).ok()) (void)correlator.save_state();
  return 0;
}
