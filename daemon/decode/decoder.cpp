// The Decoder: bytes of one stream -> records. Three stages per stream:
//   framing   — physical lines on LF; raw lines are streamed through without buffering, wrapped lines (CRI, docker)
//               are buffered up to a bound because their header or JSON must be read whole;
//   unwrapping — the container format's message, stream (stdout/stderr) and time, and whether the message continues
//               in the next line (CRI 'P', docker log without "\n");
//   assembling — per channel (raw/malformed, stdout, stderr), the message bytes of one logical line are cut into
//               segments at CR (and caret "^M"), each capped at max_line_bytes, then cleaned of ANSI codes, given a
//               time and level and appended to the batch.
// Whole lines that need none of that (plain raw lines; CRI 'F' and docker lines whose message is plain) are taken
// many at a time, one pass over each, and make exactly the records the three stages would (unit tests and
// fuzz_decode compare the two ways).
// Complete lines are handled straight from the caller's bytes; only lines that span feed() calls are copied, into
// buffers whose capacity is kept, so steady-state decoding does not allocate.
// Why one file of ~600 lines: the three stages are one per-stream state machine (framing hands unwrapping a view into
// its own buffer, assembling appends to the caller's batch in place); split across files they would share that state
// through a header that only this file reads, and the hot path would lose the inlining that keeps it allocation-free.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "decode_internal.hpp"

namespace faultline {

using decode_detail::CriLine;
using decode_detail::DockerLine;

namespace {

constexpr std::size_t kDetectBytes = 64;           // enough for a CRI header
constexpr std::size_t kKubeletFragment = 16 * 1024;  // kubelet and docker split long lines at 16 KiB
constexpr std::size_t kPrefetchAhead = 2048;         // bytes ahead of the line being framed
constexpr std::size_t kBlockLines = 64;              // find_plain_lines may leave this many entries of `ends` unused

bool is_blank(std::string_view s) { return std::all_of(s.begin(), s.end(), decode_detail::white_space); }

// Length of text[0, n) cut back so it does not end inside a UTF-8 sequence (when the bytes are UTF-8 at all).
std::size_t utf8_floor(const char* d, std::size_t n) {
  for (std::size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(d[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    std::size_t need = 1;
    if (c >= 0xF0 && c <= 0xF4) need = 4;
    else if (c >= 0xE0 && c <= 0xEF) need = 3;
    else if (c >= 0xC2 && c <= 0xDF) need = 2;
    return back < need ? n - back : n;
  }
  return n;
}

// Index of the first byte of [p, p + n) that needs more than copying -- '\n' (end of line), '\r' (a segment break),
// ESC or '^' (ANSI / caret-notation codes) -- or n. One pass instead of one memchr per byte value: most lines hold
// none of them but the final '\n', and then the whole line is one plain record (see feed_raw and take).
std::size_t find_special_scalar(const char* p, std::size_t i, std::size_t n) {
  for (; i < n; ++i) {
    const char c = p[i];
    if (c == '\n' || c == '\r' || c == '\x1b' || c == '^') return i;
  }
  return n;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) std::size_t find_special_avx2(const char* p, std::size_t n) {
  const __m256i lf = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r'), esc = _mm256_set1_epi8('\x1b'),
                caret = _mm256_set1_epi8('^');
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i m = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr)),
                                      _mm256_or_si256(_mm256_cmpeq_epi8(v, esc), _mm256_cmpeq_epi8(v, caret)));
    const auto mask = static_cast<unsigned>(_mm256_movemask_epi8(m));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
  return find_special_scalar(p, i, n);
}
#endif

std::size_t find_special_sse2(const char* p, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'), esc = _mm_set1_epi8('\x1b'),
                caret = _mm_set1_epi8('^');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, esc), _mm_cmpeq_epi8(v, caret)));
    const int mask = _mm_movemask_epi8(m);
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  return find_special_scalar(p, i, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

std::size_t find_special(const char* p, std::size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHaveAvx2) return find_special_avx2(p, n);
#endif
  return find_special_sse2(p, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The lines that end in one 64-byte block, '\n' by '\n' (bit k of `nl`: a '\n' at block + k; of `special`: a CR, ESC
// or '^'), from the open line that starts at `line`: each one's end into ends[count++], while count < cap. False when
// framing stops here: at a line with a special byte or longer than max_line, or when the line still open has one or
// is already too long (feed_raw takes that line). A block starts at a line start or inside the open line, so a
// special byte below a '\n' is in that line.
__attribute__((always_inline)) inline bool block_lines(std::uint64_t nl, std::uint64_t special, std::size_t block,
                                                       std::size_t max_line, std::size_t& line, std::uint32_t* ends,
                                                       std::size_t& count, std::size_t cap) {
  while (nl != 0 && count < cap) {
    const auto k = static_cast<unsigned>(__builtin_ctzll(nl));
    const std::size_t end = block + k;
    const std::uint64_t before = k == 0 ? 0 : ~std::uint64_t{0} >> (64 - k);
    if ((special & before) != 0 || end - line > max_line) return false;
    ends[count++] = static_cast<std::uint32_t>(end);
    line = end + 1;
    nl &= nl - 1;
  }
  return !(count < cap && (special != 0 || block + 64 - line > max_line));
}

// Plain lines from `from` on: lines that end in '\n' before `n`, hold no CR, ESC or '^' and are at most `max_line`
// bytes. The position of each one's '\n' goes into ends[0, count), at most `cap` of them; the count is returned. It
// stops before the first line that is not plain (feed_raw takes that one). Newlines and the other bytes are found 64
// at a time, each byte looked at once.
// CR, ESC and '^' are told from every other byte by a lookup of the byte's low nibble (their low nibbles, D, B and E,
// differ): the table holds each at its nibble and, everywhere else, a byte whose low nibble is not its index (so it
// equals no byte looked up there); bytes >= 0x80 look up 0, which equals none of them.
__attribute__((target("avx2"))) inline std::uint64_t movemask64(__m256i lo, __m256i hi) {
  return std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(lo))} |
         (std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(hi))} << 32);
}

