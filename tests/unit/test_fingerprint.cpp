// The fingerprint room's Detector through the real pipeline: one incident per unknown failure, typed rules win,
// levels, severity, batching, partial stories, the inventory. Prefixes, templates and signatures:
// test_fingerprint_signature.cpp.
#include <catch2/catch.hpp>
#include <re2/re2.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>

#include "faultline/fingerprint.hpp"
#include "fingerprint_support.hpp"
#include "support.hpp"

using namespace faultline;
using faultline::testing::at;
using faultline::testing::compile_yaml;
using faultline::testing::Harness;
using namespace fingerprinttest;

namespace {

const char* kRules = R"(
rules:
  - id: cuda-oom
    title: CUDA out of memory
    severity: critical
    events:
      oom:
        regex: 'CUDA out of memory'
  - id: tma-descriptor
    title: TMA descriptor
    severity: critical
    events:
      phase_graph:
        regex: 'in capture_model'
      tma:
        regex: 'Failed to initialize the TMA descriptor'
    sequence:
      - any: [phase_graph]
        optional: true
      - any: [tma]
  - id: engine-dead
    title: engine dead
    severity: critical
    cascade: true
    events:
      dead:
        regex: 'EngineDeadError'
)";

}  // namespace

TEST_CASE("an unknown failure raises one unclassified incident; a repeat is a revision", "[fingerprint]") {
  Harness h(compile_yaml(kRules));
  h.lines(with_prefix("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] ", kOld));
  h.line("INFO 11-29 10:08:02 [api.py:1] still serving");
  h.replay.finish();
  auto incs = h.replay.incidents();
  REQUIRE(incs.size() == 1);
  const Incident& inc = incs[0];
  CHECK(inc.rule == "unclassified-failure");
  CHECK(inc.severity == Severity::warning);  // an ERROR-level traceback the logger printed: the process lives on
  CHECK(inc.fingerprint == signature_of(views(kOld)).fingerprint);
  CHECK(inc.message_template.starts_with("shape mismatch: value tensor of shape <shape>"));
  CHECK(inc.title.starts_with("RuntimeError: shape mismatch"));
  REQUIRE(inc.evidence.size() == kOld.size());
  CHECK(inc.evidence.back().event == "terminal");
  CHECK(inc.evidence.front().event == "traceback");
  CHECK(to_json(inc).find("\"fingerprint\":\"" + inc.fingerprint + "\"") != std::string::npos);
  CHECK(to_json(inc).find("\"template\":") != std::string::npos);
  auto back = incident_from_json(to_json(inc));
  REQUIRE(back);
  CHECK(back->fingerprint == inc.fingerprint);
  CHECK(back->message_template == inc.message_template);

  // The same failure again, from another version: the same incident, counted.
  Harness again(compile_yaml(kRules));
  again.lines(kOld);
  for (int i = 0; i < 30; ++i) again.line("INFO serving request " + std::to_string(i));
  again.lines(kNew);
  again.replay.finish();
  REQUIRE(again.replay.incidents().size() == 1);
  CHECK(again.replay.incidents()[0].count == 2);
  CHECK(again.replay.incidents()[0].revision == 2);
  auto inventory = again.pipeline.detector().inventory();
  REQUIRE(inventory.size() == 1);
  CHECK(inventory[0].count == 2);
  CHECK(inventory[0].claimed_by.empty());
}

TEST_CASE("a stream that ends raises its open failure story then, not only when its quiet ends", "[fingerprint]") {
  Harness h(compile_yaml(kRules));
  h.lines(with_prefix("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] ", kOld));
  CHECK(h.replay.incidents().empty());  // the story may go on: it lingers
  h.pipeline.end_stream(h.stream);      // its file is gone
  auto incs = h.replay.incidents();
  REQUIRE(incs.size() == 1);
  CHECK(incs[0].rule == "unclassified-failure");
  CHECK(incs[0].evidence.size() == kOld.size());
}

