// raw_limit.hpp -- what the raw Hyperscan limit is, shared by hs_limit and fl_count (which measures it beside the
// pipeline in its own process): the engine a block-mode scan runs with, and where a buffer of the file is cut.
// Header-only; needs only Hyperscan (hs_limit builds without faultline_core).
#pragma once

#include <dlfcn.h>
#include <hs.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace raw_limit {

// Hyperscan's handles, freed with them.
struct DatabaseDeleter {
  void operator()(hs_database_t* d) const noexcept { hs_free_database(d); }
};
struct ScratchDeleter {
  void operator()(hs_scratch_t* s) const noexcept { hs_free_scratch(s); }
};
struct CompileErrorDeleter {
  void operator()(hs_compile_error_t* e) const noexcept { hs_free_compile_error(e); }
};
using Database = std::unique_ptr<hs_database_t, DatabaseDeleter>;
using Scratch = std::unique_ptr<hs_scratch_t, ScratchDeleter>;
using CompileError = std::unique_ptr<hs_compile_error_t, CompileErrorDeleter>;

using ScanFunction = hs_error_t (*)(const hs_database_t*, const char*, unsigned int, unsigned int, hs_scratch_t*,
                                    match_event_handler, void*);

// The library's pick (hs_scan, its widest engine), or its AVX2 engine with databases compiled for AVX2: what faultline
// scans with on a CPU with AVX-512, whose engine in Vectorscan 5.4.9 misses matches depending on the buffer's address
// (daemon/match/match.cpp).
struct Engine {
  ScanFunction scan = hs_scan;
  bool avx2 = false;
  hs_platform_info_t platform{};  // with avx2: the platform to compile for
  const hs_platform_info_t* compile_for() const { return avx2 ? &platform : nullptr; }
};

// The engine asked for; none when `avx2` is asked of a library without an AVX2 entry point of its own
// (avx2_hs_scan: one built for a single instruction set, or for Arm).
inline std::optional<Engine> engine(bool avx2) {
  Engine e;
  if (!avx2) return e;
  void* f = ::dlsym(RTLD_DEFAULT, "avx2_hs_scan");
  if (f == nullptr) return std::nullopt;
  e.scan = reinterpret_cast<ScanFunction>(f);
  e.avx2 = true;
  hs_populate_platform(&e.platform);
  e.platform.cpu_features &= ~static_cast<unsigned long long>(HS_CPU_FEATURES_AVX512 | HS_CPU_FEATURES_AVX512VBMI);
  return e;
}

// A pattern file: one expression a line (a rule set's progs/hs.txt); blank lines and lines starting with '#' skipped.
struct Pattern {
  std::string expr;
  int source_line = 0;  // 1-based
};

// Its expressions; none when it cannot be opened.
inline std::optional<std::vector<Pattern>> read_patterns(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<Pattern> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    out.push_back({line, n});
  }
  return out;
}

// The end of the buffer that starts at `pos`: the last '\n' within `buf` bytes, or, for a longer line, that line's end.
inline std::size_t next_cut(std::string_view d, std::size_t pos, std::size_t buf) {
  const std::size_t n = d.size();
  if (n - pos <= buf) return n;
  const std::size_t lim = pos + buf;
  for (std::size_t i = lim; i > pos; --i) {
    if (d[i - 1] == '\n') return i;
  }
  const void* nl = std::memchr(d.data() + lim, '\n', n - lim);
  return nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - d.data()) + 1 : n;
}

}  // namespace raw_limit
