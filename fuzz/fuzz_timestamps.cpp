// Timestamps: parse_rfc3339 and parse_line_meta (every time format and level word a log line may carry).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "faultline/decode.hpp"
#include "faultline/types.hpp"
#include "fuzz_support.hpp"

using namespace faultline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  const std::uint8_t zone = in.byte();
  std::string_view text = in.rest();
  (void)parse_rfc3339(text);
  TimeContext context;
  context.reference = Time(std::chrono::seconds(1'700'000'000));
  context.utc_offset = std::chrono::minutes((zone % 53) * 30 - 780);
  (void)parse_line_meta(text, context);
  context.reference = Time{};
  (void)parse_line_meta(text, context);
  return 0;
}
