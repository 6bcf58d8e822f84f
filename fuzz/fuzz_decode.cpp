// The Decoder with each container format (raw, CRI, docker, auto-detected), fed in pieces of fuzzed sizes (in place
// or copied); every record's deferred time and level are worked out. The records must be those of the same bytes
// fed in one piece: the paths that take whole lines many at a time (plain raw, CRI and docker lines) and the general
// path that takes lines split across pieces make the same records.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "faultline/decode.hpp"
#include "fuzz_support.hpp"

using namespace faultline;

namespace {

struct Rec {
  std::string text;
  RecordMeta meta;
};

bool same(const Rec& a, const Rec& b) {
  return a.text == b.text && a.meta.line == b.meta.line && a.meta.offset == b.meta.offset &&
         a.meta.time == b.meta.time && a.meta.level == b.meta.level && a.meta.time_from_log == b.meta.time_from_log &&
         a.meta.time_inherited == b.meta.time_inherited && a.meta.truncated == b.meta.truncated;
}

void collect(RecordBatch& batch, std::vector<Rec>& out) {
  for (std::size_t i = 0; i < batch.size(); ++i) out.push_back({std::string(batch.text(i)), batch[i]});
  (void)batch.joined();
  batch.clear();  // in place: the piece goes away once fed
}

std::vector<Rec> decode(std::string_view bytes, const DecodeOptions& options, std::size_t step, bool in_place,
                        DecodeStats& stats) {
  Decoder decoder(0, options);
  RecordBatch batch;
  std::vector<Rec> out;
  const Time read_time = Time(std::chrono::seconds(1'700'000'000));
  while (!bytes.empty()) {
    auto piece = bytes.substr(0, step);
    bytes.remove_prefix(piece.size());
    decoder.feed(piece, read_time, batch, in_place);
    collect(batch, out);
  }
  decoder.flush(read_time, batch);
  collect(batch, out);
  (void)decoder.committed_offset();
  stats = decoder.stats();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  const std::uint8_t mode = in.byte();
  const std::uint8_t chunk = in.byte();
  DecodeOptions options;
  options.format = static_cast<ContainerFormat>(mode % 4);
  options.max_line_bytes = 16 + ((mode >> 2) & 0x1f) * 8;  // small, so cutting long lines is reached
  options.time.utc_offset = std::chrono::hours((chunk % 27) - 13);
  const bool in_place = (mode & 0x80) != 0;
  const std::string_view bytes = in.rest();
  DecodeStats pieces_stats, whole_stats;
  const auto pieces = decode(bytes, options, 1 + chunk % 64, in_place, pieces_stats);
  const auto whole = decode(bytes, options, bytes.size() + 1, !in_place, whole_stats);
  bool equal = pieces.size() == whole.size() && pieces_stats.lines == whole_stats.lines &&
               pieces_stats.malformed == whole_stats.malformed && pieces_stats.truncated == whole_stats.truncated &&
               pieces_stats.partials_joined == whole_stats.partials_joined;
  for (std::size_t i = 0; equal && i < pieces.size(); ++i) equal = same(pieces[i], whole[i]);
  if (!equal) {
    std::fprintf(stderr, "fed in pieces of %zu: %zu records; in one piece: %zu records\n", 1 + chunk % 64ul,
                 pieces.size(), whole.size());
    __builtin_trap();
  }
  return 0;
}