__attribute__((target("avx2"))) std::size_t plain_lines_avx2(const char* p, std::size_t from, std::size_t n,
                                                               std::size_t max_line, std::uint32_t* ends,
                                                               std::size_t cap) {
  const __m256i lf = _mm256_set1_epi8('\n');
  const __m256i table = _mm256_setr_epi8(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\x1b', 0, '\r', '^', 0,  //
                                         1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\x1b', 0, '\r', '^', 0);
  std::size_t count = 0;
  std::size_t line = from;
  for (std::size_t block = from; block + 64 <= n && count < cap; block += 64) {
    __builtin_prefetch(p + block + kPrefetchAhead);
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + block));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + block + 32));
    const std::uint64_t nl = movemask64(_mm256_cmpeq_epi8(a, lf), _mm256_cmpeq_epi8(b, lf));
    const std::uint64_t special =
        movemask64(_mm256_cmpeq_epi8(a, _mm256_shuffle_epi8(table, a)), _mm256_cmpeq_epi8(b, _mm256_shuffle_epi8(table, b)));
    if (!block_lines(nl, special, block, max_line, line, ends, count, cap)) return count;
  }
  return count;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// The same with AVX-512 (VBMI2): the block's bytes are compared in one register each way, and a block that holds no
// special byte and no line too long has its newlines' positions packed (vpcompressb) and written in one store, with
// no branch per line. A block with a special byte, or a line that may be too long, goes line by line as in
// plain_lines_avx2 (block_lines). It stops while kBlockLines entries of room are left, so one block's newlines always
// fit.
#define FAULTLINE_AVX512 "avx512f,avx512bw,avx512vbmi2,bmi,bmi2,lzcnt,popcnt"
__attribute__((target(FAULTLINE_AVX512))) std::size_t plain_lines_avx512(const char* p, std::size_t from,
                                                                           std::size_t n, std::size_t max_line,
                                                                           std::uint32_t* ends, std::size_t cap) {
  const __m512i lf = _mm512_set1_epi8('\n');
  // (Loaded from memory, not broadcast or widened by the unmasked intrinsics: GCC 12 warns of those.)
  alignas(64) static constexpr std::uint8_t kTable[64] = {
      1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, 0, '\r', '^', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, 0, '\r', '^', 0,
      1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, 0, '\r', '^', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, 0, '\r', '^', 0};
  const __m512i table = _mm512_load_si512(kTable);
  alignas(64) static constexpr std::uint8_t kIndex[64] = {
      0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
      22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
      44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
  const __m512i index = _mm512_load_si512(kIndex);
  std::size_t count = 0;
  std::size_t line = from;
  for (std::size_t block = from; block + 64 <= n && count + kBlockLines <= cap; block += 64) {
    __builtin_prefetch(p + block + kPrefetchAhead);
    const __m512i v = _mm512_loadu_si512(p + block);
    const std::uint64_t nl = _mm512_cmpeq_epi8_mask(v, lf);
    const std::uint64_t special = _mm512_cmpeq_epi8_mask(v, _mm512_shuffle_epi8(table, v));
    if (special == 0 && block + 64 - line <= max_line) {
      // Every line that ends here is plain and short enough: its '\n' positions, packed, then widened and stored.
      const auto k = static_cast<std::size_t>(__builtin_popcountll(nl));
      const __m512i packed = _mm512_maskz_compress_epi8(nl, index);
      const __m512i base = _mm512_set1_epi32(static_cast<int>(block));
      const __m512i wide = _mm512_maskz_cvtepu8_epi32(0xffff, _mm512_maskz_extracti32x4_epi32(0xf, packed, 0));
      _mm512_storeu_si512(ends + count, _mm512_add_epi32(wide, base));
      if (k > 16) [[unlikely]] {
        alignas(64) std::uint8_t at[64];
        _mm512_store_si512(at, packed);
        for (std::size_t j = 16; j < k; ++j) ends[count + j] = static_cast<std::uint32_t>(block + at[j]);
      }
      count += k;
      // The open line starts after the block's last '\n' (when it has one).
      line = nl != 0 ? block + 64 - static_cast<std::size_t>(__builtin_clzll(nl)) : line;
      continue;
    }
    if (!block_lines(nl, special, block, max_line, line, ends, count, cap)) return count;
  }
  return count;
}
#undef FAULTLINE_AVX512
#endif

decode_detail::VectorFraming best_vector_framing() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // Every feature plain_lines_avx512 is compiled for (LZCNT asked of CPUID: clang's builtin does not know it).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool lzcnt = __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 5)) != 0;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("popcnt") && lzcnt) {
    return decode_detail::VectorFraming::avx512;
  }
  if (kHaveAvx2) return decode_detail::VectorFraming::avx2;
