// Shared by the decode room's unit tests: decoding helpers and input builders (CRI, docker json-file, realistic
// serving logs). Included once per test executable.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "decode/decode_internal.hpp"
#include "faultline/decode.hpp"

namespace decode_test {

using namespace faultline;
using namespace std::chrono_literals;


Time T(const char* rfc3339) {
  auto t = parse_rfc3339(rfc3339);
  REQUIRE(t);
  return *t;
}

const Time kRead = Time(Duration(1'700'000'000'000'000'000));  // 2023-11-14T22:13:20Z, the "time of reading"

struct Rec {
  std::string text;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  Level level = Level::unknown;
  bool from_log = false;
  bool truncated = false;
  std::uint32_t stream = 0;

  bool operator==(const Rec& o) const {
    return text == o.text && line == o.line && offset == o.offset && time == o.time && level == o.level &&
           from_log == o.from_log && truncated == o.truncated && stream == o.stream;
  }
};

std::ostream& operator<<(std::ostream& os, const Rec& r) {
  return os << "{" << r.line << "@" << r.offset << " " << to_string(r.level) << " " << format_time(r.time)
            << (r.from_log ? " log" : " inherited") << (r.truncated ? " truncated" : "") << " '" << r.text << "'}";
}

void collect(const RecordBatch& b, std::vector<Rec>& out) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto& m = b[i];
    out.push_back(Rec{std::string(b.text(i)), m.line, m.offset, m.time, m.level, m.time_from_log, m.truncated,
                      m.stream});
  }
}

DecodeOptions options(ContainerFormat f = ContainerFormat::auto_detect, std::size_t max_line = 64 * 1024) {
  DecodeOptions o;
  o.format = f;
  o.max_line_bytes = max_line;
  o.time.reference = T("2026-12-01T00:00:00Z");
  return o;
}

// Feeds `input` in pieces given by `sizes` (cycled), then flushes.
std::vector<Rec> decode_chunked(std::string_view input, const DecodeOptions& o, const std::vector<std::size_t>& sizes,
                                DecodeStats* stats = nullptr, ContainerFormat* fmt = nullptr) {
  Decoder d(7, o);
  RecordBatch b;
  std::vector<Rec> out;
  std::size_t pos = 0, k = 0;
  while (pos < input.size()) {
    const std::size_t n = std::min(sizes[k++ % sizes.size()], input.size() - pos);
    d.feed(input.substr(pos, n), kRead, b);
    pos += n;
    collect(b, out);
    b.clear();
  }
  d.flush(kRead, b);
  collect(b, out);
  if (stats != nullptr) *stats = d.stats();
  if (fmt != nullptr) *fmt = d.format();
  return out;
}

std::vector<Rec> decode(std::string_view input, const DecodeOptions& o = options(), DecodeStats* stats = nullptr,
                        ContainerFormat* fmt = nullptr) {
  return decode_chunked(input, o, {input.size() + 1}, stats, fmt);
}

std::vector<std::string> texts(const std::vector<Rec>& recs) {
  std::vector<std::string> t;
  for (const auto& r : recs) t.push_back(r.text);
  return t;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(FAULTLINE_CORPUS_DIR)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string cri(const std::string& time, const char* stream, char tag, const std::string& msg) {
  return time + " " + stream + " " + tag + " " + msg + "\n";
}

// A JSON string literal for docker's json-file driver.
std::string json_quote(std::string_view s) {
  std::string o = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\x1b': o += "\\u001b"; break;
      default: o += c;
    }
  }
  return o + "\"";
}

std::string docker(std::string_view log, const char* stream, const char* time) {
  return std::string("{\"log\":") + json_quote(log) + ",\"stream\":\"" + stream + "\",\"time\":\"" + time + "\"}\n";
}

// A realistic mixed raw log: vLLM, TRT-LLM, SGLang lines, tracebacks, a tqdm bar with CRs, CRLF, ANSI colours,
// caret-notation, blank lines, and a UTF-8 box frame.
std::string realistic_raw_log() {
  std::string s;
  s += "(APIServer pid=1) INFO 11-29 10:08:01 [api_server.py:1] vLLM API server version 0.11.0\n";
  s += "\x1b[1;36m(EngineCore_DP0 pid=88)\x1b[0;0m WARNING 11-29 10:08:02 [core.py:12] slow start\n";
  s += "Loading safetensors checkpoint shards:   0% Completed | 0/4\rLoading safetensors checkpoint shards:  50% "
       "Completed | 2/4\rLoading safetensors checkpoint shards: 100% Completed | 4/4\r\n";
  s += "\n\n";
  s += "[11/29/2026-10:08:03] [TRT-LLM] [W] something \xE2\x94\x82 odd\r\n";
  s += "[2026-11-29 10:08:04 DP0 TP3] Scheduler hit an exception: Traceback (most recent call last):\n";
  s += "  File \"/x/scheduler.py\", line 1, in run\n";
  s += "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  s += "^[[1;36m(APIServer pid=9)^[[0;0m ERROR 11-29 10:08:05 [serving_chat.py:250] Error^M^[[1;36m(APIServer "
       "pid=9)^[[0;0m ERROR 11-29 10:08:05 [serving_chat.py:250] Traceback^M\n";
  s += "E1129 10:08:06.123456 12345 nccl.cc:12] NCCL WARN timeout\n";
  s += "\xE2\x94\x82 ERROR 11-29 10:08:07 engine.py:157] RuntimeError: CUDA error         \n";
  s += "2025-11-11 06:41:27,319 - WARNING - autotuner.py:485 - skipping tactic\n";
  s += "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout\n";
  s += "sglang-1  | [2026-11-29 10:08:09 TP1] Load weight end. \xF0\x9F\x98\x80 \xC3\xA9\n";
  s += "no newline at the end";
  return s;
}


// Runs `body(framing)` once with each vector code this CPU has for framing plain lines (AVX-512, AVX2, none: the best
// one and each lesser one picked by hand), then puts the best one back.
template <class Body>
void for_each_vector_framing(Body&& body) {
  using faultline::decode_detail::VectorFraming;
  const VectorFraming best = faultline::decode_detail::vector_framing();
  struct Restore {
    VectorFraming was;
    ~Restore() { faultline::decode_detail::set_vector_framing(was); }
  } restore{best};
  for (const auto framing : {VectorFraming::avx512, VectorFraming::avx2, VectorFraming::none}) {
    if (framing > best) continue;  // this CPU has no such vector code
    faultline::decode_detail::set_vector_framing(framing);
    REQUIRE(faultline::decode_detail::vector_framing() == framing);
    body(framing);
  }
}

}  // namespace decode_test
