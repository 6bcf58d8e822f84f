// Replay: recorded input through the pipeline on a virtual clock; the latest revision of each incident, in order of
// first emission.
#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "faultline/replay.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

StreamIdentity named(const std::string& name) {
  StreamIdentity id;
  id.name = id.logical = id.instance = name;
  return id;
}

DecodeOptions raw() {
  DecodeOptions d;
  d.format = ContainerFormat::raw;
  return d;
}

}  // namespace

TEST_CASE("a replay keeps the latest revision of each incident; the observer sees every one", "[replay]") {
  std::vector<Incident> seen;
  ReplayOptions options;
  options.start = at(0);
  options.on_incident = [&](const Incident& i) { seen.push_back(i); };
  Replay replay(compile_yaml(kStagedRule), std::move(options));
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, ts(0, "Skipping tactic 3"));
  replay.line(s, ts(5, "Assertion failed: boom"));
  replay.finish();
  REQUIRE(seen.size() >= 2);
  REQUIRE(replay.incidents().size() == 1);
  const Incident& last = replay.incidents()[0];
  CHECK(last.id == seen.front().id);
  CHECK(last.revision == seen.back().revision);
  CHECK(last.severity == Severity::critical);
}

TEST_CASE("incidents are listed in order of first emission, across streams", "[replay]") {
  auto rules = compile_yaml(kStagedRule);
  Replay replay(rules, ReplayOptions{at(0), {}, {}});
  auto a = replay.add_stream(named("pod-a"), raw());
  auto b = replay.add_stream(named("pod-b"), raw());
  replay.line(b, ts(0, "Skipping tactic 1"));
  replay.line(a, ts(1, "Skipping tactic 2"));
  replay.line(b, ts(2, "Assertion failed: boom"));  // b's incident gets a new revision: it stays first
  replay.finish();
  REQUIRE(replay.incidents().size() == 2);
  CHECK(replay.incidents()[0].stream == "pod-b");
  CHECK(replay.incidents()[0].severity == Severity::critical);
  CHECK(replay.incidents()[1].stream == "pod-a");
}

TEST_CASE("after() runs the clock on from the lines' own time, so absences fire without a wall clock", "[replay]") {
  Replay replay(compile_yaml(kNeverReadyRule), ReplayOptions{at(-3600), {}, {}});  // the clock: an hour before the lines
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, ts(0, "Starting server"));
  replay.after(std::chrono::minutes(5));
  CHECK(replay.clock() == at(300));
  CHECK(replay.incidents().empty());
  replay.after(std::chrono::minutes(6));
  CHECK(replay.clock() == at(660));
  REQUIRE(replay.incidents().size() == 1);
  CHECK(replay.incidents()[0].rule == "never-ready");
}

TEST_CASE("before any line, after() runs on from the clock; advance() sets it", "[replay]") {
  Replay replay(compile_yaml(kNeverReadyRule), ReplayOptions{at(0), {}, {}});
  replay.add_stream(named("pod"), raw());
  replay.after(std::chrono::seconds(30));
  CHECK(replay.clock() == at(30));
  replay.advance(at(100));
  CHECK(replay.clock() == at(100));
  CHECK(replay.pipeline().now() == at(100));
  replay.start(at(5));  // what is fed next was read at 5 s; the event clock stays
  CHECK(replay.clock() == at(5));
  CHECK(replay.pipeline().now() == at(100));
}

TEST_CASE("bytes are fed as they come; end_stream() turns a last line without newline into a record", "[replay]") {
  Replay replay(compile_yaml(kStagedRule), ReplayOptions{at(0), {}, {}});
  auto s = replay.add_stream(named("pod"), raw());
  const std::string text = ts(0, "Skipping tactic 3") + "\n" + ts(1, "Assertion fa");
  replay.feed(s, text);
  replay.feed(s, "iled: boom");
  CHECK(replay.pipeline().progress(s).has_partial);
  replay.end_stream(s);
  CHECK_FALSE(replay.pipeline().progress(s).has_partial);
  CHECK(replay.stats().lines == 2);
  replay.finish();
  REQUIRE(replay.incidents().size() == 1);
  CHECK(replay.incidents()[0].severity == Severity::critical);
}