#endif
  return decode_detail::VectorFraming::none;
}

const decode_detail::VectorFraming kBestFraming = best_vector_framing();
std::atomic<decode_detail::VectorFraming> framing{kBestFraming};

// The plain lines the fastest way this CPU has; 0 (feed_raw takes every line) where there is no vector code for it.
// It may stop with up to kBlockLines entries of `ends` unused when more lines follow: a caller calls again until a
// call leaves more room than that.
std::size_t find_plain_lines(const char* p, std::size_t from, std::size_t n, std::size_t max_line,
                             std::uint32_t* ends, std::size_t cap) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (framing.load(std::memory_order_relaxed)) {
    case decode_detail::VectorFraming::avx512: return plain_lines_avx512(p, from, n, max_line, ends, cap);
    case decode_detail::VectorFraming::avx2: return plain_lines_avx2(p, from, n, max_line, ends, cap);
    case decode_detail::VectorFraming::none: break;
  }
#endif
  (void)p, (void)from, (void)n, (void)max_line, (void)ends, (void)cap;
  return 0;
}

// Asks for the bytes a few lines ahead of the line being framed: a file's pages are scattered in memory and the
// hardware prefetcher stops at the end of each (measured: 13 % less CPU for the whole scan of a mapped file).
inline void prefetch_ahead(const char* p, std::size_t len) {
  if (len > kPrefetchAhead + 192) {
    __builtin_prefetch(p + kPrefetchAhead);
    __builtin_prefetch(p + kPrefetchAhead + 64);
    __builtin_prefetch(p + kPrefetchAhead + 128);
  }
}

// A piece of the message of one logical line, as handed from unwrapping to assembling.
struct Piece {
  std::string_view data;
  std::uint64_t offset = 0;       // stream offset of data[0], when `exact`
  bool exact = true;              // false: data was unescaped (docker), positions inside it are not stream offsets
  std::uint64_t line = 0;         // physical line the piece is in
  std::uint64_t line_offset = 0;  // offset of that physical line's start
  std::optional<Time> time;       // the wrapper's time
  bool end = false;               // the logical line ends after this piece
  bool cut = false;               // bytes after this piece were dropped (wrapper line over its buffer bound)
  bool may_have_lf = false;       // unescaped text may hold '\n'
};

// Assembling state of one channel.
struct Assembler {
  bool open = false;              // a logical line is in progress
  bool first_piece = true;        // the next piece is the first of the logical line
  std::uint64_t line = 0;         // line number of its first fragment
  std::uint64_t start = 0;        // stream offset of the physical line where it began (a restart resumes there)
  // The current segment.
  bool seg = false;               // begun: seg_offset/seg_time are set
  bool discarding = false;        // cut at max_line_bytes and already emitted: drop bytes up to the next break
  std::uint64_t seg_offset = 0;   // reported offset
  std::uint64_t seg_text = 0;     // stream offset of its first text byte (for "^M" splits), when seg_exact
  bool seg_exact = true;
  std::optional<Time> seg_time;
  std::string buf;                // its bytes when it spans pieces

  void reset() {
    open = false;
    first_piece = true;
    seg = false;
    discarding = false;
    buf.clear();
  }
};

enum Channel : std::size_t { kRaw = 0, kStdout = 1, kStderr = 2 };

}  // namespace

