// The Decoder with each container format (raw, CRI, docker, auto-detected), fed in pieces of fuzzed sizes; every
// record's deferred time and level are worked out.
#include <cstddef>
#include <cstdint>

#include "faultline/decode.hpp"
#include "fuzz_support.hpp"

using namespace faultline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  const std::uint8_t mode = in.byte();
  const std::uint8_t chunk = in.byte();
  DecodeOptions options;
  options.format = static_cast<ContainerFormat>(mode % 4);
  options.max_line_bytes = 16 + (mode >> 2) * 8;  // small, so cutting long lines is reached
  options.time.utc_offset = std::chrono::hours((chunk % 27) - 13);
  const bool in_place = (mode & 0x80) != 0;
  Decoder decoder(0, options);
  RecordBatch batch;
  const Time read_time = Time(std::chrono::seconds(1'700'000'000));
  std::string_view bytes = in.rest();
  const std::size_t step = 1 + chunk % 64;
  while (!bytes.empty()) {
    auto piece = bytes.substr(0, step);
    bytes.remove_prefix(piece.size());
    decoder.feed(piece, read_time, batch, in_place);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      (void)batch[i];
      (void)batch.text(i);
    }
    (void)batch.joined();
    batch.clear();  // in place: the piece goes away once fed
  }
  decoder.flush(read_time, batch);
  for (std::size_t i = 0; i < batch.size(); ++i) (void)batch[i];
  (void)decoder.committed_offset();
  return 0;
}