TEST_CASE("after a restart, a known unclassified failure is the next revision of its incident", "[fingerprint]") {
  Harness before(compile_yaml(kRules));
  before.lines(kOld);
  before.replay.finish();
  REQUIRE(before.replay.incidents().size() == 1);
  const Incident first = before.replay.incidents()[0];
  const std::string saved = before.pipeline.save_fingerprints();

  Harness after(compile_yaml(kRules));  // the same stream, a new process
  REQUIRE(after.pipeline.load_fingerprints(saved));
  after.lines(kNew);
  after.replay.finish();
  REQUIRE(after.replay.incidents().size() == 1);
  const Incident& again = after.replay.incidents()[0];
  CHECK(again.id == first.id);
  CHECK(again.revision == first.revision + 1);  // not revision 1 again, which sinks drop as already delivered
  CHECK(again.count == 2);
  CHECK(again.first_seen == first.first_seen);
  // Saved again before it is seen: a second restart still knows it.
  auto book = book_from_state_json(after.pipeline.save_fingerprints());
  REQUIRE(book);
  REQUIRE(book->size() == 1);
  CHECK(book->front().revision == again.revision);
  // A checkpoint written before the book was kept loads, with nothing to continue.
  auto old = book_from_state_json("{\"version\": 1, \"entries\": []}");
  REQUIRE(old);
  CHECK(old->empty());
  CHECK_FALSE(book_from_state_json("{\"version\": 1, \"entries\": [], \"incidents\": [{\"id\": 3}]}"));
}