TEST_CASE("close_stream(): a stream that gets no more input raises its partial line and lets go of its decoder",
          "[replay]") {
  Replay replay(compile_yaml(kStagedRule), ReplayOptions{at(0), {}, {}});
  auto a = replay.add_stream(named("pod-a"), raw());
  auto b = replay.add_stream(named("pod-b"), raw());
  replay.feed(a, ts(0, "Skipping tactic 3") + "\n" + ts(1, "Assertion failed: boom"));
  replay.close_stream(a);
  // Its last line was read without its newline, and the decoder it was read with is gone: a fresh one's progress.
  CHECK(replay.stats().lines == 2);
  CHECK(replay.pipeline().progress(a).committed_offset == 0);
  CHECK(replay.pipeline().progress(a).committed_line == 1);
  CHECK(replay.pipeline().decode_stats(a).lines == 0);
  REQUIRE(replay.incidents().size() == 1);
  CHECK(replay.incidents()[0].severity == Severity::critical);
  // Another stream goes on as before.
  replay.line(b, ts(2, "Skipping tactic 4"));
  replay.finish();
  CHECK(replay.stats().lines == 3);
  REQUIRE(replay.incidents().size() == 2);
  CHECK(replay.incidents()[1].stream == "pod-b");
}

#if defined(__SANITIZE_ADDRESS__)
#define FAULTLINE_TEST_OWN_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTLINE_TEST_OWN_MALLOC 0
#endif
#endif
#if !defined(FAULTLINE_TEST_OWN_MALLOC) && defined(__GLIBC__)
#define FAULTLINE_TEST_OWN_MALLOC 1
#endif

#if FAULTLINE_TEST_OWN_MALLOC
TEST_CASE("streams closed one after another keep little of the heap each (glibc's count of bytes in use)",
          "[replay]") {
  // As `scan` reads thousands of files, or a node sees thousands of pods come and go: each stream read, then closed.
  // Its decoder, its ring of last lines and the correlator's scratch for it go; what stays per stream is its slot in
  // each room (its identity, its clock). Measured between 1,100 and 2,000 streams, where no room's table of slots
  // grows (their capacity doubles at 1,024 and 2,048). A decoder (~0.8 KiB) and an empty std::deque ring (~0.6 KiB)
  // kept per stream made it ~2 KiB.
  Replay replay(compile_yaml(kStagedRule), ReplayOptions{at(0), {}, {}});
  std::string lines;
  for (int i = 0; i < 30; ++i) lines += ts(i, "INFO serving request " + std::to_string(i)) + "\n";
  const auto read_streams = [&](int from, int to) {
    for (int n = from; n < to; ++n) {
      auto s = replay.add_stream(named("pod-" + std::to_string(n)), raw());
      replay.feed(s, lines);
      replay.close_stream(s);
    }
  };
  read_streams(0, 1100);
  const std::size_t before = ::mallinfo2().uordblks;
  read_streams(1100, 2000);
  const std::size_t after = ::mallinfo2().uordblks;
  const double per_stream = (static_cast<double>(after) - static_cast<double>(before)) / 900.0;
  INFO("heap in use per closed stream: " << per_stream << " bytes");
  CHECK(per_stream < 512.0);
  CHECK(replay.stats().lines == 2000u * 30u);
}
#endif

TEST_CASE("bytes fed that fill half a batch or more are scanned at once; fewer wait for more", "[replay]") {
  // A read cut at its last newline never quite fills a batch: scanned at once, it is not copied out of the reader's
  // buffer first. A few lines still wait (they are copied) so that reads of many streams share a batch.
  ReplayOptions options{at(0), {}, {}};
  options.pipeline.batch_bytes = 64 * 1024;
  Replay replay(compile_yaml(kStagedRule), options);
  auto s = replay.add_stream(named("pod"), raw());
  const auto lines = [](int from, int count) {
    std::string text;
    for (int i = from; i < from + count; ++i) text += ts(0, "serving request " + std::to_string(i)) + "\n";
    return text;
  };
  const std::string few = lines(0, 100);
  REQUIRE(few.size() < 32 * 1024);
  replay.feed(s, few);
  CHECK(replay.stats().lines == 0);  // waits in the batch
  std::string more = lines(100, 700);
  REQUIRE(few.size() + more.size() >= 32 * 1024);
  REQUIRE(few.size() + more.size() < 64 * 1024);
  replay.feed(s, more);
  CHECK(replay.stats().lines == 800);  // scanned without filling the batch
  // The lines that waited were copied and are read correctly after the caller's bytes are gone.
  std::string last = lines(800, 1) + ts(1, "Assertion failed: boom") + "\n";
  replay.feed(s, last);
  last.assign(last.size(), 'x');
  replay.finish();
  CHECK(replay.stats().lines == 802);
  REQUIRE(replay.incidents().size() == 1);
}
TEST_CASE("a stream's dateless times are read against the clock when it is added", "[replay]") {
  // 2026-01-01 as the clock: a line printed as "01-01 00:00:05" (no year) is read in 2026.
  const Time clock = Time(std::chrono::seconds(1767225600));
  Replay replay(compile_yaml(kNeverReadyRule), ReplayOptions{clock, {}, {}});
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, "INFO 01-01 00:00:05 [api.py:1] Starting server");
  CHECK(replay.pipeline().now() == clock + std::chrono::seconds(5));
}

