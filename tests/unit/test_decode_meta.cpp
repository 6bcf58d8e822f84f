// Decode room, time and level: the serving stacks' shapes, year inference, zones, inheritance, resuming, and the
// real corpus decoded in any chunking.
#include <catch2/catch.hpp>

#include "decode_support.hpp"

using namespace decode_test;

namespace {

struct Shape {
  const char* line;
  Level level;
  const char* time;  // nullptr: no time
};

}  // namespace

TEST_CASE("parse_line_meta reads the serving stacks' time and level shapes", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  const Shape shapes[] = {
      // vLLM
      {"INFO 11-29 10:08:01 [file.py:123] msg", Level::info, "2026-11-29T10:08:01Z"},
      {"ERROR 01-06 23:27:37 [core.py:890] boom", Level::error, "2026-01-06T23:27:37Z"},
      {"INFO 11-29 10:08:01 file.py:123] old format", Level::info, "2026-11-29T10:08:01Z"},
      {"WARNING 11-29 10:08:01 [x.py:1] w", Level::warning, "2026-11-29T10:08:01Z"},
      {"DEBUG 11-29 10:08:01 [x.py:1] d", Level::debug, "2026-11-29T10:08:01Z"},
      {"CRITICAL 11-29 10:08:01 [x.py:1] c", Level::critical, "2026-11-29T10:08:01Z"},
      {"(EngineCore_DP0 pid=88) ERROR 01-06 23:27:37 [core.py:890] x", Level::error, "2026-01-06T23:27:37Z"},
      {"(VllmWorker TP1 pid=12) ERROR 08-20 03:19:43 [multiproc_executor.py:596] x", Level::error,
       "2026-08-20T03:19:43Z"},
      {"(Worker_PP0 pid=38385) 2025-11-11 06:41:27,319 - WARNING - autotuner.py:485 - x", Level::warning,
       "2025-11-11T06:41:27.319Z"},
      {"(APIServer pid=1) INFO:     Started server process [57071]", Level::info, nullptr},
      {"(VllmWorkerProcess pid=802) ERROR 04-23 00:04:19 multiproc_worker_utils.py:240] x", Level::error,
       "2026-04-23T00:04:19Z"},
      {"\xE2\x94\x82 ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error", Level::error,
       "2026-09-27T06:46:46Z"},
      {"  | ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker died", Level::error, "2026-07-01T13:54:43Z"},
      // TensorRT-LLM
      {"[11/29/2026-10:08:01] [TRT-LLM] [W] msg", Level::warning, "2026-11-29T10:08:01Z"},
      {"[TRT-LLM] [E] msg", Level::error, nullptr},
      {"[TensorRT-LLM][ERROR] Assertion failed: Unsupported architecture", Level::error, nullptr},
      {"[TensorRT-LLM][WARNING] max_beam_width is not specified", Level::warning, nullptr},
      {"[TensorRT-LLM][INFO] Max KV cache pages per sequence: 25", Level::info, nullptr},
      {"[04/28/2024-15:57:10] [TRT] [I] Compute capability: (7, 5)", Level::info, "2024-04-28T15:57:10Z"},
      {"[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [E] Failed to initialize executor", Level::error,
       "2025-06-21T01:30:42Z"},
      {"[TensorRT-LLM] TensorRT-LLM version: 0.9.0", Level::unknown, nullptr},
      // SGLang
      {"[2026-09-21 13:38:19 TP1] Running FlashInfer autotune", Level::unknown, "2026-09-21T13:38:19Z"},
      {"[2026-09-21 13:38:19 DP0 TP3] Scheduler hit an exception: Traceback", Level::unknown, "2026-09-21T13:38:19Z"},
      {"[2026-09-21 13:38:19] Server started", Level::unknown, "2026-09-21T13:38:19Z"},
      {"sglang-1  | [2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3", Level::unknown, "2025-11-01T16:50:36Z"},
      // Python logging family
      {"2025-11-11 06:41:27,319 - WARNING - msg", Level::warning, "2025-11-11T06:41:27.319Z"},
      {"2025-11-11 06:41:27,319 - my.logger - ERROR - msg", Level::error, "2025-11-11T06:41:27.319Z"},
      {"2024-12-20 10:00:01 INFO 1234 [file.py:12] msg", Level::info, "2024-12-20T10:00:01Z"},
      {"2024-06-01 10:00:00,123 xinference.core 1234 ERROR    msg", Level::error, "2024-06-01T10:00:00.123Z"},
      {"2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):", Level::error,
       "2024-04-27T10:13:05Z"},
      // uvicorn
      {"INFO:     127.0.0.1:5000 - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error", Level::info,
       nullptr},
      {"ERROR:    Exception in ASGI application", Level::error, nullptr},
      {"WARNING:root:something", Level::warning, nullptr},
      // glog / abseil / torch
      {"E1129 10:08:01.123456 12345 file.cc:12] msg", Level::error, "2026-11-29T10:08:01.123Z"},
      {"W0102 03:04:05.000001 1 f.cc:1] msg", Level::warning, "2026-01-02T03:04:05Z"},
      {"F1129 10:08:01.123456 12345 file.cc:12] fatal", Level::critical, "2026-11-29T10:08:01.123Z"},
      {"[rank0]:[E1129 10:08:01.123456 ProcessGroupNCCL.cpp:632] [PG 0 Rank 0] timeout", Level::error,
       "2026-11-29T10:08:01.123Z"},
      {"[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout", Level::error,
       nullptr},
      {"[rank2]:[W ProcessGroupNCCL.cpp:1414] x", Level::warning, nullptr},
      // RFC 3339 at line start
      {"2026-11-29T10:08:01.123Z msg", Level::unknown, "2026-11-29T10:08:01.123Z"},
      {"2026-11-29T10:08:01.123456Z ERROR something failed", Level::error, "2026-11-29T10:08:01.123Z"},
      {"2026-11-29T12:08:01+02:00 info starting", Level::info, "2026-11-29T10:08:01Z"},
      {"[2026-01-31T04:40:19Z] E           vllm.v1.engine.exceptions.EngineDeadError", Level::unknown,
       "2026-01-31T04:40:19Z"},
      // kernel
      {"[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", Level::unknown, nullptr},
      {"[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", Level::unknown, nullptr},
      {"Nov 29 10:08:01 host kernel: NVRM: Xid (PCI:0000:3b:00): 79", Level::unknown, "2026-11-29T10:08:01Z"},
      {"Nov  2 10:08:01 host kernel: NVRM: Xid", Level::unknown, "2026-11-02T10:08:01Z"},
      {"[Wed Jun 24 15:44:42 2026] NVRM: Xid (PCI:0000:70:00): 31", Level::unknown, "2026-06-24T15:44:42Z"},
      // llama.cpp server
      {"0.17.512.622 E ggml_cuda_compute_forward: ADD failed", Level::error, nullptr},
      // no shape
      {"Traceback (most recent call last):", Level::unknown, nullptr},
      {"  File \"/x.py\", line 1, in f", Level::unknown, nullptr},
      {"RuntimeError: CUDA error: out of memory", Level::unknown, nullptr},
      {"Error: Failed to initialize the TMA descriptor 999", Level::unknown, nullptr},
      {"INFORMATIONAL 11-29 10:08:01 not a level word", Level::unknown, nullptr},
      {"ERROR 13-29 10:08:01 [x.py:1] bad month", Level::unknown, nullptr},
      {"[AutoTuner]: Tuning trtllm_batch_decode_mla:   0%|    | 0/21 [00:00<?, ?profile/s][2026-09-21 13:38:29 TP1] "
       "Scheduler hit an exception",
       Level::unknown, nullptr},
      {"(most recent call last) ERROR 11-29 10:08:01 [x.py:1]", Level::unknown, nullptr},
      {"", Level::unknown, nullptr},
  };
  for (const auto& s : shapes) {
    INFO(s.line);
    const LineMeta m = parse_line_meta(s.line, ctx);
    CHECK(m.level == s.level);
    if (s.time == nullptr) {
      CHECK_FALSE(m.time);
    } else {
      REQUIRE(m.time);
      CHECK(format_time(*m.time) == format_time(T(s.time)));
    }
  }
}

