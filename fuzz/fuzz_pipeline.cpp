// The correlator fed random hit streams: the shipped catalog, compiled once, and fuzzed lines on three streams with
// fuzzed time steps (lines hit the catalog's events in any order, dated or not; clocks move and stand still).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_catalog.hpp"
#include "faultline/match.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/rules.hpp"
#include "fuzz_support.hpp"

using namespace faultline;

using faultline::fuzz::catalog;

// The catalog is compiled before the first input (its Hyperscan compile under ASan takes longer than -timeout).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t incidents = 0;
  Pipeline pipeline(catalog(), [&](const Incident&) { ++incidents; });
  for (int s = 0; s < 3; ++s) {
    StreamIdentity identity;
    identity.name = identity.logical = "stream-" + std::to_string(s);
    identity.instance = "1";
    DecodeOptions decode;
    decode.format = static_cast<ContainerFormat>(s == 0 ? 1 : s == 1 ? 2 : 3);  // raw, cri, docker
    pipeline.add_stream(std::move(identity), decode);
  }
  fuzz::Bytes in(data, size);
  Time now = Time(std::chrono::seconds(1'700'000'000));
  while (!in.rest().empty()) {
    const std::uint8_t op = in.byte();
    std::string line(in.until('\n'));
    line += '\n';
    const auto stream = static_cast<std::uint32_t>(op % 3);
    pipeline.feed(stream, line, now);
    now += std::chrono::seconds((op >> 2) & 0x0f) * (op & 0x40 ? 60 : 1);
    if (op & 0x80) pipeline.advance(now);
    if ((op & 0xc0) == 0xc0) pipeline.new_instance(stream, StreamIdentity{"restarted", "stream-r", "2", {}});
  }
  pipeline.finish(now);
  return 0;
}
