// Replay::feed_whole: whole inputs (mapped files) cut into parts of whole batches, each part decoded and matched on
// whichever thread takes it, the parts correlated in input order on the caller's thread.
//
// A batch ends at the first line start at or after each multiple of the batch size at which the stream's decoder
// holds nothing open; that depends only on the bytes, so the batches — and what the correlator sees — are the same
// for one thread or many. A part starts at such a line start too, decoded by a decoder of its own that starts there.
// The decoder of the part before it may have had a line open there (a CRI 'P' line or a docker partial continued past
// it): that part then ended later, and the part after it is decoded again from where it really begins.
// Where the input can be copied (WholeInput::copy), a part is decoded from a copy of its bytes in a buffer of its
// own, which goes back to a pool once the part is correlated; only a line that runs past the copy is read where it
// is. On one thread the parts are taken in order, each from where the one before it ended, and each batch is
// correlated as soon as it is matched, while its bytes, records and hits are still in the cache.
#include <sys/mman.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "faultline/replay.hpp"

namespace faultline {

namespace {

// A part is 8 batches (2 MiB by default): on two threads 3-4 % less wall time than 16 or 4 (corpus A, 5M lines,
// 14 alternating runs); one thread does not notice (it correlates each batch as soon as it is matched).
constexpr std::size_t kBatchesPerPart = 8;
constexpr std::size_t kDetectBytes = std::size_t{1} << 20;

// The first line start at or after `from` (after a '\n', or the start); the end of `bytes` if there is none.
std::size_t line_start_from(std::string_view bytes, std::size_t from) {
  if (from >= bytes.size()) return bytes.size();
  if (from == 0 || bytes[from - 1] == '\n') return from;
  const void* nl = std::memchr(bytes.data() + from, '\n', bytes.size() - from);
  return nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1 : bytes.size();
}

// The same, read through the input's copy where it has one, so that a mapped file's pages are not faulted in (where
// the copy fails, read where it is).
std::size_t line_start_from(const WholeInput& in, std::size_t from) {
  if (!in.copy || from == 0 || from >= in.bytes.size()) return line_start_from(in.bytes, from);
  char piece[4096];
  for (std::size_t at = from - 1; at < in.bytes.size();) {
    const std::size_t n = std::min(sizeof piece, in.bytes.size() - at);
    if (!in.copy(at, piece, n)) return line_start_from(in.bytes, from);
    const void* nl = std::memchr(piece, '\n', n);
    if (nl != nullptr) return at + static_cast<std::size_t>(static_cast<const char*>(nl) - piece) + 1;
    at += n;
  }
  return in.bytes.size();
}

// The container format the start of an input shows (auto_detect when its first 1 MiB decides nothing).
ContainerFormat detect_format(const WholeInput& in, const DecodeOptions& options) {
  if (options.format != ContainerFormat::auto_detect) return options.format;
  Decoder decoder(in.stream, options);
  RecordBatch ignored;
  const std::size_t limit = std::min(in.bytes.size(), kDetectBytes);
  // The first non-blank line decides.
  HeadPieces pieces;
  for (std::size_t at = 0; at < limit && decoder.format() == ContainerFormat::auto_detect;) {
    const std::size_t n = std::min<std::size_t>(limit - at, pieces.next());
    decoder.feed(in.bytes.substr(at, n), in.read_time, ignored, /*in_place=*/true);
    ignored.clear();
    at += n;
  }
  return decoder.format();
}

// A part's own copy of its bytes, and batches to fill: their capacity is kept from part to part (no allocation, and no
// page faulted in, per batch).
struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

struct PartBuffer {
  std::unique_ptr<char, FreeDeleter> data;
  std::size_t capacity = 0;
  std::vector<MatchedBatch> spare;  // reset, to be filled again

  MatchedBatch take_batch() {
    if (spare.empty()) return MatchedBatch{};
    MatchedBatch m = std::move(spare.back());
    spare.pop_back();
    return m;
  }