struct Decoder::Impl {
  std::uint32_t stream;
  DecodeOptions opt;
  ContainerFormat fmt;
  DecodeStats stats;
  std::size_t max_line;

  std::uint64_t pos = 0;          // stream offset of the next byte fed
  std::uint64_t line_no = 1;      // physical line that `pos` is in
  std::uint64_t line_start = 0;   // where that line (or its unflushed rest) starts
  std::uint64_t committed = 0;    // offset after the last finished physical line
  std::uint64_t committed_line = 1;

  std::string line_buf;           // wrapped formats and detection: the physical line so far, without LF
  bool line_over = false;         // the physical line outgrew wrap_cap: bytes up to LF are dropped
  std::size_t wrap_cap = 0;

  std::array<Assembler, 3> chan;
  Time read_time{};
  bool in_place = false;          // feed(): the batch may refer to the bytes fed
  std::string scratch;            // ANSI stripping
  std::string json;               // docker "log" unescaped, when it holds escapes
  decode_detail::WrapperClock clock;  // the wrapper lines' times

  Impl(std::uint32_t s, DecodeOptions o) : stream(s), opt(o), fmt(o.format) {
    max_line = std::max<std::size_t>(opt.max_line_bytes, 1);
    set_wrap_cap();
    scratch.reserve(256);
  }

  void set_wrap_cap() {
    const std::size_t base = std::max(max_line, kKubeletFragment);
    // CRI: header plus message. Docker: JSON escapes can grow the text (up to 6x for control characters).
    wrap_cap = fmt == ContainerFormat::docker || fmt == ContainerFormat::auto_detect ? 2 * base + 6 * kKubeletFragment
                                                                                       : base + 256;
  }

  // ---- records -------------------------------------------------------------------------------------------------

  void emit_record(std::string_view text, std::uint64_t line, std::uint64_t offset, const std::optional<Time>& wrap_time,
                   bool truncated, RecordBatch& out) {
    std::string_view view = text;
    if (std::memchr(text.data(), '\x1b', text.size()) != nullptr ||
        std::memchr(text.data(), '^', text.size()) != nullptr) {
      scratch.assign(text);
      scratch.resize(decode_detail::strip_ansi(scratch.data(), scratch.size()));
      view = scratch;
    }
    emit_clean(view, line, offset, wrap_time, truncated, out);
  }

  // A record whose text needs no cleaning (no ANSI or caret codes). Its time and level are worked out by the batch
  // when the record is looked at (RecordBatch::operator[], with the context set in feed()).
  // `refer`: the view lies in the bytes being fed and '\n' follows it there (the batch may refer to it).
  void emit_clean(std::string_view view, std::uint64_t line, std::uint64_t offset, const std::optional<Time>& wrap_time,
                  bool truncated, RecordBatch& out, bool refer = false) {
    if (is_blank(view)) return;
    RecordMeta& r = refer ? out.append_in_place(view) : out.append(view);
    r.stream = stream;
    r.line = line;
    r.offset = offset;
    r.truncated = truncated;
    r.time = wrap_time ? *wrap_time : read_time;
    r.time_from_log = wrap_time.has_value();
    r.deferred = 1;
    ++stats.lines;
  }

  // A finished segment: "^M" (caret-notation CR, from pasted logs) splits it further; a "^M" followed by a lower
  // case letter is taken as text (a regex such as "^Mixtral"), not as a line break.
  void emit_segment(const Assembler& a, std::string_view text, bool truncated, RecordBatch& out) {
    if (truncated) {
      text = text.substr(0, utf8_floor(text.data(), text.size()));
      ++stats.truncated;
    }
    const auto at = [&](std::size_t i) { return i == 0 || !a.seg_exact ? a.seg_offset : a.seg_text + i; };
    std::size_t begin = 0;
    std::size_t k = text.find("^M");
    while (k != std::string_view::npos) {
      const std::size_t after = k + 2;
      if (after < text.size() && text[after] >= 'a' && text[after] <= 'z') {
        k = text.find("^M", after);
        continue;
      }
      if (k > begin) emit_record(text.substr(begin, k - begin), a.line, at(begin), a.seg_time, false, out);
      begin = after;
      k = text.find("^M", after);
    }
    if (begin < text.size()) emit_record(text.substr(begin), a.line, at(begin), a.seg_time, truncated, out);
  }

  // ---- assembling ----------------------------------------------------------------------------------------------

  // Appends to the current segment's buffer; at the cap, emits it truncated and starts discarding.
  void append_capped(Assembler& a, std::string_view part, RecordBatch& out) {
    const std::size_t room = max_line - a.buf.size();
    if (part.size() <= room) {
      a.buf.append(part);
      return;
    }
    a.buf.append(part.data(), room);
    emit_segment(a, a.buf, true, out);
    a.buf.clear();
    a.discarding = true;
  }