// ---- feed_whole: whole inputs decoded and matched on several threads ------------------------------------------------

namespace {

// A rule whose incident spans many lines (and so batch and part boundaries): a warning, then the fatal line up to
// 500 lines later; its evidence carries line numbers and times.
const char* kSpanning = R"(
id: spanning
title: spanning
severity: critical
events:
  warn: 'Skipping tactic (?P<n>[0-9]+)'
  fatal: 'Assertion failed: boom'
sequence:
  - event: warn
  - event: fatal
    within: 1h
tolerance: {lines: 1000, time: 1h}
context_lines: 4
)";

// Every revision's JSON, in order of emission, of `text` replayed whole on `threads` threads in batches of
// `batch_bytes` (many parts even for a small input), or fed piece by piece when threads is 0.
std::vector<std::string> replay_json(const std::string& text, unsigned threads, std::size_t batch_bytes,
                                     ContainerFormat format = ContainerFormat::raw) {
  std::vector<std::string> out;
  ReplayOptions options;
  options.start = at(0);
  options.pipeline.batch_bytes = batch_bytes;
  options.on_incident = [&](const Incident& i) { out.push_back(to_json(i)); };
  Replay replay(compile_yaml(kSpanning), std::move(options));
  DecodeOptions d;
  d.format = format;
  const auto s = replay.add_stream(named("pod"), d);
  if (threads == 0) {
    replay.feed(s, text);
    replay.end_stream(s);
  } else {
    replay.feed_whole({WholeInput{s, text, at(0)}}, threads);
  }
  replay.finish();
  return out;
}

// Every revision's JSON, in order of emission, of one whole input (raw, its stream set here) replayed on `threads`
// threads in batches of 4 KiB.
std::vector<std::string> replay_whole_input(WholeInput in, unsigned threads) {
  std::vector<std::string> out;
  ReplayOptions options;
  options.start = at(0);
  options.pipeline.batch_bytes = 4096;
  options.on_incident = [&](const Incident& i) { out.push_back(to_json(i)); };
  Replay replay(compile_yaml(kSpanning), std::move(options));
  in.stream = replay.add_stream(named("pod"), raw());
  replay.feed_whole({in}, threads);
  replay.finish();
  return out;
}

// Lines of a serving log: filler, some lines that print no time (they inherit the time before them), a warning every
// 97 lines and the fatal line 40 lines after every third warning.
std::vector<std::string> spanning_lines(int n) {
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    std::string msg;
    if (i % 97 == 0) msg = "Skipping tactic " + std::to_string(i);
    else if (i % 291 == 40) msg = "Assertion failed: boom";
    else msg = "INFO request " + std::to_string(i) + " finished " + std::string(static_cast<std::size_t>(i % 53), 'x');
    lines.push_back(i % 7 == 3 ? "  continued " + std::to_string(i) : ts(i, msg));
  }
  return lines;
}

}  // namespace

TEST_CASE("feed_whole: the same revisions in the same order on 1, 2, 3 and 8 threads, across batch and part edges",
          "[replay][parallel]") {
  std::string text;
  for (const auto& l : spanning_lines(6000)) text += l + "\n";
  text += ts(7000, "Assertion failed: boom");  // a last line without its newline
  const auto one = replay_json(text, 1, 4096);
  REQUIRE(one.size() >= 10);
  for (unsigned threads : {2u, 3u, 8u}) {
    INFO("threads " << threads);
    CHECK(replay_json(text, threads, 4096) == one);
  }
  // Fed piece by piece (other batch edges): the same incidents.
  CHECK(replay_json(text, 0, 4096) == one);
}