  char* reserve(std::size_t n) {
    if (n > capacity) {
      // Aligned to huge pages, which the system may back its whole 2 MiB stretches with: the copy, the decoder and
      // Hyperscan each go over every byte, and 2 MiB pages spare them a TLB miss per 4 KiB. The size is not rounded
      // up to them (a part and its slack would take 4 MiB instead of 2.1).
      constexpr std::size_t kHuge = std::size_t{2} << 20;
      constexpr std::size_t kPage = 4096;
      const std::size_t size = (n + kPage - 1) / kPage * kPage;
      void* p = nullptr;
      if (::posix_memalign(&p, kHuge, size) != 0) throw std::bad_alloc();  // (aligned_alloc wants whole multiples)
      data.reset(static_cast<char*>(p));
#if defined(MADV_HUGEPAGE)
      ::madvise(data.get(), size, MADV_HUGEPAGE);
#endif
      capacity = size;
    }
    return data.get();
  }
};

// The input's bytes as a part reads them: [begin, end) from its copy when it has one, the rest where it is.
class PartBytes {
 public:
  explicit PartBytes(std::string_view whole) : whole_(whole) {}
  // Copies [begin, end) into `buffer` with `copy`; without one, or if it fails, every byte is read where it is.
  void copy_in(const WholeInput& in, std::size_t begin, std::size_t end, PartBuffer& buffer) {
    end = std::min(end, whole_.size());
    if (!in.copy || begin >= end) return;
    char* out = buffer.reserve(end - begin);
    if (!in.copy(begin, out, end - begin)) return;
    copy_ = out;
    begin_ = begin;
    end_ = end;
  }
  std::size_t size() const { return whole_.size(); }
  // Whether any byte was read where it is (not from the copy): those pages of a mapped file are then faulted in.
  bool read_in_place() const { return read_in_place_; }
  // Bytes [from, to): from the copy when they lie in it.
  std::string_view view(std::size_t from, std::size_t to) {
    if (copy_ != nullptr && from >= begin_ && to <= end_) return {copy_ + (from - begin_), to - from};
    read_in_place_ = read_in_place_ || to > from;
    return whole_.substr(from, to - from);
  }
  // The first line start at or after `from` (after a '\n', or the start); size() if there is none.
  std::size_t line_start_from(std::size_t from) {
    if (from >= whole_.size()) return whole_.size();
    if (from == 0 || at(from - 1) == '\n') return from;
    std::size_t scan_from = from;
    if (copy_ != nullptr && from >= begin_ && from < end_) {
      const void* nl = std::memchr(copy_ + (from - begin_), '\n', end_ - from);
      if (nl != nullptr) return begin_ + static_cast<std::size_t>(static_cast<const char*>(nl) - copy_) + 1;
      scan_from = end_;
    }
    read_in_place_ = true;
    return faultline::line_start_from(whole_, scan_from);
  }

 private:
  char at(std::size_t i) {
    if (copy_ != nullptr && i >= begin_ && i < end_) return copy_[i - begin_];
    read_in_place_ = true;
    return whole_[i];
  }
  std::string_view whole_;
  const char* copy_ = nullptr;
  std::size_t begin_ = 0, end_ = 0;
  bool read_in_place_ = false;
};

// A correlated batch emptied, its capacity kept, to be filled again.
void recycle(MatchedBatch& m) {
  m.batch.reset();
  m.hits.clear();
  m.anchors.clear();
  m.bytes = 0;
  m.lines_before = 0;
}

struct Part {
  std::size_t input = 0;
  std::size_t begin = 0;  // a line start, where the part is decoded from
  std::size_t stop = 0;   // the part's last batch is the one that ends at or after this
  bool first = false;     // the input's first part (decoded with the stream's own options: it detects the format)
};

struct PartResult {
  std::size_t begin = 0;
  std::size_t end = 0;        // where its last batch ends
  std::uint64_t lines = 0;    // physical lines in [begin, end)
  bool read_in_place = false; // some of its bytes were read where they are, not from its copy (or it is the start)
  std::vector<MatchedBatch> batches;
  PartBuffer buffer;          // the copy its batches refer to
};

// Decodes and matches parts on one thread, with that thread's scanner.
class PartMatcher {
 public:
  PartMatcher(Scanner& scanner, std::size_t batch_bytes) : scanner_(scanner), batch_bytes_(batch_bytes) {}

  // Each batch as soon as it is matched, when the part is correlated as it is decoded (one thread): the batch is then
  // used again for the next one instead of being kept in the result.
  using OnBatch = std::function<void(MatchedBatch&)>;

