// tail: more live files than max_open_files. Descriptors rotate among them: every file is read in turn, growth of a
// file that waits without a descriptor is read once it gets one again, positions stay exact, and the files waiting
// show in the stats and as lag. Driven step by step with a manual clock.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <string>

#include "faultline/tail.hpp"
#include "tail_fixture.hpp"

using namespace faultline;
using namespace tailtest;

namespace {

std::string name_of(int i) { return "f" + std::to_string(100 + i) + ".log"; }

// Descriptors of this process open on files under `dir`.
int open_under(const std::string& dir) {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = ::readdir(d)) {
    char target[4096];
    std::string link = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    if (std::string(target, static_cast<std::size_t>(len)).rfind(dir, 0) == 0) ++n;
  }
  ::closedir(d);
  return n;
}

// Steps until every one of `count` files has `want(i)` as its stream's data (bounded).
template <class Want>
bool steps_until_all(TailRun& r, TempDir& t, int count, Want want, int max_steps = 200) {
  for (int k = 0; k < max_steps; ++k) {
    bool all = true;
    for (int i = 0; i < count && all; ++i) all = r.rec.data_of(t / name_of(i)) == want(i);
    if (all) return true;
    r.step();
  }
  return false;
}

}  // namespace

TEST_CASE_METHOD(TailFixture, "20 files with 4 descriptors: every line of every file is read, and growth later too") {
  opts.max_open_files = 4;
  for (int i = 0; i < 20; ++i) write(t / name_of(i), lines(1, 3, "f" + std::to_string(i)));
  auto& r = start(files(t / "*.log"));
  CHECK(steps_until_all(r, t, 20, [](int i) { return lines(1, 3, "f" + std::to_string(i)); }));
  CHECK(open_under(t.path.string()) <= 4);
  CHECK(r.tailer.stats().files_waiting == 0);
  CHECK(r.tailer.stats().file_reopens > 0);

  // Every file grows (most of them have no descriptor now): each gets one in turn and continues at its offset.
  for (int i = 0; i < 20; ++i) write(t / name_of(i), lines(4, 5, "f" + std::to_string(i)));
  CHECK(steps_until_all(r, t, 20, [](int i) { return lines(1, 5, "f" + std::to_string(i)); }));
  CHECK(open_under(t.path.string()) <= 4);
  for (int i = 0; i < 20; ++i) {
    INFO(i);
    const auto* s = r.rec.find(t / name_of(i));
    REQUIRE(s);
    CHECK(s->line == 6);  // line numbers continue across the reopen
  }
  for (const auto& e : r.rec.events) CHECK(e.rfind("truncated", 0) != 0);  // no file read twice
}

TEST_CASE_METHOD(TailFixture, "files waiting for a descriptor are counted and their bytes show as lag") {
  opts.max_open_files = 2;
  opts.max_bytes_per_poll = 64;  // one small read per poll: files stay unread for a while
  opts.read_chunk_bytes = 64;
  for (int i = 0; i < 6; ++i) write(t / name_of(i), lines(1, 40, "f" + std::to_string(i)));
  auto& r = start(files(t / "*.log"));
  r.clock.advance(std::chrono::milliseconds(10));
  r.tailer.poll_once();
  CHECK(r.tailer.stats().files_waiting >= 4);
  std::uint64_t lag = 0;
  for (const auto& [source, bytes] : r.tailer.lag_by_source()) lag += bytes;
  CHECK(lag > 4 * lines(1, 40, "f0").size());  // the files without a descriptor count, not only the open ones
  CHECK(steps_until_all(r, t, 6, [](int i) { return lines(1, 40, "f" + std::to_string(i)); }, 2000));
  CHECK(r.tailer.stats().files_waiting == 0);
  lag = 0;
  for (const auto& [source, bytes] : r.tailer.lag_by_source()) lag += bytes;
  CHECK(lag == 0);
}

TEST_CASE_METHOD(TailFixture, "a file parked without its descriptor is checkpointed and resumed exactly") {
  opts.max_open_files = 2;
  for (int i = 0; i < 6; ++i) write(t / name_of(i), lines(1, 2, "f" + std::to_string(i)));
  TailPositions saved;
  {
    auto& r = start(files(t / "*.log"));
    REQUIRE(steps_until_all(r, t, 6, [](int i) { return lines(1, 2, "f" + std::to_string(i)); }));
    // A partial line in a file that has no descriptor now.
    write(t / name_of(0), "f0 partial");
    for (int k = 0; k < 10 && r.rec.data_of(t / name_of(0)) != lines(1, 2, "f0") + "f0 partial"; ++k) r.step();
    REQUIRE(r.rec.data_of(t / name_of(0)) == lines(1, 2, "f0") + "f0 partial");
    // Let the others take the descriptors back so that f0 is parked again.
    for (int i = 1; i < 6; ++i) write(t / name_of(i), lines(3, 3, "f" + std::to_string(i)));
    REQUIRE(steps_until_all(r, t, 6, [](int i) {
      return i == 0 ? lines(1, 2, "f0") + "f0 partial" : lines(1, 3, "f" + std::to_string(i));
    }));
    CHECK(open_under(t.path.string()) <= 2);
    saved = r.tailer.positions();
  }
  REQUIRE(saved.files.size() == 6);
  for (const auto& p : saved.files) {
    INFO(p.path);
    CHECK_FALSE(p.finished);
    if (p.path == t / name_of(0)) {
      CHECK(p.offset == lines(1, 2, "f0").size());  // up to the last newline: the partial line is read again
      CHECK(p.line == 3);
    } else {
      CHECK(p.offset == lines(1, 3, "f1").size());
      CHECK(p.line == 4);
    }
  }
  write(t / name_of(0), " done\n");
  for (int i = 1; i < 6; ++i) write(t / name_of(i), lines(4, 4, "f" + std::to_string(i)));
  auto& r = start(files(t / "*.log"), &saved);
  CHECK(steps_until_all(r, t, 6, [](int i) {
    return i == 0 ? std::string("f0 partial done\n") : lines(4, 4, "f" + std::to_string(i));
  }));
  CHECK(r.rec.saw("resumed " + t / name_of(0) + " @" + std::to_string(lines(1, 2, "f0").size()) + " L3"));
}

TEST_CASE_METHOD(TailFixture, "a parked file refilled in place (copytruncate) is read again from 0 when reopened") {
  opts.max_open_files = 1;
  write(t / name_of(0), lines(1, 3, "old"));
  write(t / name_of(1), lines(1, 1, "b"));
  auto& r = start(files(t / "*.log"));
  REQUIRE(steps_until_all(r, t, 2, [](int i) { return i == 0 ? lines(1, 3, "old") : lines(1, 1, "b"); }));
  write(t / name_of(1), lines(2, 2, "b"));  // b takes the one descriptor: the old content waits without one
  REQUIRE(steps_until_all(r, t, 2, [](int i) { return i == 0 ? lines(1, 3, "old") : lines(1, 2, "b"); }));
  write(t / name_of(0), lines(1, 9, "new"), false);
  CHECK(steps_until_all(r, t, 2, [](int i) {
    return i == 0 ? lines(1, 3, "old") + lines(1, 9, "new") : lines(1, 2, "b");
  }));
  CHECK(r.tailer.stats().truncations == 1);
}