TEST_CASE("feed_whole: CRI lines continued over a part's start are joined as in one pass", "[replay][parallel]") {
  // Long messages split into P fragments, some across the places where parts begin; stderr interleaved.
  std::string text;
  int n = 0;
  for (const auto& l : spanning_lines(3000)) {
    const std::string stamp = format_time(at(n));
    const std::string stream = n % 5 == 4 ? "stderr" : "stdout";
    if (n % 11 == 5) {
      // the message in three pieces, another stream's line in between
      const std::size_t a = l.size() / 3, b = 2 * l.size() / 3;
      text += stamp + " " + stream + " P " + l.substr(0, a) + "\n";
      text += stamp + (stream == "stdout" ? " stderr" : " stdout") + " F INFO interleaved\n";
      text += stamp + " " + stream + " P " + l.substr(a, b - a) + "\n";
      text += stamp + " " + stream + " F " + l.substr(b) + "\n";
    } else {
      text += stamp + " " + stream + " F " + l + "\n";
    }
    ++n;
  }
  const auto one = replay_json(text, 1, 4096, ContainerFormat::auto_detect);
  REQUIRE(one.size() >= 5);
  CHECK(replay_json(text, 4, 4096, ContainerFormat::auto_detect) == one);
  CHECK(replay_json(text, 0, 4096, ContainerFormat::auto_detect) == one);
  // A batch size that puts part starts inside the P chains.
  for (std::size_t batch : {4099u, 5003u, 8191u}) {
    INFO("batch " << batch);
    CHECK(replay_json(text, 3, batch, ContainerFormat::auto_detect) == replay_json(text, 1, batch, ContainerFormat::auto_detect));
  }
}

TEST_CASE("feed_whole: parts decoded from copies of their bytes give the same revisions, and a failed copy or a "
          "line past a copy is read where it is",
          "[replay][parallel]") {
  // Lines longer than a part's copy reaches past the part (a quarter batch, at least 4 KiB) now and then.
  std::string text;
  int n = 0;
  for (const auto& l : spanning_lines(5000)) {
    text += l;
    if (++n % 211 == 0) text += " " + std::string(9000, 'y');
    text += "\n";
  }
  const auto run = [&](unsigned threads, const std::function<bool(std::size_t, char*, std::size_t)>& copy) {
    WholeInput in{0, text, at(0)};
    in.copy = copy;
    return replay_whole_input(in, threads);
  };
  const auto one = run(1, nullptr);
  REQUIRE(one.size() >= 10);
  std::atomic<int> calls{0};
  const auto truthful = [&](std::size_t offset, char* out, std::size_t size) {
    ++calls;
    std::memcpy(out, text.data() + offset, size);
    return true;
  };
  for (unsigned threads : {1u, 3u}) {
    INFO("threads " << threads);
    CHECK(run(threads, truthful) == one);
    // Every third copy fails: those parts are read where they are.
    std::atomic<int> k{0};
    CHECK(run(threads, [&](std::size_t offset, char* out, std::size_t size) {
            return ++k % 3 != 0 && truthful(offset, out, size);
          }) == one);
  }
  CHECK(calls > 20);
  // What is decoded is the copy: a copy that says something else gives other incidents.
  const auto other = run(2, [&](std::size_t offset, char* out, std::size_t size) {
    std::string piece = text.substr(offset, size);
    for (std::size_t at = piece.find("boom"); at != std::string::npos; at = piece.find("boom", at)) piece[at] = 'd';
    std::memcpy(out, piece.data(), size);
    return true;
  });
  CHECK(other.size() < one.size());
}

TEST_CASE("feed_whole: with a copy that works, the input's own bytes are never read, and done() says so",
          "[replay][parallel]") {
  std::string text;
  for (const auto& l : spanning_lines(5000)) text += l + "\n";
  // The input's bytes in pages of their own, unreadable once filled: a read of them, anywhere, ends the test.
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t size = (text.size() + page - 1) / page * page;
  void* mem = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  std::memcpy(mem, text.data(), text.size());
  REQUIRE(::mprotect(mem, size, PROT_NONE) == 0);
  const std::string_view guarded(static_cast<const char*>(mem), text.size());

  struct Done {
    std::size_t from, to;
    bool read_in_place;
  };
  const auto run = [&](std::string_view bytes, unsigned threads, std::vector<Done>& done) {
    WholeInput in{0, bytes, at(0)};
    in.copy = [&](std::size_t offset, char* to, std::size_t n) {
      std::memcpy(to, text.data() + offset, n);
      return true;
    };
    in.done = [&](std::size_t from, std::size_t to, bool read_in_place) { done.push_back({from, to, read_in_place}); };
    return replay_whole_input(in, threads);
  };
  std::vector<Done> plain_done;
  const auto expected = run(text, 1, plain_done);
  REQUIRE(expected.size() >= 10);
  for (unsigned threads : {1u, 3u}) {
    INFO("threads " << threads);
    std::vector<Done> done;
    CHECK(run(guarded, threads, done) == expected);
    // Ranges in order, end to end, over the whole input; only the first part (whose start may have been read to
    // detect the format) says it was read where it is.
    REQUIRE(done.size() > 3);
    std::size_t next = 0;
    for (std::size_t k = 0; k < done.size(); ++k) {
      CHECK(done[k].from == next);
      CHECK(done[k].read_in_place == (k == 0));
      next = done[k].to;
    }
    CHECK(next == text.size());
  }
  ::munmap(mem, size);

  // A line that runs past its part's copy (a quarter batch, at least 4 KiB, past the part) is read where it is: that
  // part says so, and the others do not.
  text.clear();
  int n = 0;
  for (const auto& l : spanning_lines(5000)) text += l + (++n % 211 == 0 ? " " + std::string(9000, 'y') : "") + "\n";
  std::vector<Done> done;
  run(text, 1, done);
  const auto in_place = std::count_if(done.begin() + 1, done.end(), [](const Done& d) { return d.read_in_place; });
  CHECK(in_place >= 1);
  CHECK(in_place < static_cast<long>(done.size()) - 1);
}