  // `buffer`: where the part's copy goes (when the input can be copied); the result takes it along. `first_line`: the
  // input's line number at `begin` (1 when the part is decoded apart from the ones before it).
  PartResult run(const WholeInput& in, const DecodeOptions& options, std::size_t begin, std::size_t stop,
                 PartBuffer buffer, std::uint64_t first_line = 1, const OnBatch& on_batch = {}) {
    PartBytes bytes(in.bytes);
    // The copy reaches a little past `stop`, where the part's last batch ends unless a line is left open there. An
    // input that is one part (its format undecided) is read where it is: it may be any size.
    if (stop - begin <= batch_bytes_ * kBatchesPerPart)
      bytes.copy_in(in, begin, stop + std::max<std::size_t>(batch_bytes_ / 4, 4096), buffer);
    PartResult r;
    r.begin = begin;
    Decoder decoder(in.stream, options);
    decoder.resume_at(begin, first_line);
    std::size_t pos = begin;
    while (pos < bytes.size() && pos < stop) {
      MatchedBatch m = buffer.take_batch();
      std::size_t end = bytes.line_start_from((pos / batch_bytes_ + 1) * batch_bytes_);
      decoder.feed(bytes.view(pos, end), in.read_time, m.batch, /*in_place=*/true);
      // A line left open (continued by the next) goes on into this batch, line by line, until nothing is open.
      while (end < bytes.size() && decoder.has_partial()) {
        const std::size_t next = bytes.line_start_from(end + 1);
        decoder.feed(bytes.view(end, next), in.read_time, m.batch, /*in_place=*/true);
        end = next;
      }
      if (end >= bytes.size()) decoder.flush(in.read_time, m.batch);  // a last line without its newline
      m.bytes = end - pos;
      scanner_.scan(m.batch, m.hits, m.anchors);
      if (on_batch) {
        // Correlated while its bytes, records and hits are still in the cache, then used for the next batch.
        on_batch(m);
        recycle(m);
        buffer.spare.push_back(std::move(m));
      } else {
        r.batches.push_back(std::move(m));
      }
      pos = end;
    }
    r.end = pos;
    r.lines = decoder.committed_line() - first_line;
    // An input's start is read where it is in any case: its format is detected there.
    r.read_in_place = bytes.read_in_place() || begin == 0;
    r.buffer = std::move(buffer);
    return r;
  }

 private:
  Scanner& scanner_;
  std::size_t batch_bytes_;
};

}  // namespace

struct Replay::WholeWork {
  std::vector<std::unique_ptr<Scanner>> scanners;  // [0] the caller's thread, then one per helper thread
  std::vector<PartBuffer> buffers;                 // parts' copies and batches, their capacity kept
};

void Replay::WholeWorkFree::operator()(WholeWork* work) const { delete work; }

void Replay::feed_whole(const std::vector<WholeInput>& inputs, unsigned threads) {
  threads = std::max(threads, 1u);
  const std::size_t part_bytes = batch_bytes_ * kBatchesPerPart;
  if (!whole_) whole_.reset(new WholeWork);
  WholeWork& work = *whole_;
  // Scanner k (made here, on the caller's thread, before any helper starts).
  const auto scanner = [&](std::size_t k) -> Scanner& {
    while (work.scanners.size() <= k) work.scanners.push_back(std::make_unique<Scanner>(rules_));
    return *work.scanners[k];
  };

  // The parts, in input order. Parts after an input's first are decoded with the format its start shows; where that
  // start decides none, the input is one part.
  std::vector<DecodeOptions> first_options(inputs.size());
  std::vector<DecodeOptions> later_options(inputs.size());
  std::vector<Part> parts;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const WholeInput& in = inputs[i];
    first_options[i] = pipeline_.decode_options(in.stream);
    later_options[i] = first_options[i];
    later_options[i].format = detect_format(in, first_options[i]);
    const bool one_part = later_options[i].format == ContainerFormat::auto_detect;
    std::size_t begin = 0;
    for (std::size_t k = 1;; ++k) {
      const std::size_t stop = one_part ? in.bytes.size() : k * part_bytes;
      parts.push_back(Part{i, begin, stop, begin == 0});
      if (stop >= in.bytes.size()) break;
      begin = line_start_from(in, stop);
      if (begin >= in.bytes.size()) break;
    }
  }

