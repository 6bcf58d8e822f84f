// The fingerprint room's pure functions: logger prefixes, message templates, signatures (stability across versions,
// pids and sizes; separation of different failures; the root cause of a chained traceback).
#include <catch2/catch.hpp>

#include "faultline/fingerprint.hpp"
#include "fingerprint_support.hpp"
#include "support.hpp"

using namespace faultline;
using namespace fingerprinttest;

TEST_CASE("logger prefixes are stripped, the indentation of frames is kept", "[fingerprint]") {
  CHECK(strip_log_prefix("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] RuntimeError: boom") ==
        "RuntimeError: boom");
  CHECK(strip_log_prefix("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866]   File \"x.py\", line 3, in f") ==
        "  File \"x.py\", line 3, in f");
  CHECK(strip_log_prefix("[2025-01-01 10:00:00 TP0] Scheduler hit an exception") == "Scheduler hit an exception");
  CHECK(strip_log_prefix("[TensorRT-LLM][ERROR] Assertion failed: oops") == "Assertion failed: oops");
  CHECK(strip_log_prefix("F0420 23:07:59.585644 78855 service_based_gcs_client.cc:89]  Check failed: n < 3") ==
        " Check failed: n < 3");
  CHECK(strip_log_prefix("06.05 13:15:31 ASTOR ollama[2690]: panic: runtime error") == "panic: runtime error");
  CHECK(strip_log_prefix("Dec 01 10:00:00 gpu-17 vllm[123]: ValueError: bad") == "ValueError: bad");
  CHECK(strip_log_prefix("[rank0]: torch.distributed.DistStoreError: Timed out") ==
        "torch.distributed.DistStoreError: Timed out");
  CHECK(strip_log_prefix("ERROR:    [Errno 98] Address already in use") == "   [Errno 98] Address already in use");
  CHECK(strip_log_prefix("RuntimeError: CUDA error: device-side assert triggered") ==
        "RuntimeError: CUDA error: device-side assert triggered");
  CHECK(strip_log_prefix("Error: 500 Internal Server Error") == "Error: 500 Internal Server Error");
}

// A prefix's words end at a space or a tab, whatever their length and wherever they fall against the eight bytes the
// strip looks at at once; a byte that differs from a blank only in its high bit is no blank.
TEST_CASE("logger prefixes are read word by word at any word length, tabs as spaces", "[fingerprint]") {
  CHECK(strip_log_prefix("CRITICAL 2025-01-01T10:00:00Z engine died") == "engine died");
  CHECK(strip_log_prefix("ERROR\t11-29\t10:08:01\t[core.py:866]\tboom") == "boom");
  CHECK(strip_log_prefix("Dec 01 10:00:00 gpu-node-17.example.internal vllm[123]: ValueError: bad") ==
        "ValueError: bad");
  CHECK(strip_log_prefix("I1201 10:08:01.123456 88 very_long_source_file_name.cc:1234] Check failed: x") ==
        "Check failed: x");
  CHECK(strip_log_prefix("vllm.engine.async_llm_engine_logger_name - ERROR - boom") == "boom");
  CHECK(strip_log_prefix("INFO x") == "x");
  CHECK(strip_log_prefix("WARN").empty());
  CHECK(strip_log_prefix("W") == "W");
  CHECK(strip_log_prefix("INFO 11-29\xa0"
                         "10:08:01 boom") == "11-29\xa0"
                                             "10:08:01 boom");
  CHECK(strip_log_prefix("INFO 11-29\x89"
                         "10:08:01 boom") == "11-29\x89"
                                             "10:08:01 boom");
  CHECK(strip_log_prefix("INFO !x !y") == "!x !y");
  CHECK(strip_log_prefix("ERROR 12345678901234") == "12345678901234");
}

TEST_CASE("message templates replace what varies between occurrences", "[fingerprint]") {
  CHECK(message_template("Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)") ==
        "Tried to allocate <size> (GPU <num>; <size> total)");
  CHECK(message_template("at 0x7f3c5f628350 in /usr/lib/libcuda.so.1") == "at <hex> in <path>");
  CHECK(message_template("request 3f2b8c1e-9a0d-4c1b-8e2f-0123456789ab failed") == "request <uuid> failed");
  CHECK(message_template("No module named 'flash_attn'") == "No module named <id>");
  CHECK(message_template("shape '[16, 8]' is invalid for input of size 4096") ==
        "shape '<shape>' is invalid for input of size <num>");
  CHECK(message_template("expected torch.Size([16, 4096]) got (2, 3)") == "expected torch.Size(<shape>) got <shape>");
  CHECK(message_template("connect to 10.0.0.12:29500 timed out at 10:08:01.123") ==
        "connect to <addr> timed out at <time>");
  CHECK(message_template("pid=88 rank0 sm_120 int32 Float8_e5m2") == "pid=<num> rank0 sm_120 int32 Float8_e5m2");
  CHECK(message_template("see https://github.com/vllm-project/vllm/issues/8948 now") == "see <url> now");
  CHECK(message_template("  two   spaces  ") == "two spaces");
  CHECK(message_template("a 2x3x4 tensor, commit deadbeef12") == "a <shape> tensor, commit <hex>");
}