  void take(Assembler& a, const Piece& pc, RecordBatch& out) {
    // Fast path: a whole logical line in one piece with nothing to split, cut or clean is one record as it is.
    // (Exactly what the general path below does for such a piece, without its byte-by-byte searches.)
    if (!a.open && pc.end && !pc.cut && pc.data.size() <= max_line &&
        find_special(pc.data.data(), pc.data.size()) == pc.data.size()) {
      if (!pc.data.empty()) emit_clean(pc.data, pc.line, pc.line_offset, pc.time, false, out);
      return;
    }
    if (!a.open) {
      a.open = true;
      a.first_piece = true;
      a.line = pc.line;
      a.start = pc.line_offset;
    }
    const char* d = pc.data.data();
    const std::size_t n = pc.data.size();
    std::size_t i = 0;
    while (true) {
      std::size_t b = n;
      if (pc.may_have_lf) {
        for (std::size_t k = i; k < n; ++k) {
          if (d[k] == '\r' || d[k] == '\n') {
            b = k;
            break;
          }
        }
      } else if (i < n) {
        const void* cr = std::memchr(d + i, '\r', n - i);
        if (cr != nullptr) b = static_cast<std::size_t>(static_cast<const char*>(cr) - d);
      }
      const bool has_break = b < n;
      const bool cut_here = !has_break && pc.cut;
      const std::string_view part(d + i, b - i);
      if (!a.seg) {
        a.seg = true;
        a.seg_exact = pc.exact;
        a.seg_text = pc.exact ? pc.offset + i : pc.line_offset;
        a.seg_offset = (a.first_piece && i == 0) || !pc.exact ? pc.line_offset : pc.offset + i;
        a.seg_time = pc.time;
      }
      if (a.discarding) {
        if (has_break || pc.end) {
          a.discarding = false;
          a.seg = false;
        }
      } else if (has_break || pc.end || cut_here) {
        if (a.buf.empty()) {
          if (part.size() > max_line) {
            emit_segment(a, part.substr(0, max_line), true, out);
          } else if (!part.empty()) {
            emit_segment(a, part, cut_here, out);
          }
        } else {
          append_capped(a, part, out);
          if (!a.discarding) emit_segment(a, a.buf, cut_here, out);
          a.buf.clear();
        }
        a.discarding = false;
        a.seg = false;
        if (cut_here && !pc.end) {
          // The dropped bytes belonged to this segment; what follows them does too, up to the next break.
          a.seg = true;
          a.discarding = true;
        }
      } else {
        append_capped(a, part, out);
      }
      if (!has_break) break;
      i = b + 1;
    }
    a.first_piece = false;
    if (pc.end) {
      a.open = false;
      a.seg = false;
      a.discarding = false;
    }
  }

  // ---- unwrapping ----------------------------------------------------------------------------------------------

  void physical_line(std::string_view line, bool cut, RecordBatch& out) {
    if (fmt == ContainerFormat::cri) {
      CriLine h;
      if (decode_detail::parse_cri(line, h, &clock)) {
        if (h.partial) ++stats.partials_joined;
        Piece pc;
        pc.data = line.substr(h.message);
        pc.offset = line_start + h.message;
        pc.line = line_no;
        pc.line_offset = line_start;
        pc.time = h.time;
        pc.end = !h.partial;
        pc.cut = cut;
        take(chan[h.is_stderr ? kStderr : kStdout], pc, out);
        return;
      }
    } else if (fmt == ContainerFormat::docker) {
      DockerLine dl;
      std::string_view log;
      if (decode_detail::parse_docker(line, cut, json, log, dl, &clock)) {
        if (dl.partial) ++stats.partials_joined;
        Piece pc;
        pc.data = log;
        pc.offset = line_start;
        pc.exact = false;
        pc.line = line_no;
        pc.line_offset = line_start;
        pc.time = dl.time;
        pc.end = !dl.partial;
        pc.cut = dl.truncated;
        pc.may_have_lf = log.data() == json.data();  // unescaped; a view into the line holds no '\n'
        take(chan[dl.is_stderr ? kStderr : kStdout], pc, out);
        return;
      }
    }
    ++stats.malformed;
    Piece pc;
    pc.data = line;
    pc.offset = line_start;
    pc.line = line_no;
    pc.line_offset = line_start;
    pc.end = true;
    pc.cut = cut;
    take(chan[kRaw], pc, out);
  }

  // ---- framing -------------------------------------------------------------------------------------------------

  void end_physical_line() {  // `pos` is just after the LF
    ++line_no;
    line_start = pos;
    committed = pos;
    committed_line = line_no;
  }

