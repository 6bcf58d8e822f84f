// tail: wake-ups. While inotify covers every directory, the periodic check stats only what an event named (or what
// inotify cannot vouch for); the full rescan runs on directory events and every covered_rescan_interval. Without
// inotify, or where it cannot vouch for a change (hard links, symlinked directories, missing directories), the full
// rescan runs every rescan_interval. Driven step by step with a manual clock.
#include <catch2/catch.hpp>

#include "faultline/tail.hpp"
#include "tail_fixture.hpp"

using namespace faultline;
using namespace tailtest;

TEST_CASE_METHOD(TailFixture,
                 "idle with inotify: no full rescan until a directory changes or covered_rescan_interval passes") {
  write(t / "a.log", "a\n");
  opts.covered_rescan_interval = std::chrono::seconds(10);
  {
    auto& r = start(files(t / "*.log"));
    r.step();
    r.step();  // the look again after the first watches were added
    auto base = r.tailer.stats().rescans;
    for (int i = 0; i < 5; ++i) r.step();
    CHECK(r.tailer.stats().rescans == base);
    write(t / "a.log", "more\n");  // a write: an event, read at once, no rescan
    r.clock.advance(std::chrono::milliseconds(10));
    r.drain();
    CHECK(r.rec.data_of(t / "a.log") == "a\nmore\n");
    r.step();
    CHECK(r.tailer.stats().rescans == base);
    write(t / "b.log", "b\n");  // a new file: a directory event, a rescan at once
    r.clock.advance(std::chrono::milliseconds(10));
    r.drain();
    CHECK(r.rec.data_of(t / "b.log") == "b\n");
    CHECK(r.tailer.stats().rescans == base + 1);
    for (int i = 0; i < 10; ++i) r.step();  // 11 s: the periodic full rescan ran
    CHECK(r.tailer.stats().rescans == base + 2);
  }

  opts = options();
  opts.use_inotify = false;
  auto& polling = start(files(t / "*.log"));
  polling.step();
  auto base2 = polling.tailer.stats().rescans;
  for (int i = 0; i < 5; ++i) polling.step();
  CHECK(polling.tailer.stats().rescans == base2 + 5);
}

TEST_CASE_METHOD(TailFixture,
                 "copytruncate refilled past the old offset between two idle checks is told by the fingerprint") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 3, "old"));
  r.step();
  r.step();
  auto base = r.tailer.stats().rescans;
  write(t / "app.log", lines(1, 20, "new"), false);
  r.step();
  r.step();
  CHECK(r.tailer.stats().rescans == base);  // found by the check of the file an event named
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 3, "old") + lines(1, 20, "new"));
  CHECK(r.tailer.stats().truncations == 1);
}

TEST_CASE_METHOD(TailFixture, "a file rotated away without a successor is still followed between rescans") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 2));
  r.step();
  r.step();
  fs::rename(t / "app.log", t / "app.log.1");  // a directory event: the rescan sees it rotated away
  r.step();
  auto base = r.tailer.stats().rescans;
  write(t / "app.log.1", lines(3, 4));  // its events carry a name no glob matches
  r.step();
  CHECK(r.tailer.stats().rescans == base);
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 4));
}

TEST_CASE_METHOD(TailFixture, "a file written through a hard link in an unwatched directory is still read") {
  fs::create_directories(t.path / "logs");
  fs::create_directories(t.path / "elsewhere");
  write(t / "logs/app.log", lines(1, 1));
  fs::create_hard_link(t / "logs/app.log", t / "elsewhere/app.log");
  auto& r = start(files(t / "logs/*.log"));
  r.step();
  r.step();
  write(t / "elsewhere/app.log", lines(2, 3));  // the event goes to `elsewhere`, which is not watched
  r.step();
  CHECK(r.rec.data_of(t / "logs/app.log") == lines(1, 3));
}

TEST_CASE_METHOD(TailFixture, "a watched directory moved away and created again: new files in the new one are found") {
  fs::create_directories(t.path / "logs");
  write(t / "logs/a.log", "a\n");
  auto& r = start(files(t / "logs/*.log"));
  r.step();
  r.step();
  fs::rename(t / "logs", t / "logs.old");
  fs::create_directories(t.path / "logs");
  r.step();
  r.step();
  write(t / "logs/b.log", "b\n");
  r.step();
  CHECK(r.rec.data_of(t / "logs/b.log") == "b\n");
}

TEST_CASE_METHOD(TailFixture,
                 "a directory reached through a symlink keeps the periodic rescan: retargeting the link is seen") {
  fs::create_directories(t.path / "v1");  // empty: only the glob's directory is watched
  fs::create_directories(t.path / "v2");
  fs::create_directory_symlink(t / "v1", t / "current");
  auto& r = start(files(t / "current/*.log"));
  r.step();
  r.step();
  write(t / "v2/b.log", "b\n");
  fs::remove(t / "current");
  fs::create_directory_symlink(t / "v2", t / "current");  // no event in any watched directory
  r.step();
  CHECK(r.rec.data_of(t / "current/b.log") == "b\n");
}

TEST_CASE_METHOD(TailFixture, "a directory a glob names literally appears later: found at the next rescan") {
  auto& r = start(files(t / "pods/*/*.log"));  // `pods` is missing: nothing inotify could watch announces it
  r.step();
  r.step();
  fs::create_directories(t.path / "pods/p");
  write(t / "pods/p/a.log", "a\n");
  r.step();
  CHECK(r.rec.data_of(t / "pods/p/a.log") == "a\n");
}

TEST_CASE_METHOD(TailFixture, "idle: next_timeout waits until the next rescan") {
  write(t / "a.log", "a\n");
  auto& r = start(files(t / "*.log"));
  r.step();
  r.clock.advance(std::chrono::seconds(3));  // past the partial timeout
  r.tailer.poll_once();
  auto timeout = r.tailer.next_timeout();
  CHECK(timeout > std::chrono::milliseconds(500));
  CHECK(timeout <= std::chrono::milliseconds(1001));
  CHECK(!r.tailer.poll_once());
}