TEST_CASE("feed_whole: an empty input and several inputs in order", "[replay][parallel]") {
  std::string a, b;
  for (const auto& l : spanning_lines(2000)) a += l + "\n";
  for (const auto& l : spanning_lines(900)) b += l + "\n";
  const auto run = [&](unsigned threads) {
    std::vector<std::string> out;
    ReplayOptions options;
    options.pipeline.batch_bytes = 4096;
    options.on_incident = [&](const Incident& i) { out.push_back(to_json(i)); };
    Replay replay(compile_yaml(kSpanning), std::move(options));
    const auto s1 = replay.add_stream(named("a"), raw());
    const auto s2 = replay.add_stream(named("empty"), raw());
    const auto s3 = replay.add_stream(named("b"), raw());
    replay.feed_whole({WholeInput{s1, a, at(0)}, WholeInput{s2, {}, at(5)}, WholeInput{s3, b, at(9)}}, threads);
    replay.finish();
    CHECK(replay.stats().bytes == a.size() + b.size());
    CHECK(replay.stats().lines == 2900);
    return out;
  };
  const auto one = run(1);
  REQUIRE_FALSE(one.empty());
  CHECK(run(4) == one);
}

TEST_CASE("feed_whole: inputs given over several calls, on changing numbers of threads, as in one call",
          "[replay][parallel]") {
  // `scan` calls feed_whole once per group of files, and the scanners and part buffers of one call serve the next:
  // what a buffer or a batch held for an earlier input must not show in a later one's incidents.
  std::vector<std::string> texts;
  for (int k = 0; k < 5; ++k) {
    std::string t;
    for (const auto& l : spanning_lines(700 + 350 * k)) t += l + "\n";
    if (k % 2 == 1) t += ts(9000, "Assertion failed: boom");  // a last line without its newline
    texts.push_back(std::move(t));
  }
  const auto run = [&](const std::vector<std::vector<std::size_t>>& groups, const std::vector<unsigned>& threads) {
    std::vector<std::string> out;
    ReplayOptions options;
    options.pipeline.batch_bytes = 4096;
    options.on_incident = [&](const Incident& i) { out.push_back(to_json(i)); };
    Replay replay(compile_yaml(kSpanning), std::move(options));
    std::vector<std::uint32_t> streams;
    for (std::size_t k = 0; k < texts.size(); ++k)
      streams.push_back(replay.add_stream(named("f" + std::to_string(k)), raw()));
    for (std::size_t g = 0; g < groups.size(); ++g) {
      std::vector<WholeInput> group;
      for (std::size_t k : groups[g]) group.push_back(WholeInput{streams[k], texts[k], at(static_cast<int>(k))});
      replay.feed_whole(group, threads[g]);
      for (std::size_t k : groups[g]) replay.close_stream(streams[k]);
    }
    replay.finish();
    return out;
  };
  const auto whole = run({{0, 1, 2, 3, 4}}, {1});
  REQUIRE(whole.size() >= 10);
  CHECK(run({{0}, {1, 2}, {3}, {4}}, {1, 1, 1, 1}) == whole);
  CHECK(run({{0}, {1, 2}, {3}, {4}}, {3, 1, 2, 8}) == whole);
  CHECK(run({{0, 1}, {2, 3, 4}}, {2, 4}) == whole);
}