  // Plain lines from bytes[i] on, many at a time (find_plain_lines), each a record referring to the bytes fed; the
  // index after the last one taken (i when none was: feed_raw takes the next line).
  std::size_t feed_plain(std::string_view bytes, std::size_t i, RecordBatch& out) {
    constexpr std::size_t kCap = 256 + kBlockLines;
    std::uint32_t ends[kCap];
    const std::uint64_t base = pos - i;  // stream offset of bytes[0]
    const std::size_t n = std::min<std::size_t>(bytes.size(), std::numeric_limits<std::uint32_t>::max());
    for (;;) {
      const std::size_t count = find_plain_lines(bytes.data(), i, n, max_line, ends, kCap);
      if (count > 0) {
        // The lines as emit_clean() would make them, all at once: ends relative to the first line's start.
        for (std::size_t k = 0; k < count; ++k) ends[k] -= static_cast<std::uint32_t>(i);
        RecordMeta r;
        r.stream = stream;
        r.line = line_no;
        r.offset = base + i;
        r.time = read_time;
        r.deferred = 1;
        stats.lines += out.append_lines_in_place(r, bytes.data() + i, ends, count);
        line_no += count;
        i += ends[count - 1] + 1;
        pos = base + i;
        line_start = pos;
        committed = pos;
        committed_line = line_no;
      }
      if (count + kBlockLines <= kCap) return i;  // it stopped at a line it does not take, or at the end of `bytes`
    }
  }

  std::size_t feed_raw(std::string_view bytes, std::size_t i, RecordBatch& out) {
    const char* p = bytes.data() + i;
    const std::size_t len = bytes.size() - i;
    std::size_t from = 0;  // no '\n' before this
    if (!chan[kRaw].open) {
      // Fast path: one pass finds the end of the line and tells whether anything before it needs more than copying.
      prefetch_ahead(p, len);
      const std::size_t k = find_special(p, len);
      if (k < len && p[k] == '\n' && k <= max_line) {
        if (k > 0) emit_clean(std::string_view(p, k), line_no, line_start, std::nullopt, false, out, in_place);
        pos += k + 1;
        end_physical_line();
        return i + k + 1;
      }
      from = k;
    }
    const void* nl = from < len ? std::memchr(p + from, '\n', len - from) : nullptr;
    Piece pc;
    pc.offset = pos;
    pc.line = line_no;
    pc.line_offset = line_start;
    if (nl != nullptr) {
      const auto k = static_cast<std::size_t>(static_cast<const char*>(nl) - p);
      pc.data = std::string_view(p, k);
      pc.end = true;
      take(chan[kRaw], pc, out);
      pos += k + 1;
      end_physical_line();
      return i + k + 1;
    }
    pc.data = std::string_view(p, len);
    take(chan[kRaw], pc, out);
    pos += len;
    return bytes.size();
  }

  void buffer_line(std::string_view s) {
    const std::size_t room = wrap_cap > line_buf.size() ? wrap_cap - line_buf.size() : 0;
    if (s.size() > room) {
      line_buf.append(s.data(), room);
      line_over = true;
    } else {
      line_buf.append(s);
    }
  }

  // A whole wrapped line at p that is one record as it is: its length (the index of its '\n'), message, stream and
  // time. length 0: the line is not one (feed_wrapped, physical_line and take read it).
  struct PlainLine {
    std::size_t length = 0;
    std::string_view message;
    bool is_stderr = false;
    std::optional<Time> time;
  };

  // CRI: tagged 'F', no CR, ESC or '^' in header or message -- the header holds none, so one pass from the line start
  // finds the line's end and tells that the message is plain.
  PlainLine plain_cri(const char* p, std::size_t len) {
    const std::size_t k = find_special(p, std::min(len, wrap_cap + 1));
    if (k >= len || p[k] != '\n' || k > wrap_cap) return {};
    return cri_line(std::string_view(p, k));
  }

  // A whole CRI line (without its '\n') tagged 'F'; none (length 0) when it is malformed (counted where the general
  // path reads it) or a 'P' fragment.
  PlainLine cri_line(std::string_view line) {
    CriLine h;
    if (!decode_detail::parse_cri(line, h, &clock) || h.partial) return {};  // the usual header first, with no search
    return {line.size(), line.substr(h.message), h.is_stderr, h.time};
  }

  // Takes a plain line as one record, unless it is none, its message is too long or its channel has a logical line
  // open (the general path takes those). False when it was not taken.
  bool take_plain(const PlainLine& l, RecordBatch& out) {
    if (l.length == 0 || l.message.size() > max_line || chan[l.is_stderr ? kStderr : kStdout].open) return false;
    if (!l.message.empty()) emit_clean(l.message, line_no, line_start, l.time, false, out);
    pos += l.length + 1;
    end_physical_line();
    return true;
  }