TEST_CASE("parse_line_meta keeps nanoseconds", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  auto m = parse_line_meta("2026-11-29T10:08:01.123456789Z x", ctx);
  REQUIRE(m.time);
  CHECK(*m.time == T("2026-11-29T10:08:01.123456789Z"));
  m = parse_line_meta("E1129 10:08:01.123456 1 f.cc:1] x", ctx);
  REQUIRE(m.time);
  CHECK(*m.time == T("2026-11-29T10:08:01.123456Z"));
}

// Found by fuzz_timestamps and fuzz_decode: a year past 2262 overflowed the nanosecond count (UBSan: signed overflow).
TEST_CASE("a printed year a Time cannot hold is no timestamp", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  for (const char* line : {"2525-07-02 07:41:58 D bbb", "[2525-07-02 07:41:58] x", "9999-12-31T23:59:59Z x",
                           "1500-01-01T00:00:00Z x"}) {
    INFO(line);
    CHECK_FALSE(parse_line_meta(line, ctx).time);
  }
  auto m = parse_line_meta("2261-12-31T23:59:59Z x", ctx);
  REQUIRE(m.time);
  CHECK(*m.time == T("2261-12-31T23:59:59Z"));
}

TEST_CASE("times without a year take the year nearest the reference, at most a day ahead", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2027-01-01T00:00:00Z");
  const auto year_of = [&](const char* line) {
    const auto m = parse_line_meta(line, ctx);
    REQUIRE(m.time);
    return format_time(*m.time);
  };
  CHECK(year_of("INFO 12-31 23:59:59 [a.py:1] x") == "2026-12-31T23:59:59.000Z");
  CHECK(year_of("INFO 01-01 12:00:00 [a.py:1] x") == "2027-01-01T12:00:00.000Z");
  CHECK(year_of("INFO 01-02 12:00:00 [a.py:1] x") == "2026-01-02T12:00:00.000Z");
  CHECK(year_of("Dec 31 23:59:59 host kernel: x") == "2026-12-31T23:59:59.000Z");
  CHECK(year_of("E1231 23:59:59.000000 1 f.cc:1] x") == "2026-12-31T23:59:59.000Z");
  ctx.reference = T("2026-12-31T12:00:00Z");
  CHECK(year_of("INFO 01-01 10:00:00 [a.py:1] x") == "2027-01-01T10:00:00.000Z");
  CHECK(year_of("INFO 12-31 13:00:00 [a.py:1] x") == "2026-12-31T13:00:00.000Z");
  // Feb 29 exists only in leap years: the latest one before the reference.
  ctx.reference = T("2027-03-01T00:00:00Z");
  CHECK(year_of("INFO 02-29 10:00:00 [a.py:1] x") == "2024-02-29T10:00:00.000Z");
  // A year printed in the line is kept as printed.
  CHECK(year_of("[2020-05-05 01:02:03 TP0] x") == "2020-05-05T01:02:03.000Z");
}