TEST_CASE("the same failure from two versions, pids and sizes has one fingerprint", "[fingerprint]") {
  FailureSignature a = signature_of(views(kOld));
  FailureSignature b = signature_of(views(kNew));
  CHECK(a.type == "RuntimeError");
  CHECK(a.frames == std::vector<std::string>{"flash_attn.py:forward", "model_runner.py:execute_model"});
  CHECK(a.message_template == b.message_template);
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.terminal_index == 5);
  // Printed through vLLM's logger, each line prefixed by a process tag, level, time and source position.
  FailureSignature c = signature_of(views(with_prefix("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] ", kNew)));
  CHECK(c.fingerprint == a.fingerprint);
  FailureSignature d = signature_of(views(with_prefix("[rank1]: ", kOld)));
  CHECK(d.fingerprint == a.fingerprint);
  // The exception class moved between modules (torch.cuda.X in one version, torch.X in another).
  auto moved = kOld;
  moved.back() = "torch.cuda.OutOfMemoryError: out";
  auto moved2 = kOld;
  moved2.back() = "torch.OutOfMemoryError: out";
  CHECK(signature_of(views(moved)).fingerprint == signature_of(views(moved2)).fingerprint);
}

TEST_CASE("different failures have different fingerprints", "[fingerprint]") {
  const std::string base = signature_of(views(kOld)).fingerprint;
  auto other_type = kOld;
  other_type.back() = "ValueError: shape mismatch: value tensor of shape [16, 8, 128]";
  auto other_message = kOld;
  other_message.back() = "RuntimeError: CUDA error: device-side assert triggered";
  auto other_frame = kOld;
  other_frame[3] = "  File \"/usr/local/lib/python3.10/dist-packages/vllm/attention/backends/xformers.py\", line 9, in forward";
  auto same_type_other_words = kOld;
  same_type_other_words.back() = "RuntimeError: CUDA error: an illegal memory access was encountered";
  const std::vector<std::string> fingerprints = {
      base,
      signature_of(views(other_type)).fingerprint,
      signature_of(views(other_message)).fingerprint,
      signature_of(views(other_frame)).fingerprint,
      signature_of(views(same_type_other_words)).fingerprint,
      signature_of(views({"terminate called after throwing an instance of 'std::runtime_error'",
                          "  what():  cudaMalloc failed: out of memory"}))
          .fingerprint,
      signature_of(views({"terminate called after throwing an instance of 'c10::Error'",
                          "  what():  cudaMalloc failed: out of memory"}))
          .fingerprint,
  };
  for (std::size_t i = 0; i < fingerprints.size(); ++i) {
    for (std::size_t j = i + 1; j < fingerprints.size(); ++j) {
      INFO(i << " vs " << j);
      CHECK(fingerprints[i] != fingerprints[j]);
    }
  }
}

TEST_CASE("the root cause of a chained traceback is the terminal line", "[fingerprint]") {
  FailureSignature s = signature_of(views({
      "Traceback (most recent call last):",
      "  File \"/x/loader.py\", line 12, in load",
      "OSError: [Errno 28] No space left on device",
      "",
      "The above exception was the direct cause of the following exception:",
      "",
      "Traceback (most recent call last):",
      "  File \"/x/engine.py\", line 3, in start",
      "RuntimeError: Engine core initialization failed. See root cause above.",
  }));
  CHECK(s.type == "OSError");
  CHECK(s.message_template == "[Errno <num>] No space left on device");
  CHECK(s.frames == std::vector<std::string>{"loader.py:load"});
  CHECK(s.terminal == "OSError: [Errno 28] No space left on device");

  FailureSignature t = signature_of(views({"terminate called after throwing an instance of 'std::runtime_error'",
                                           "  what():  cudaMalloc failed: out of memory",
                                           "Aborted (core dumped)"}));
  CHECK(t.type == "terminate std::runtime_error");
  CHECK(t.message == "cudaMalloc failed: out of memory");
  FailureSignature f = signature_of(views({"Fatal Python error: Segmentation fault", "",
                                           "Stack (most recent call first):",
                                           "  File \"/a/torch/cuda/graphs.py\", line 77 in capture_begin",
                                           "  File \"/a/vllm/model_runner.py\", line 782 in capture"}));
  CHECK(f.type == "Fatal Python error");
  CHECK(f.frames == std::vector<std::string>{"graphs.py:capture_begin", "model_runner.py:capture"});
  FailureSignature r = signature_of(views({"thread 'main' panicked at src/tokenizer/simple.rs:43:47:",
                                           "called `Option::unwrap()` on a `None` value"}));
  CHECK(r.type == "panic");
  CHECK(r.frames == std::vector<std::string>{"simple.rs"});
  CHECK(r.message_template == "called <id> on a <id> value");
}