  // Docker: the driver's own layout, plain (see docker_plain_line).
  PlainLine plain_docker(const char* p, std::size_t len) {
    // Framing told to use no vector code (as tests do): parse_docker reads every line.
    if (framing.load(std::memory_order_relaxed) == decode_detail::VectorFraming::none) return {};
    DockerLine dl;
    std::string_view log;
    const std::size_t k = decode_detail::docker_plain_line(p, len, wrap_cap, json, log, dl, &clock);
    if (k == 0) return {};
    return {k, log, dl.is_stderr, dl.time};
  }

  // Wrapped lines from bytes[i] on that are whole in `bytes` and plain, each one record, as feed_wrapped,
  // physical_line and take make it -- with one pass over each line instead of three (the line end, then the
  // message's special bytes, then the copy). The index after the last one taken (i when none was: feed_wrapped takes
  // the next line).
  std::size_t feed_wrapped_plain(std::string_view bytes, std::size_t i, RecordBatch& out) {
    if (fmt == ContainerFormat::cri) i = feed_cri_plain(bytes, i, out);
    const char* const base = bytes.data();
    const std::size_t n = bytes.size();
    while (i < n && line_buf.empty() && !line_over) {
      const char* p = base + i;
      const std::size_t len = n - i;
      prefetch_ahead(p, len);
      const PlainLine l = fmt == ContainerFormat::cri ? plain_cri(p, len) : plain_docker(p, len);
      if (!take_plain(l, out)) return i;
      i += l.length + 1;
    }
    return i;
  }

  // CRI lines from bytes[i] on as plain_cri takes them one by one, but framed many at a time: their ends, and that
  // they hold no CR, ESC or '^', are found 64 bytes at a time (find_plain_lines), with no search per line. The index
  // after the last one taken; the lines that are left (the last ones of `bytes`, or one that is not plain) go the way
  // they went.
  std::size_t feed_cri_plain(std::string_view bytes, std::size_t i, RecordBatch& out) {
    constexpr std::size_t kCap = 256 + kBlockLines;
    std::uint32_t ends[kCap];
    const std::size_t n = std::min<std::size_t>(bytes.size(), std::numeric_limits<std::uint32_t>::max());
    while (line_buf.empty() && !line_over) {
      const std::size_t count = find_plain_lines(bytes.data(), i, n, wrap_cap, ends, kCap);
      for (std::size_t k = 0; k < count; ++k) {
        if (!take_plain(cri_line(std::string_view(bytes.data() + i, ends[k] - i)), out)) return i;
        i = ends[k] + 1;
      }
      if (count + kBlockLines <= kCap) return i;  // as in feed_plain
    }
    return i;
  }

  std::size_t feed_wrapped(std::string_view bytes, std::size_t i, RecordBatch& out) {
    const char* p = bytes.data() + i;
    const std::size_t len = bytes.size() - i;
    prefetch_ahead(p, len);
    const void* nl = std::memchr(p, '\n', len);
    if (nl != nullptr) {
      const auto k = static_cast<std::size_t>(static_cast<const char*>(nl) - p);
      if (line_buf.empty() && !line_over) {
        if (k <= wrap_cap) physical_line(std::string_view(p, k), false, out);
        else physical_line(std::string_view(p, wrap_cap), true, out);
      } else {
        if (!line_over) buffer_line(std::string_view(p, k));
        physical_line(line_buf, line_over, out);
        line_buf.clear();
        line_over = false;
      }
      pos += k + 1;
      end_physical_line();
      return i + k + 1;
    }
    if (!line_over) buffer_line(std::string_view(p, len));
    pos += len;
    return bytes.size();
  }

  // Decides the container format from the start of the first non-blank line (held in line_buf).
  void decide(bool complete, RecordBatch& out) {
    ContainerFormat f = ContainerFormat::raw;
    if (line_buf.front() == '{') {
      DockerLine dl;
      std::string_view log;
      if (decode_detail::parse_docker(line_buf, !complete, json, log, dl)) f = ContainerFormat::docker;
    } else if (decode_detail::looks_like_cri(line_buf)) {
      f = ContainerFormat::cri;
    }
    fmt = f;
    set_wrap_cap();
    if (f == ContainerFormat::raw) {
      // The buffered bytes start a raw line: stream them on like any other piece.
      Piece pc;
      pc.data = line_buf;
      pc.offset = line_start;
      pc.line = line_no;
      pc.line_offset = line_start;
      take(chan[kRaw], pc, out);
      line_buf.clear();
    } else if (!complete && line_buf.size() >= wrap_cap) {
      line_over = true;
    }
  }

