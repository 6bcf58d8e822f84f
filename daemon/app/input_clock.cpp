// feed_input (input.hpp): one input fed to a Replay, read at the time of its first timestamp.
#include <algorithm>
#include <optional>
#include <string>

#include "faultline/decode.hpp"
#include "faultline/replay.hpp"
#include "input.hpp"

namespace faultline::app {

namespace {

// Lines before a file's first timestamp take that time (a log often starts with lines that print none: warnings, a
// banner), looked for this far ahead; a file that prints none so early is read at its read time (mtime or --now).
constexpr std::size_t kLookAheadLines = 1000;
constexpr std::size_t kLookAheadBytes = std::size_t{1} << 20;

bool enough_to_look_at(std::string_view head) {
  if (head.size() >= kLookAheadBytes) return true;
  std::size_t lines = 0;
  for (std::size_t p = head.find('\n'); p != std::string_view::npos; p = head.find('\n', p + 1)) {
    if (++lines >= kLookAheadLines) return true;
  }
  return false;
}

}  // namespace

std::optional<Time> first_time_in(std::string_view head, const DecodeOptions& decode, Time read_time) {
  head = head.substr(0, std::min(head.size(), kLookAheadBytes));
  Decoder decoder(0, decode);
  RecordBatch batch;
  // Decoded a piece at a time, the records referring to `head`, until a record prints a time or the look-ahead is
  // over: a log that prints one on its first line costs one small piece, not a copy of its first MiB (nor all of a
  // small file). Pieces grow as they find no time.
  HeadPieces pieces;
  std::size_t looked = 0;  // records looked at
  bool flushed = false;
  for (std::size_t at = 0; looked < kLookAheadLines && !flushed;) {
    if (at < head.size()) {
      const std::size_t n = std::min(pieces.next(), head.size() - at);
      decoder.feed(head.substr(at, n), read_time, batch, /*in_place=*/true);
      at += n;
    } else {
      decoder.flush(read_time, batch);  // a last line without its newline
      flushed = true;
    }
    for (; looked < batch.size() && looked < kLookAheadLines; ++looked) {
      if (batch[looked].time_from_log) return batch[looked].time;
    }
  }
  return std::nullopt;
}

bool feed_input(Replay& replay, std::uint32_t stream, ScanInput& in, const DecodeOptions& decode, Time read_time,
                ScanProgress* progress) {
  std::string head;  // the first pieces, copied while they are too short to look ahead in
  bool started = false;
  auto begin = [&](std::string_view look) {
    replay.start(first_time_in(look, decode, read_time).value_or(read_time));
    started = true;
  };
  std::string_view piece;
  while (in.next(piece)) {
    if (progress) progress->update(in.consumed(), in.size(), replay.stats().lines);
    if (started) {
      replay.feed(stream, piece);
    } else if (head.empty() && enough_to_look_at(piece)) {
      begin(piece);
      replay.feed(stream, piece);
    } else {
      head.append(piece);
      if (enough_to_look_at(head)) {
        begin(head);
        replay.feed(stream, head);
        std::string().swap(head);
      }
    }
  }
  if (!started) {
    begin(head);
    replay.feed(stream, head);
  }
  return in.ok();
}

}  // namespace faultline::app