  // One thread: each part is decoded where the one before it ended, its lines numbered on from that one's, and each
  // batch correlated as soon as it is matched -- the same batches, in the same order, as the threads below correlate.
  if (threads == 1 || parts.size() <= 1) {
    PartMatcher matcher(scanner(0), batch_bytes_);
    PartBuffer buffer;
    if (!work.buffers.empty()) {
      buffer = std::move(work.buffers.back());
      work.buffers.pop_back();
    }
    std::size_t expected = 0;  // where the input's next part begins
    std::uint64_t lines = 0;   // physical lines of the input before it
    const auto correlate = [this](MatchedBatch& m) { pipeline_.correlate(m); };
    for (const Part& p : parts) {
      const WholeInput& in = inputs[p.input];
      if (p.first) {
        start(in.read_time);
        expected = 0;
        lines = 0;
      }
      PartResult r = matcher.run(in, p.first ? first_options[p.input] : later_options[p.input], expected, p.stop,
                                 std::move(buffer), lines + 1, correlate);
      if (in.done && r.end > expected) in.done(expected, r.end, r.read_in_place);
      expected = r.end;
      lines += r.lines;
      buffer = std::move(r.buffer);
    }
    work.buffers.push_back(std::move(buffer));
    return;
  }

  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t next = 0;      // the next part to take
    std::size_t consumed = 0;  // parts correlated
    std::vector<std::optional<PartResult>> results;
    std::vector<PartBuffer> buffers;  // copies of parts already correlated, for the next parts
    std::exception_ptr error;
    bool stopping = false;
  } shared;
  // A buffer for the next part (the lock held).
  const auto take_buffer = [&] {
    if (shared.buffers.empty()) return PartBuffer{};
    PartBuffer b = std::move(shared.buffers.back());
    shared.buffers.pop_back();
    return b;
  };
  shared.results.resize(parts.size());
  // Parts taken ahead of the one being correlated: bounds the memory held by matched batches.
  const std::size_t window = 2 * static_cast<std::size_t>(threads) + 2;
  const auto can_take = [&] { return shared.next < parts.size() && shared.next < shared.consumed + window; };
  const auto run_part = [&](PartMatcher& matcher, std::size_t k, PartBuffer buffer) {
    const Part& p = parts[k];
    return matcher.run(inputs[p.input], p.first ? first_options[p.input] : later_options[p.input], p.begin, p.stop,
                       std::move(buffer));
  };
  // Takes one part if one may be taken (the lock held on entry and on return); false if none.
  const auto work_once = [&](PartMatcher& matcher, std::unique_lock<std::mutex>& lock) {
    if (shared.stopping || shared.error || !can_take()) return false;
    const std::size_t k = shared.next++;
    PartBuffer buffer = take_buffer();
    lock.unlock();
    std::optional<PartResult> result;
    std::exception_ptr error;
    try {
      result = run_part(matcher, k, std::move(buffer));
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !shared.error) shared.error = error;
    shared.results[k] = std::move(result);
    shared.changed.notify_all();
    return true;
  };

  std::vector<std::thread> workers;
  const auto stop_workers = [&] {
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.stopping = true;
    }
    shared.changed.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
  };
  const std::size_t helpers = std::min<std::size_t>(threads - 1, parts.size() > 0 ? parts.size() - 1 : 0);
  scanner(helpers);  // every thread's, made before any starts
  shared.buffers = std::move(work.buffers);
  work.buffers.clear();
  try {
    for (std::size_t t = 0; t < helpers; ++t) {
      workers.emplace_back([&, t] {
        PartMatcher matcher(*work.scanners[t + 1], batch_bytes_);
        std::unique_lock<std::mutex> lock(shared.mutex);
        while (!shared.stopping && !shared.error && shared.next < parts.size()) {
          if (!work_once(matcher, lock)) shared.changed.wait(lock);
        }
      });
    }

    PartMatcher own(*work.scanners[0], batch_bytes_);
    std::size_t expected = 0;     // where the input's next part must begin
    std::uint64_t lines = 0;      // physical lines of the input before it
    for (std::size_t k = 0; k < parts.size(); ++k) {
      PartResult r;
      {
        std::unique_lock<std::mutex> lock(shared.mutex);
        while (!shared.results[k] && !shared.error) {
          if (!work_once(own, lock)) shared.changed.wait(lock);
        }
        if (shared.error) std::rethrow_exception(shared.error);
        r = std::move(*shared.results[k]);
        shared.results[k].reset();
        shared.consumed = k + 1;
      }
      shared.changed.notify_all();

      const Part& p = parts[k];
      const WholeInput& in = inputs[p.input];
      if (p.first) {
        start(in.read_time);
        expected = 0;
        lines = 0;
      }
      // The part before ran on past this one's start (a line open there): this one begins where that one ended.
      if (r.begin != expected) {
        const bool read_in_place = r.read_in_place;
        r = own.run(in, p.first ? first_options[p.input] : later_options[p.input], expected, p.stop,
                    std::move(r.buffer));
        r.read_in_place = r.read_in_place || read_in_place;
      }
      for (auto& m : r.batches) {
        m.lines_before = lines;
        pipeline_.correlate(m);
      }
      if (in.done && r.end > expected) in.done(expected, r.end, r.read_in_place);
      expected = r.end;
      lines += r.lines;
      // Nothing refers to the copy any more: it and the batches go back for the next parts.
      for (auto& m : r.batches) {
        recycle(m);
        r.buffer.spare.push_back(std::move(m));
      }
      r.batches.clear();
      {
        std::lock_guard<std::mutex> lock(shared.mutex);
        shared.buffers.push_back(std::move(r.buffer));
      }
    }
  } catch (...) {
    stop_workers();
    throw;
  }
  stop_workers();
  // The buffers go on to the next call (as many as this one needed at once).
  work.buffers = std::move(shared.buffers);
}

}  // namespace faultline