TEST_CASE("a typed rule that matched a line of the story wins", "[fingerprint]") {
  Harness h(compile_yaml(kRules));
  h.lines({"Traceback (most recent call last):", "  File \"/x/runner.py\", line 3, in run",
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"});
  h.replay.finish();
  REQUIRE(h.replay.incidents().size() == 1);
  CHECK(h.replay.incidents()[0].rule == "cuda-oom");
  auto inventory = h.pipeline.detector().inventory();
  REQUIRE(inventory.size() == 1);
  CHECK(inventory[0].claimed_by == "cuda-oom");
  CHECK(h.pipeline.detector().stats().claimed == 1);

  // A cascade rule reports a consequence: it does not explain the story away.
  Harness c(compile_yaml(kRules));
  c.lines({"Traceback (most recent call last):", "  File \"/x/runner.py\", line 3, in run",
           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."});
  c.replay.finish();
  REQUIRE(c.of("unclassified-failure").size() == 1);
  CHECK(c.of("unclassified-failure").back().severity == Severity::critical);
}

TEST_CASE("tracebacks printed below the error level raise nothing", "[fingerprint]") {
  Harness h(compile_yaml(kRules));
  auto filler = [&h] {
    for (int i = 0; i < 25; ++i) h.line("INFO 03-18 17:33:04 [api.py:1] serving " + std::to_string(i));
  };
  h.lines(with_prefix("(APIServer pid=5) DEBUG 03-18 17:33:04 [repo_utils.py:243] ", kOld));
  filler();
  h.lines(with_prefix("WARNING 03-18 17:33:04 [retry.py:1] ", kNew));
  filler();
  h.line("2025-01-01 10:00:00,123 DEBUG loader: optional import failed");
  h.lines(kOld);  // the traceback of that DEBUG record, unprefixed
  filler();
  h.line("INFO 03-18 17:33:05 CUDA error: handled, falling back to the CPU path");
  h.line("WARNING 03-18 17:33:05 Segmentation fault handler installed");
  h.replay.finish();
  CHECK(h.replay.incidents().empty());
  CHECK(h.pipeline.detector().stats().below_error >= 3);
}

TEST_CASE("severity: a request failure is info, a dead process critical, an exit escalates", "[fingerprint]") {
  Harness api(compile_yaml(kRules));
  api.line("ERROR:    Exception in ASGI application");
  api.lines(kOld);
  api.replay.finish();
  REQUIRE(api.replay.incidents().size() == 1);
  CHECK(api.replay.incidents()[0].severity == Severity::info);

  Harness cpp(compile_yaml(kRules));
  cpp.lines({"terminate called after throwing an instance of 'std::runtime_error'",
             "  what():  cudaMalloc failed: out of memory"});
  cpp.replay.finish();
  REQUIRE(cpp.replay.incidents().size() == 1);
  CHECK(cpp.replay.incidents()[0].severity == Severity::critical);

  Harness exit(compile_yaml(kRules));
  exit.lines(with_prefix("ERROR 11-29 10:08:01 [core.py:866] ", kOld));
  for (int i = 0; i < 25; ++i) exit.line("INFO shutting down " + std::to_string(i));
  exit.line("worker exited with code 1");
  exit.replay.finish();
  REQUIRE(exit.replay.incidents().size() == 1);  // the exit line is the story's consequence, not a second failure
  CHECK(exit.replay.incidents()[0].severity == Severity::critical);
  CHECK(exit.emitted.size() == 2);
  CHECK(exit.emitted[0].severity == Severity::warning);
}

TEST_CASE("a silenced fingerprint raises nothing; another severity applies", "[fingerprint]") {
  const std::string fp = signature_of(views(kOld)).fingerprint;
  for (bool silence : {true, false}) {
    ReplayOptions o;
    o.start = at(0);
    FingerprintOverride ov;
    ov.fingerprint = fp;
    ov.silence = silence;
    if (!silence) ov.severity = Severity::info;
    o.pipeline.fingerprint.overrides.push_back(ov);
    Replay r(compile_yaml(kRules), o);
    auto s = r.add_stream(StreamIdentity{"a", "a", "a#0", {}}, DecodeOptions{ContainerFormat::raw, 65536, {}});
    for (const auto& l : kOld) r.line(s, l);
    r.finish();
    if (silence) {
      CHECK(r.incidents().empty());
      CHECK(r.pipeline().detector().stats().silenced == 1);
    } else {
      REQUIRE(r.incidents().size() == 1);
      CHECK(r.incidents()[0].severity == Severity::info);
    }
  }
}

TEST_CASE("stories are found the same however the lines are batched", "[fingerprint]") {
  std::string log;
  for (int i = 0; i < 40; ++i) log += "INFO line " + std::to_string(i) + "\n";
  for (const auto& l : kOld) log += l + "\n";
  for (int i = 0; i < 25; ++i) log += "INFO after " + std::to_string(i) + "\n";
  log += "thread 'main' panicked at src/main.rs:4:5:\ncalled `Option::unwrap()` on a `None` value\n";
  for (int i = 0; i < 40; ++i) log += "INFO tail " + std::to_string(i) + "\n";
  auto run = [&](std::size_t piece, std::size_t batch_bytes) {
    ReplayOptions o;
    o.start = at(0);
    o.pipeline.batch_bytes = batch_bytes;
    Replay r(compile_yaml(kRules), o);
    auto s = r.add_stream(StreamIdentity{"a", "a", "a#0", {}}, DecodeOptions{ContainerFormat::raw, 65536, {}});
    for (std::size_t i = 0; i < log.size(); i += piece) {
      r.feed(s, std::string_view(log).substr(i, piece));
      r.pipeline().drain();
    }
    r.finish();
    std::vector<std::string> out;
    for (const auto& inc : r.incidents()) {
      // The story's lines as read, with their times: the same whether a story stayed in one batch or outlived it.
      std::string story = inc.id + " " + inc.fingerprint + " " + std::to_string(inc.evidence.size()) + " " +
                          format_time(inc.first_seen) + " " + format_time(inc.last_seen);
      for (const auto& e : inc.evidence) story += "\n" + std::to_string(e.line) + " " + format_time(e.time) + " " + e.text;
      out.push_back(story);
    }
    return out;
  };
  auto whole = run(log.size(), 1 << 20);
  REQUIRE(whole.size() == 2);
  CHECK(run(7, 1 << 20) == whole);
  CHECK(run(100, 64) == whole);
}

TEST_CASE("story anchors are reported apart from rule hits, in the same pass", "[fingerprint]") {
  auto rules = compile_yaml(kRules);
  Scanner scanner(rules);
  RecordBatch batch;
  RecordMeta m;
  batch.append(m, "Traceback (most recent call last):");
  batch.append(m, "torch.OutOfMemoryError: CUDA out of memory");
  batch.append(m, "RuntimeError: CUDA error: an illegal memory access");
  std::vector<Hit> hits, plain;
  std::vector<AnchorHit> anchors;
  scanner.scan(batch, hits, anchors);
  scanner.scan(batch, plain);
  REQUIRE(hits.size() == 1);
  CHECK(plain.size() == 1);
  CHECK(hits[0].record == 1);
  REQUIRE(anchors.size() == 4);  // in record order, then anchor order
  CHECK(anchors[0].record == 0);
  CHECK(anchors[0].anchor == StoryAnchor::traceback);
  CHECK(anchors[1].record == 1);
  CHECK(anchors[1].anchor == StoryAnchor::exception_line);
  CHECK(anchors[2].record == 2);
  CHECK(anchors[2].anchor == StoryAnchor::cuda_error);
  CHECK(anchors[3].record == 2);
  CHECK(anchors[3].anchor == StoryAnchor::exception_line);
  CHECK(rules->pattern_count() == 4);  // the rules' own events: the anchors are reserved
}

// Three anchors are looked for by their literal starts and confirmed on the line (match.cpp, kAnchorStarts): they
// must hit exactly the lines their expressions match, asked of RE2 here. Every line of the real corpus, in batches of
// many records (a first match's end is then an offset into the batch), and lines made to sit on the edges.
TEST_CASE("anchors looked for by their literal starts hit the lines their expressions match", "[fingerprint]") {
  const std::pair<StoryAnchor, const char*> exact[] = {
      {StoryAnchor::cuda_error, R"(CUDA( error(: | [0-9]+ at )|_ERROR_[A-Z])|cudaError[A-Z])"},
      {StoryAnchor::library_status, R"(CUBLAS_STATUS_[A-Z]|CUDNN_STATUS_[A-Z])"},
      {StoryAnchor::python_frame, R"(File "[^"\n]+", line [0-9])"},
  };
  std::vector<std::unique_ptr<RE2>> res;
  for (const auto& [a, expr] : exact) res.push_back(std::make_unique<RE2>(expr));

  std::vector<std::vector<std::string>> batches{{
      R"(RuntimeError: CUDA error: an illegal memory access was encountered)",
      R"(CUDA error 700 at /src/kernel.cu:12)",
      R"(CUDA error  at nothing)",            // no number
      R"(CUDA error 7x at)",                  // not " at " after the number
      R"(CUDA errors were reported)",
      R"(CUDA error:no space)",
      R"(CUDA error CUDA error: second one)",  // the first start fails, a later one completes
      R"(CUDA_ERROR_OUT_OF_MEMORY)",
      R"(CUDA_ERROR_)",
      R"(CUDA_ERROR_x CUDA_ERROR_Y)",
      R"(cudaErrorIllegalAddress)",
      R"(cudaError_t e = cudaSuccess)",
      R"(cudaError)",
      R"(CUBLAS_STATUS_EXECUTION_FAILED when calling cublasGemmEx)",
      R"(CUDNN_STATUS_BAD_PARAM)",
      R"(CUBLAS_STATUS_ CUDNN_STATUS_)",
      R"(CUBLAS_STATUS_not CUDNN_STATUS_MAPPING_ERROR)",
      R"(  File "/usr/lib/python3.12/site-packages/vllm/engine.py", line 12, in run)",
      R"(  File "", line 12, in run)",       // an empty file name
      R"(  File "x.py", line x)",
      R"(  File "x.py" , line 3)",
      R"(  File "x.py", line )",
      R"(File "a", File "b.py", line 9)",     // the first start's quote is not followed by ", line"
      R"(File "unterminated)",
      R"(  File "a.py", line 1)",
      R"(File ")",
  }};
  std::size_t lines = 0;
  for (const auto& e : std::filesystem::directory_iterator(FAULTLINE_CORPUS_DIR)) {
    if (e.path().extension() != ".log") continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<std::string> batch;
    for (std::string line; std::getline(f, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      batch.push_back(line);
    }
    lines += batch.size();
    batches.push_back(std::move(batch));
  }
  REQUIRE(lines > 5000);

  auto rules = compile_yaml(kRules);
  Scanner scanner(rules);
  std::array<std::size_t, 3> hit{};
  for (const auto& texts : batches) {
    RecordBatch batch;
    RecordMeta m;
    for (const auto& t : texts) batch.append(m, t);
    std::vector<Hit> hits;
    std::vector<AnchorHit> anchors;
    scanner.scan(batch, hits, anchors);
    for (std::size_t k = 0; k < std::size(exact); ++k) {
      std::vector<std::uint32_t> found, expected;
      for (const auto& a : anchors) {
        if (a.anchor == exact[k].first) found.push_back(a.record);
      }
      for (std::uint32_t i = 0; i < batch.size(); ++i) {
        const std::string_view text = batch.text(i);
        if (RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *res[k])) expected.push_back(i);
      }
      INFO(to_string(exact[k].first));
      CHECK(found == expected);
      hit[k] += expected.size();
    }
  }
  // The corpus and the lines above hold each kind many times over.
  CHECK(hit[0] > 40);
  CHECK(hit[1] > 20);
  CHECK(hit[2] > 400);
}

TEST_CASE("only a rule's decisive events claim a story; a cascade wrapper after a typed failure is its consequence",
          "[fingerprint]") {
  // "in capture_model" is a context event (an optional phase step): it explains nothing.
  Harness ctx(compile_yaml(kRules));
  ctx.lines({"Fatal Python error: Segmentation fault", "", "Stack (most recent call first):",
             "  File \"/x/vllm/worker/model_runner.py\", line 725 in capture_model"});
  ctx.replay.finish();
  REQUIRE(ctx.of("unclassified-failure").size() == 1);
  CHECK(ctx.pipeline.detector().stats().claimed == 0);

  // The library's message just before the exception it causes claims it.
  Harness before(compile_yaml(kRules));
  before.lines({"Error: Failed to initialize the TMA descriptor 1", "Assertion `res == CUDA_SUCCESS` failed"});
  before.replay.finish();
  CHECK(before.of("unclassified-failure").empty());
  CHECK(before.of("tma-descriptor").size() == 1);

  // vLLM's API server prints EngineDeadError after the engine core's typed failure: no second, unclassified one.
  Harness wrapper(compile_yaml(kRules));
  wrapper.line("ERROR 11-29 10:08:01 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB");
  for (int i = 0; i < 30; ++i) wrapper.line("INFO 11-29 10:08:02 [api.py:1] request " + std::to_string(i));
  wrapper.lines(with_prefix("(APIServer pid=1) ERROR 11-29 10:08:05 [async_llm.py:704] ",
                            {"Traceback (most recent call last):", "  File \"/x/async_llm.py\", line 660, in output_handler",
                             "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."}));
  wrapper.replay.finish();
  CHECK(wrapper.of("cuda-oom").size() == 1);
  CHECK(wrapper.of("unclassified-failure").empty());
  CHECK(wrapper.pipeline.detector().stats().consequences == 1);

  // Without the typed failure before it, the same wrapper is an unclassified failure of its own.
  Harness alone(compile_yaml(kRules));
  alone.lines(with_prefix("(APIServer pid=1) ERROR 11-29 10:08:05 [async_llm.py:704] ",
                          {"Traceback (most recent call last):", "  File \"/x/async_llm.py\", line 660, in output_handler",
                           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."}));
  alone.replay.finish();
  CHECK(alone.of("unclassified-failure").size() == 1);
}

TEST_CASE("client disconnects and cancelled requests are not failures", "[fingerprint]") {
  Harness h(compile_yaml(kRules));
  h.lines({"Traceback (most recent call last):",
           "  File \"/x/uvicorn/protocols/http/httptools_impl.py\", line 544, in send",
           "    raise ClientDisconnected",
           "uvicorn.protocols.utils.ClientDisconnected",
           "",
           "During handling of the above exception, another exception occurred:",
           "",
           "Traceback (most recent call last):",
           "  File \"/x/sglang/srt/entrypoints/http_server.py\", line 451, in stream_results",
           "ConnectionResetError: [Errno 104] Connection reset by peer"});
  for (int i = 0; i < 25; ++i) h.line("INFO request " + std::to_string(i));
  h.line("ERROR 11-29 10:08:01 [serving_chat.py:1229] Error in chat completion stream generator.");
  h.lines({"Traceback (most recent call last):", "  File \"/x/async_llm.py\", line 389, in generate",
           "asyncio.exceptions.CancelledError"});
  h.replay.finish();
  CHECK(h.replay.incidents().empty());
  auto inv = h.pipeline.detector().inventory();
  REQUIRE(inv.size() == 2);
  CHECK(inv[0].type == "uvicorn.protocols.utils.ClientDisconnected");
  CHECK(inv[0].below_error);
}

TEST_CASE("closed stories are reported with their positions; the inventory's JSON and its board", "[fingerprint]") {
  std::vector<ClosedStory> stories;
  ReplayOptions options;
  options.start = at(0);
  options.pipeline.fingerprint.on_story = [&stories](const ClosedStory& s) { stories.push_back(s); };
  Replay replay(compile_yaml(kRules), std::move(options));
  StreamIdentity id;
  id.name = id.logical = id.instance = "pod-b";
  DecodeOptions decode;
  decode.format = ContainerFormat::raw;
  const std::uint32_t stream = replay.add_stream(id, decode);
  replay.line(stream, "INFO starting");
  for (const auto& l : kOld) replay.line(stream, l);
  // Far enough after the story that the signal is a failure of its own, not that story's consequence.
  for (int i = 0; i < 60; ++i) replay.line(stream, "INFO serving request " + std::to_string(i));
  replay.line(stream, "AMX is not ready to be used!");
  replay.line(stream, "Illegal instruction (core dumped)");
  replay.finish();

  REQUIRE(stories.size() == 2);
  const ClosedStory& first = stories[0];
  CHECK(first.signature.fingerprint == signature_of(views(kOld)).fingerprint);
  REQUIRE(first.lines.size() == kOld.size());
  CHECK(first.lines.front().line == 2);  // 1-based, after "INFO starting"
  CHECK(first.lines.back().event == "terminal");
  CHECK(first.lines.back().text == kOld.back());
  CHECK(first.claimed_by.empty());
  CHECK_FALSE(first.below_error);
  CHECK(stories[1].signature.type == "signal");
  CHECK(stories[1].signature.message == "Illegal instruction");
  CHECK(stories[1].severity == Severity::critical);

  // The inventory as `faultline fingerprints --json` and GET /api/v1/fingerprints show it.
  const auto inventory = replay.pipeline().detector().inventory();
  REQUIRE(inventory.size() == 2);
  const std::string one = fingerprint_json(inventory[0]);
  CHECK(one.starts_with("{\"fingerprint\":\"" + inventory[0].fingerprint + "\""));
  for (const char* key : {"\"type\":", "\"template\":", "\"count\":1", "\"first_seen\":", "\"last_seen\":",
                          "\"streams\":[\"pod-b\"]", "\"example\":[", "\"claimed_by\":null", "\"below_error\":false",
                          "\"severity\":"})
    CHECK(one.find(key) != std::string::npos);
  const std::string all = inventory_json(inventory);
  CHECK(all.starts_with("{\"count\":2,\"fingerprints\":[" + one + ","));
  CHECK(inventory_json({}) == "{\"count\":0,\"fingerprints\":[]}");

  InventoryBoard board;
  CHECK(board.latest()->empty());
  const std::uint64_t version = replay.pipeline().detector().inventory_version();
  CHECK(version > 0);
  board.publish(inventory);
  CHECK(board.latest()->size() == 2);
  CHECK(replay.pipeline().detector().inventory_version() == version);  // reading does not move it
}

TEST_CASE("Ray's own end of the program is an exit line", "[fingerprint]") {
  const std::vector<std::string> lines = {
      "[2024-05-26 11:26:16,798 E 177479 178526] gcs_rpc_client.h:554: Failed to connect to GCS within 60 seconds. "
      "GCS may have been killed. The program will terminate."};
  const FailureSignature sig = signature_of(views(lines));
  CHECK(sig.type == "exit");
  CHECK(sig.message_template.starts_with("Failed to connect to GCS within <num> seconds"));
}

TEST_CASE("a traceback whose head is not in the log: its frames logged as an error are a story", "[fingerprint]") {
  const std::vector<std::string> frames = {
      "  File \"/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/utils.py\", line 213, in _load_module",
      "    for child_prefix, child_weights in self._groupby_prefix(weights):",
      "  File \"/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/utils.py\", line 103, in _groupby_prefix",
      "    for prefix, group in itertools.groupby(weights_by_parts,",
  };
  const auto prefixed = with_prefix("(VllmWorkerProcess pid=294) ERROR 05-26 03:28:51 [w.py:238] ", frames);
  const auto sig = signature_of(views(prefixed));
  CHECK(sig.type == "traceback without its exception line");
  CHECK(sig.rank == 0);
  REQUIRE(sig.frames.size() == 2);
  CHECK(sig.frames[0] == "utils.py:_groupby_prefix");  // the innermost: the last printed
  CHECK(sig.terminal_index == 2);
  CHECK(signature_of(views(with_prefix("ERROR 01-06 23:27:37 [core.py:890] ", frames))).fingerprint == sig.fingerprint);

  Harness h(compile_yaml(kRules));
  h.lines(with_prefix("(VllmWorkerProcess pid=294) ERROR 05-26 03:28:51 [w.py:238] ", frames));
  h.replay.finish();
  REQUIRE(h.replay.incidents().size() == 1);
  CHECK(h.replay.incidents()[0].fingerprint == sig.fingerprint);
  CHECK(h.replay.incidents()[0].severity == Severity::warning);

  // Look-alikes: the same frames under a warning's stack_info or an INFO record, or with no level at all (a source
  // listing, a head cut off by the reader); and a full traceback stays one story whose frames name no anchor.
  Harness quiet(compile_yaml(kRules));
  quiet.lines(with_prefix("WARNING 05-26 03:28:51 [w.py:238] ", frames));
  for (int i = 0; i < 25; ++i) quiet.line("INFO 05-26 03:28:52 [api.py:1] serving " + std::to_string(i));
  quiet.lines(with_prefix("INFO 05-26 03:28:53 [w.py:238] ", frames));
  for (int i = 0; i < 25; ++i) quiet.line("INFO 05-26 03:28:54 [api.py:1] serving " + std::to_string(i));
  quiet.lines(frames);
  quiet.replay.finish();
  CHECK(quiet.replay.incidents().empty());

  Harness full(compile_yaml(kRules));
  full.lines(with_prefix("ERROR 11-29 10:08:01 [core.py:866] ", kOld));
  full.replay.finish();
  REQUIRE(full.replay.incidents().size() == 1);
  CHECK(full.replay.incidents()[0].fingerprint == signature_of(views(kOld)).fingerprint);
  for (const auto& e : full.replay.incidents()[0].evidence) CHECK(e.event != "python-frame");
}

TEST_CASE("the Go runtime's crash dump without its panic line is a critical story", "[fingerprint]") {
  // Frame locations with fp= sp= pc= are printed by the runtime's own traceback as the process dies (a fatal panic,
  // a runtime throw, a dump signal such as SIGQUIT), never by runtime/debug.Stack or a recovered panic's log.
  const std::vector<std::string> dump = {
      "goroutine 19 gp=0xc000103180 m=nil [chan receive]:",
      "runtime.gopark(0xc0001d59a0?, 0xc000590018?, 0x60?, 0xa7?, 0x5604dbb02e48?)",
      "\truntime/proc.go:435 +0xce fp=0xc00006a718 sp=0xc00006a6f8 pc=0x5604dba1e1ce",
      "net/http.(*Server).Serve(0xc000320700, {0x7ff605a81580, 0xc000308300})",
      "\tnet/http/server.go:3424 +0x30c fp=0xc00058fb38 sp=0xc00058fa08 pc=0x7ff6048a8a4c",
      "github.com/ollama/ollama/runner/llamarunner.Execute({0xc0000da020, 0x4, 0x6})",
      "\tgithub.com/ollama/ollama/runner/llamarunner/runner.go:1000 +0x8f5 fp=0xc00058fd08 sp=0xc00058fb38 pc=0x7ff604a232b5",
  };
  const auto sig = signature_of(views(dump));
  CHECK(sig.type == "go runtime traceback");
  CHECK(sig.terminal_index == 2);
  REQUIRE(sig.frames.size() == 2);
  CHECK(sig.frames[0] == "http.(*Server).Serve");  // the runtime's own frames are skipped
  CHECK(sig.frames[1] == "llamarunner.Execute");
  CHECK(signature_of(views(with_prefix("06.05 13:15:31 ASTOR ollama[2690]: ", dump))).fingerprint == sig.fingerprint);

  Harness h(compile_yaml(kRules));
  h.lines(with_prefix("06.05 13:15:31 ASTOR ollama[2690]: ", dump));
  h.replay.finish();
  REQUIRE(h.replay.incidents().size() == 1);
  CHECK(h.replay.incidents()[0].severity == Severity::critical);
  CHECK(h.replay.incidents()[0].fingerprint == sig.fingerprint);

  // Look-alike: a goroutine stack a server logs and survives (runtime/debug.Stack in a recovered handler) has no
  // fp= sp= pc= columns.
  Harness logged(compile_yaml(kRules));
  logged.lines({"2025/06/05 13:15:31 ERROR handler failed: stack follows", "goroutine 12 [running]:",
                "runtime/debug.Stack()", "\truntime/debug/stack.go:26 +0x5e",
                "net/http.(*conn).serve(0xc000320700, {0x7ff605a81580, 0xc000308300})",
                "\tnet/http/server.go:2092 +0x5d0"});
  logged.replay.finish();
  CHECK(logged.replay.incidents().empty());
}

TEST_CASE("the inventory's saved form: round trip, bounded, bad input is an error", "[fingerprint]") {
  std::vector<FingerprintEntry> inv;
  for (int i = 0; i < static_cast<int>(kMaxSavedFingerprints) + 40; ++i) {
    FingerprintEntry e;
    e.fingerprint = "fp" + std::to_string(i);
    e.type = "RuntimeError";
    e.message_template = "boom <num>";
    e.count = static_cast<std::uint64_t>(i + 1);
    e.first_seen = at(i);
    e.last_seen = at(i < 40 ? 100000 + i : 2 * i);  // the first 40 were seen again most recently
    e.streams = {"/var/log/a.log"};
    e.example.assign(30, std::string(1000, 'x'));
    e.claimed_by = i % 2 ? "cuda-oom" : "";
    e.severity = Severity::critical;
    inv.push_back(std::move(e));
  }
  const std::string saved = inventory_state_json(inv);
  CHECK(saved.size() < 3u * 1024 * 1024);
  auto back = inventory_from_state_json(saved);
  REQUIRE(back);
  REQUIRE(back->size() == kMaxSavedFingerprints);
  CHECK(back->front().fingerprint == "fp0");  // recently seen again: kept, in order of first sight
  CHECK(back->front().count == 1);
  CHECK(back->front().first_seen == at(0));
  CHECK(back->front().example.size() == kMaxSavedExampleLines);
  CHECK(back->front().example[0].size() == kMaxSavedExampleText);
  CHECK(back->at(1).claimed_by == "cuda-oom");
  CHECK(std::none_of(back->begin(), back->end(), [](const auto& e) { return e.fingerprint == "fp40"; }));

  Harness h(compile_yaml(kRules));
  REQUIRE(h.pipeline.load_fingerprints(saved));
  CHECK(h.pipeline.detector().distinct() == kMaxSavedFingerprints);

  CHECK_FALSE(inventory_from_state_json("{\"version\": 2, \"entries\": []}"));
  CHECK_FALSE(inventory_from_state_json("{\"version\": 1, \"entries\": [{\"fingerprint\": 7}]}"));
  CHECK_FALSE(inventory_from_state_json("not json"));
  CHECK_FALSE(h.pipeline.load_fingerprints("{\"version\": 1}"));
}
