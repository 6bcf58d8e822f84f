// tail: following a stream across rename rotation, copytruncate, deletion and recreation, and across restarts
// (positions, files rotated or truncated while stopped). Driven step by step with a manual clock.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "faultline/tail.hpp"
#include "tail_fixture.hpp"

using namespace faultline;
using namespace tailtest;

TEST_CASE_METHOD(TailFixture, "rename rotation: the old file is finished before the new one starts") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 2));
  r.step();
  // Rotate: the writer still adds to the renamed file, then moves to a new one.
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log.1", lines(3, 4));
  write(t / "app.log", lines(5, 6));
  r.step(std::chrono::milliseconds(1100));  // sees both; the old one is read to its end
  r.step(std::chrono::milliseconds(600));   // rotate_wait passed: moves on
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 6));
  CHECK(r.rec.saw("rotated " + t / "app.log" + " @0 L1"));
  CHECK(r.tailer.stats().rotations == 1);
  // The old file is finished: growing it later is counted, not read.
  write(t / "app.log.1", "late\n");
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 6));
}

TEST_CASE_METHOD(TailFixture, "copytruncate: a file shorter than the offset is read again from 0, and counted") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 5));
  r.step();
  ::truncate((t / "app.log").c_str(), 0);
  write(t / "app.log", lines(6, 6));
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 6));
  CHECK(r.rec.saw("truncated " + t / "app.log" + " @0 L1"));
  CHECK(r.tailer.stats().truncations == 1);
}

TEST_CASE_METHOD(TailFixture, "copytruncate refilled past the old offset is told by the fingerprint") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 3, "old"));
  r.step();
  write(t / "app.log", lines(1, 20, "new"), false);  // truncated and refilled before the next look
  r.step();
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 3, "old") + lines(1, 20, "new"));
  CHECK(r.tailer.stats().truncations == 1);
}

TEST_CASE_METHOD(TailFixture, "a file followed from empty gets its fingerprint as it grows, so a refill is told") {
  write(t / "app.log", "");
  auto& r = start(files(t / "app.log"));
  r.step();
  write(t / "app.log", lines(1, 3, "old"));
  r.step();
  write(t / "app.log", lines(1, 20, "new"), false);  // truncated and refilled past the offset before the next look
  r.step();
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 3, "old") + lines(1, 20, "new"));
  CHECK(r.tailer.stats().truncations == 1);
}

TEST_CASE_METHOD(TailFixture, "a refill differing only in the fingerprint's last byte is told after many growths") {
  // The file outgrows the fingerprint (1 KiB) and grows again and again: each growth compares the kept leading bytes
  // with the file's. Then it is replaced by content whose first KiB differs in its last byte alone.
  const std::string first = lines(1, 200, "old");
  REQUIRE(first.size() > 1100);
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", first);
  r.step();
  for (int k = 0; k < 3; ++k) {
    write(t / "app.log", lines(200 + k, 200 + k, "more"));
    r.step();
  }
  CHECK(r.tailer.stats().truncations == 0);
  std::string refill = first;
  refill[1023] = refill[1023] == 'x' ? 'y' : 'x';
  refill += lines(300, 400, "new");
  write(t / "app.log", refill, false);  // truncated and refilled past the offset before the next look
  r.step();
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == first + lines(200, 200, "more") + lines(201, 201, "more") +
                                            lines(202, 202, "more") + refill);
  CHECK(r.tailer.stats().truncations == 1);
}

TEST_CASE_METHOD(TailFixture,
                 "a deleted file is read to its end and closed, and its stream ends; a recreated one is a new stream") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 2));
  r.step();
  {
    std::ofstream out(t / "app.log", std::ios::app);
    fs::remove(t / "app.log");
    out << lines(3, 4);  // written after the unlink, through the open file
  }
  r.step();
  CHECK_FALSE(r.rec.streams.at(0).ended);  // not before rotate_wait: a successor may still come
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 4));
  CHECK(r.tailer.stats().deleted == 1);
  CHECK(r.tailer.stats().watched_files == 0);
  // Nothing follows it: the stream ended (a pod that is gone), and its handler may let its state go.
  REQUIRE(r.rec.streams.size() == 1);
  CHECK(r.rec.streams[0].ended);
  CHECK(r.tailer.stats().streams_ended == 1);
  write(t / "app.log", lines(5, 5));
  r.step();
  REQUIRE(r.rec.streams.size() == 2);
  CHECK(r.rec.streams[1].identity.name == t / "app.log");
  CHECK(r.rec.streams[1].data == lines(5, 5));
  CHECK(r.rec.saw("first " + t / "app.log" + " @0"));
  CHECK(r.tailer.stats().streams_ended == 1);
}

