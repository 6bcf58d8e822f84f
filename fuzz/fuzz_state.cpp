// The correlator's saved state (the `correlator` field of a checkpoint) read back by a correlator of the shipped
// catalog, then saved again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "fuzz_catalog.hpp"
#include "faultline/correlate.hpp"
#include "faultline/match.hpp"
#include "faultline/rules.hpp"

using namespace faultline;

using faultline::fuzz::catalog;

// The catalog is compiled before the first input (its Hyperscan compile under ASan takes longer than -timeout).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Correlator correlator(catalog());
  std::string_view json(reinterpret_cast<const char*>(data), size);
  if (correlator.load_state(json).ok()) (void)correlator.save_state();
  return 0;
}