TEST_CASE("an unset reference means the wall clock for parse_line_meta and read_time for a Decoder", "[decode]") {
  TimeContext ctx;  // reference unset
  const auto m = parse_line_meta("INFO 01-01 00:00:00 [a.py:1] x", ctx);
  REQUIRE(m.time);
  const auto now = std::chrono::system_clock::now();
  CHECK(*m.time <= now + 24h);
  CHECK(*m.time > now - 24h * 367);

  DecodeOptions o;  // reference unset
  Decoder d(0, o);
  RecordBatch b;
  d.feed("INFO 12-31 23:00:00 [a.py:1] x\n", T("2031-06-01T00:00:00Z"), b);
  REQUIRE(b.size() == 1);
  CHECK(format_time(b[0].time) == "2030-12-31T23:00:00.000Z");
}

TEST_CASE("times without a zone use utc_offset; explicit zones ignore it", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  ctx.utc_offset = std::chrono::hours(2);
  const auto t = [&](const char* line) {
    const auto m = parse_line_meta(line, ctx);
    REQUIRE(m.time);
    return format_time(*m.time);
  };
  CHECK(t("INFO 11-29 10:08:01 [a.py:1] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("[2026-11-29 10:08:01 TP0] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("[11/29/2026-10:08:01] [TRT-LLM] [I] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("2026-11-29 10:08:01,5 - INFO - x") == "2026-11-29T08:08:01.500Z");
  CHECK(t("2026-11-29T10:08:01Z x") == "2026-11-29T10:08:01.000Z");
  CHECK(t("2026-11-29T10:08:01-05:00 x") == "2026-11-29T15:08:01.000Z");
  ctx.utc_offset = std::chrono::hours(-8);
  // 2026-12-31 20:00 local would be more than a day after the reference: the year before.
  CHECK(t("INFO 12-31 20:00:00 [a.py:1] x") == "2026-01-01T04:00:00.000Z");
}

TEST_CASE("lines without a time inherit the last time, else the time of reading", "[decode]") {
  const auto r = decode(
      "Traceback (most recent call last):\n"
      "ERROR 11-29 10:08:01 [a.py:1] boom\n"
      "  File \"x.py\", line 1\n"
      "RuntimeError: bad\n"
      "WARNING 11-29 10:09:00 [a.py:1] later\n"
      "tail\n");
  REQUIRE(r.size() == 6);
  CHECK(r[0].time == kRead);
  CHECK_FALSE(r[0].from_log);
  CHECK(r[1].time == T("2026-11-29T10:08:01Z"));
  CHECK(r[1].from_log);
  CHECK(r[2].time == T("2026-11-29T10:08:01Z"));
  CHECK_FALSE(r[2].from_log);
  CHECK(r[3].time == T("2026-11-29T10:08:01Z"));
  CHECK(r[5].time == T("2026-11-29T10:09:00Z"));
  CHECK(r[2].level == Level::unknown);
}

// ---- checkpoints -----------------------------------------------------------------------------------------------------

TEST_CASE("resume_at from committed_offset continues exactly where a restart should", "[decode]") {
  const std::string log = realistic_raw_log() + "\n";
  const auto whole = decode(log);
  for (std::size_t cut : {std::size_t{1}, std::size_t{90}, std::size_t{200}, log.size() / 2, log.size() - 5}) {
    INFO(cut);
    Decoder first(7, options());
    RecordBatch b;
    first.feed(std::string_view(log).substr(0, cut), kRead, b);
    std::vector<Rec> got;
    collect(b, got);
    const std::uint64_t off = first.committed_offset();
    const std::uint64_t line = first.committed_line();
    CHECK(off <= cut);
    // Records emitted so far end at or before the committed offset, except CR segments of the open line.
    Decoder second(7, options());
    second.resume_at(off, line);
    RecordBatch b2;
    second.feed(std::string_view(log).substr(off), kRead, b2);
    second.flush(kRead, b2);
    std::vector<Rec> rest;
    collect(b2, rest);
    // Drop what the first decoder already emitted from the open line (those are re-read after a restart).
    std::vector<Rec> merged;
    for (const auto& r : got) {
      if (r.offset < off) merged.push_back(r);
    }
    merged.insert(merged.end(), rest.begin(), rest.end());
    REQUIRE(merged.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      CHECK(merged[i].text == whole[i].text);
      CHECK(merged[i].line == whole[i].line);
      CHECK(merged[i].offset == whole[i].offset);
      CHECK(merged[i].level == whole[i].level);
    }
  }
}

TEST_CASE("resume_at numbers lines and offsets from the given point", "[decode]") {
  Decoder d(0, options(ContainerFormat::raw));
  d.resume_at(1000, 42);
  CHECK(d.committed_offset() == 1000);
  CHECK(d.committed_line() == 42);
  RecordBatch b;
  d.feed("a\n\nb\n", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b[0].line == 42);
  CHECK(b[0].offset == 1000);
  CHECK(b[1].line == 44);
  CHECK(b[1].offset == 1003);
  CHECK(d.committed_offset() == 1005);
  CHECK(d.committed_line() == 45);
}

TEST_CASE("a moved Decoder keeps its state", "[decode]") {
  Decoder d(3, options());
  RecordBatch b;
  d.feed("par", kRead, b);
  Decoder moved(std::move(d));
  moved.feed("tial\n", kRead, b);
  REQUIRE(b.size() == 1);
  CHECK(b.text(0) == "partial");
  CHECK(b[0].stream == 3);
  Decoder other(4, options());
  other = std::move(moved);
  other.feed("x\n", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b[1].line == 2);
}

// ---- the real-log corpus ---------------------------------------------------------------------------------------------

TEST_CASE("every corpus file decodes in any chunking without loss", "[decode][corpus]") {
  const auto files = corpus_files();
  REQUIRE(files.size() >= 40);
  for (const auto& f : files) {
    INFO(f.filename().string());
    const std::string data = read_file(f);
    DecodeStats st;
    ContainerFormat fmt{};
    const auto r = decode(data, options(), &st, &fmt);
    CHECK(fmt == ContainerFormat::raw);
    CHECK(!r.empty());
    CHECK(st.malformed == 0);
    CHECK(st.bytes == data.size());
    std::uint64_t prev_line = 0;
    for (const auto& rec : r) {
      REQUIRE(rec.text.find('\n') == std::string::npos);
      REQUIRE(rec.text.find('\x1b') == std::string::npos);
      REQUIRE(rec.line >= prev_line);
      REQUIRE(rec.offset < data.size());
      prev_line = rec.line;
    }
    const auto odd = decode_chunked(data, options(), {3, 1, 255});
    REQUIRE(odd.size() == r.size());
    for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(odd[i] == r[i]);
  }
}

namespace {

struct Known {
  const char* file;
  const char* starts_with;  // the first record whose text starts with this
  Level level;
  const char* time;  // nullptr: not checked
};

}  // namespace

TEST_CASE("known corpus lines get the expected level and time", "[decode][corpus]") {
  const Known known[] = {
      {"moe_gemm_runtime_error__trtllm-5389.log", "[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [E] Failed", Level::error,
       "2025-06-21T01:30:42Z"},
      {"moe_gemm_runtime_error__trtllm-5389.log", "[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [I]", Level::info, nullptr},
      {"fmha_unsupported_arch__trtllm-320.log", "[TensorRT-LLM][ERROR] Assertion failed", Level::error, nullptr},
      {"cuda_oom__tensorrtllm-backend-456-precursor.log", "[TensorRT-LLM][WARNING] max_beam_width", Level::warning,
       nullptr},
      {"cuda_oom__tensorrtllm-backend-456-precursor.log", "[TensorRT-LLM][INFO] Max KV cache pages", Level::info,
       nullptr},
      {"fmha_unsupported_arch__trtllm-1515-sysinfo.log", "[04/28/2024-15:57:10] [TRT-LLM] [I] Compute capability",
       Level::info, "2024-04-28T15:57:10Z"},
      {"nccl_watchdog_timeout__vllm-6042.log", "  | [rank0]:[E ProcessGroupNCCL.cpp:563]", Level::error, nullptr},
      {"nccl_watchdog_timeout__vllm-6042.log", "  | ERROR 07-01 13:54:43", Level::error, "2026-07-01T13:54:43Z"},
      {"nccl_watchdog_timeout__vllm-9839.log", "[rank2]:[E ProcessGroupNCCL.cpp:1414]", Level::error, nullptr},
      {"no_cache_blocks__sglang-7691.log", "[2025-07-02 07:41:59 DP7 TP7] max_total_tokens", Level::unknown,
       "2025-07-02T07:41:59Z"},
      {"max_model_len__xinference-1715.log", "2024-06-25 16:32:00,563 xinference.api.restful_api", Level::error,
       "2024-06-25T16:32:00.563Z"},
      {"no_cache_blocks__qanything-302.log", "2024-04-27 10:13:05 | ERROR | stderr |", Level::error,
       "2024-04-27T10:13:05Z"},
      {"no_cache_blocks__qanything-302.log", "INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0", Level::info,
       "2026-04-27T10:13:05Z"},
      {"illegal_memory_access__vllm-11366.log", "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] RuntimeError",
       Level::error, "2024-12-19T21:40:35Z"},
      {"illegal_memory_access__vllm-6976.log", "\xE2\x94\x82 ERROR 09-27 06:46:46 engine.py:157] RuntimeError",
       Level::error, "2026-09-27T06:46:46Z"},
      {"chat_template_error__vllm-13978.log", "ERROR:    Exception in ASGI application", Level::error, nullptr},
      {"chat_template_error__vllm-13978.log", "INFO:     127.0.0.1:57158", Level::info, nullptr},
      {"chat_template_error__seed-oss-10.log", "(APIServer pid=679631) ERROR 08-22 21:36:14 [serving_chat.py:250] Error in",
       Level::error, "2026-08-22T21:36:14Z"},
      {"cutlass_moe_tma__flashinfer-2077.log", "(Worker_PP0 pid=38385) 2025-11-11 06:41:27,319 - WARNING", Level::warning,
       "2025-11-11T06:41:27.319Z"},
      {"fmha_unsupported_arch__vllm-pr31740-trace.log", "(EngineCore_DP0 pid=4599) ERROR 01-06 23:27:37", Level::error,
       "2026-01-06T23:27:37Z"},
      {"cutlass_scaled_mm__vllm-23253.log", "(VllmWorker TP1 pid=189) ERROR 08-20 03:19:43", Level::error,
       "2026-08-20T03:19:43Z"},
      {"engine_core_fatal__johnpfeiffer-b300-flashmla-tma.log", "(APIServer pid=57071) INFO:     Started server",
       Level::info, nullptr},
      {"cuda_oom__sglang-12496-precursor.log", "sglang-1  | [2025-11-01 16:50:36 TP0]", Level::unknown,
       "2025-11-01T16:50:36Z"},
      {"fmha_unsupported_arch__sglang-40558-partial.log", "[AutoTuner]: Tuning", Level::unknown,
       "2026-09-21T13:38:19Z"},  // inherited
      {"engine_dead__pytorch-174081-ci.log", "[2026-01-31T04:40:19Z] E ", Level::unknown, "2026-01-31T04:40:19Z"},
      {"xid_error__sglang-29160.log", "[Wed Jun 24 15:44:42 2026] NVRM: Xid", Level::unknown, "2026-06-24T15:44:42Z"},
      {"xid_error__nvsentinel-155.log", "[ 1843.308145] NVRM", Level::unknown, nullptr},
      {"no_kernel_image__gpustack-1382.log", "0.17.512.848 E CUDA error: no kernel image", Level::error, nullptr},
      {"kv_cache_lt_max_model_len__vllm-16118.log", "ERROR 04-05 01:12:55 [core.py:390] ValueError", Level::error,
       "2026-04-05T01:12:55Z"},
      {"torch_compile_failure__vllm-17018.log", "(VllmWorkerProcess pid=802) ERROR 04-23 00:04:19", Level::error,
       "2026-04-23T00:04:19Z"},
  };
  for (const auto& k : known) {
    INFO(k.file << " | " << k.starts_with);
    const auto recs = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / k.file));
    const Rec* found = nullptr;
    for (const auto& r : recs) {
      if (r.text.rfind(k.starts_with, 0) == 0) {
        found = &r;
        break;
      }
    }
    REQUIRE(found != nullptr);
    CHECK(found->level == k.level);
    if (k.time != nullptr) CHECK(format_time(found->time) == format_time(T(k.time)));
  }
}

TEST_CASE("caret-notation corpus lines split into one record per original line", "[decode][corpus]") {
  const auto recs = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / "chat_template_error__seed-oss-10.log"));
  REQUIRE(recs.size() == 7);
  for (const auto& r : recs) {
    CHECK(r.text.rfind("(APIServer pid=679631) ERROR 08-22 21:36:14 [serving_chat.py:250]", 0) == 0);
    CHECK(r.text.find("^M") == std::string::npos);
    CHECK(r.text.find("^[") == std::string::npos);
    CHECK(r.level == Level::error);
  }
  const auto pasted = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / "illegal_memory_access__vllm-11366.log"));
  REQUIRE(!pasted.empty());
  for (const auto& r : pasted) CHECK(r.text.find("^M") == std::string::npos);
}