  std::size_t feed_detect(std::string_view bytes, std::size_t i, RecordBatch& out) {
    const char* p = bytes.data() + i;
    const std::size_t len = bytes.size() - i;
    const void* nl = std::memchr(p, '\n', len);
    const std::size_t avail = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - p) : len;
    const char first = line_buf.empty() ? (avail > 0 ? p[0] : '\0') : line_buf.front();
    const std::size_t limit = first == '{' ? wrap_cap : kDetectBytes;
    const std::size_t n = std::min(avail, limit - line_buf.size());
    line_buf.append(p, n);
    pos += n;
    i += n;
    const bool complete = n == avail && nl != nullptr;
    if (complete && is_blank(line_buf)) {
      // Blank lines make no record and say nothing about the format.
      line_buf.clear();
      pos += 1;
      end_physical_line();
      return i + 1;
    }
    if (complete || line_buf.size() >= limit) decide(complete, out);
    return i;
  }

  void feed(std::string_view bytes, Time rt, RecordBatch& out) {
    stats.bytes += bytes.size();
    read_time = rt;
    std::size_t i = 0;
    while (i < bytes.size()) {
      if (fmt == ContainerFormat::raw && in_place && !chan[kRaw].open) {
        i = feed_plain(bytes, i, out);
        if (i >= bytes.size()) break;
      }
      if (fmt == ContainerFormat::cri || fmt == ContainerFormat::docker) {
        i = feed_wrapped_plain(bytes, i, out);
        if (i >= bytes.size()) break;
      }
      if (fmt == ContainerFormat::raw) i = feed_raw(bytes, i, out);
      else if (fmt == ContainerFormat::auto_detect) i = feed_detect(bytes, i, out);
      else i = feed_wrapped(bytes, i, out);
    }
  }

  void flush(Time rt, RecordBatch& out) {
    read_time = rt;
    if (fmt == ContainerFormat::auto_detect && !line_buf.empty()) {
      if (is_blank(line_buf)) line_buf.clear();
      else decide(true, out);
    }
    if ((fmt == ContainerFormat::cri || fmt == ContainerFormat::docker) && (!line_buf.empty() || line_over)) {
      physical_line(line_buf, line_over, out);
      line_buf.clear();
      line_over = false;
    }
    for (auto& a : chan) {
      if (!a.open) continue;
      Piece pc;
      pc.offset = pos;
      pc.line = line_no;
      pc.line_offset = pos;
      pc.end = true;
      take(a, pc, out);
    }
    // What follows continues the same physical line, but as a new record.
    line_start = pos;
    committed = pos;
    committed_line = line_no;
  }

  std::uint64_t committed_offset() const {
    std::uint64_t c = committed;
    for (const auto& a : chan) {
      if (a.open) c = std::min(c, a.start);
    }
    return c;
  }

  std::uint64_t committed_line_no() const {
    std::uint64_t c = committed, l = committed_line;
    for (const auto& a : chan) {
      if (a.open && a.start < c) {
        c = a.start;
        l = a.line;
      }
    }
    return l;
  }

  void resume_at(std::uint64_t offset, std::uint64_t line) {
    pos = offset;
    line_start = offset;
    committed = offset;
    line_no = std::max<std::uint64_t>(line, 1);
    committed_line = line_no;
    line_buf.clear();
    line_over = false;
    for (auto& a : chan) a.reset();
  }
};

Decoder::Decoder(std::uint32_t stream, DecodeOptions options) : impl_(std::make_unique<Impl>(stream, options)) {}
Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

void Decoder::feed(std::string_view bytes, Time read_time, RecordBatch& out, bool in_place) {
  out.set_time_context(impl_->stream, impl_->opt.time);
  impl_->in_place = in_place;
  impl_->feed(bytes, read_time, out);
  impl_->in_place = false;
}
void Decoder::flush(Time read_time, RecordBatch& out) {
  out.set_time_context(impl_->stream, impl_->opt.time);
  impl_->flush(read_time, out);
}
bool Decoder::has_partial() const { return impl_->committed_offset() < impl_->pos; }
std::uint64_t Decoder::committed_offset() const { return impl_->committed_offset(); }
std::uint64_t Decoder::committed_line() const { return impl_->committed_line_no(); }
void Decoder::resume_at(std::uint64_t offset, std::uint64_t line) { impl_->resume_at(offset, line); }
ContainerFormat Decoder::format() const { return impl_->fmt; }
const DecodeStats& Decoder::stats() const { return impl_->stats; }

namespace decode_detail {
VectorFraming vector_framing() { return framing.load(std::memory_order_relaxed); }
VectorFraming set_vector_framing(VectorFraming wanted) {
  return framing.exchange(std::min(wanted, kBestFraming), std::memory_order_relaxed);
}
}  // namespace decode_detail

}  // namespace faultline