TEST_CASE_METHOD(TailFixture,
                 "positions resume after a restart; a reused inode starts over; finished files stay finished") {
  TailPositions saved;
  write(t / "app.log", lines(1, 3) + "partial");
  write(t / "done.log", lines(1, 2, "done"));
  {
    auto& r = start(files(t / "app.log"));
    r.step();
    saved = r.tailer.positions();
  }
  REQUIRE(saved.files.size() == 1);
  CHECK(saved.files[0].offset == lines(1, 3).size());  // committed: the partial line is read again
  CHECK(saved.files[0].line == 4);
  struct stat st;
  ::stat((t / "app.log").c_str(), &st);
  CHECK(saved.files[0].inode == st.st_ino);
  CHECK(saved.files[0].fingerprint.bytes == lines(1, 3).size() + 7);

  write(t / "app.log", " now complete\n" + lines(5, 5));
  {
    auto& r = start(files(t / "app.log", StartAt::end), &saved);  // start_at applies to the first start only
    r.step();
    CHECK(r.rec.data_of(t / "app.log") == "partial now complete\n" + lines(5, 5));
    CHECK(r.rec.saw("resumed " + t / "app.log" + " @" + std::to_string(lines(1, 3).size()) + " L4"));
  }
  // Another file with the same inode number (fingerprint differs): read from the start.
  TailPositions reused = saved;
  reused.files[0].fingerprint.hash ^= 1;
  {
    auto& r = start(files(t / "app.log"), &reused);
    r.step();
    CHECK(r.rec.saw("first " + t / "app.log" + " @0 L1"));
  }
  // Truncated while stopped: from 0, counted.
  TailPositions beyond = saved;
  beyond.files[0].offset = 1 << 20;
  {
    auto& r = start(files(t / "app.log"), &beyond);
    r.step();
    CHECK(r.tailer.stats().truncations == 1);
    CHECK(r.rec.saw("truncated " + t / "app.log" + " @0 L1"));
  }
  // A file that went away while stopped: its unread bytes are counted.
  TailPositions gone = saved;
  gone.files[0].inode += 1000000;
  gone.files[0].size = gone.files[0].offset + 100;
  {
    auto& r = start(files(t / "app.log"), &gone);
    r.step();
    CHECK(r.tailer.stats().rotated_unread_bytes == 100);
  }
}

TEST_CASE_METHOD(TailFixture, "a file rotated while stopped keeps its stream: finished first, then the new file") {
  write(t / "app.log", lines(1, 3));
  TailPositions saved;
  {
    auto& r = start(files(t / "app.log*"));
    r.step();
    saved = r.tailer.positions();
  }
  write(t / "app.log", lines(4, 4));
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log", lines(5, 5));
  auto& r = start(files(t / "app.log*"), &saved);
  r.step();
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(4, 5));
  CHECK(!r.rec.find(t / "app.log.1"));
  // Restarted again: nothing is read twice.
  auto again = r.tailer.positions();
  auto& r2 = start(files(t / "app.log*"), &again);
  r2.step();
  r2.step();
  CHECK(r2.rec.data_of(t / "app.log").empty());
  CHECK(r2.rec.data_of(t / "app.log.1").empty());
}

TEST_CASE_METHOD(TailFixture, "a new file that reuses the inode of a finished one is read, not taken for the old one") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", lines(1, 2));
  r.step();
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log", lines(3, 4));
  r.step(std::chrono::milliseconds(1100));  // sees both; the old one is read to its end
  r.step(std::chrono::milliseconds(600));   // rotate_wait passed: the old one is finished (and closed)
  REQUIRE(r.rec.data_of(t / "app.log") == lines(1, 4));
  // The writer rotates again before the next rescan: the finished file goes away and the new app.log may get its
  // inode number (ext4 hands a freed inode out again at once).
  fs::remove(t / "app.log.1");
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log", lines(5, 6, "new"));
  r.step();
  r.step(std::chrono::milliseconds(600));
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 4) + lines(5, 6, "new"));
}
