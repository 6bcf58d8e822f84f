// tail: path layouts, globs, kmsg records, checkpoints, the inotify reader, and the Tailer driven step by step with a
// manual clock: discovery, identity, reading, per-source counters, the kernel log. Rotation and truncation:
// test_tail_rotation.cpp; wake-ups (inotify coverage, the poll fallback): test_tail_watch.cpp.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "faultline/checkpoint.hpp"
#include "faultline/tail.hpp"
#include "tail/file_io.hpp"
#include "tail_fixture.hpp"

using namespace faultline;
using namespace tailtest;

TEST_CASE("Kubernetes and docker paths give the stream's identity") {
  auto p = parse_log_path("/var/log/pods/ml_vllm-0_5f1b6c1e-0000-1111-2222-333344445555/vllm/3.log");
  CHECK(p.kubernetes);
  CHECK(p.namespace_ == "ml");
  CHECK(p.pod == "vllm-0");
  CHECK(p.uid == "5f1b6c1e-0000-1111-2222-333344445555");
  CHECK(p.container == "vllm");
  CHECK(p.restart == "3");
  CHECK(p.format_hint == ContainerFormat::cri);

  auto c = parse_log_path("/var/log/containers/vllm-0_ml_vllm-" + std::string(64, 'a') + ".log");
  CHECK(c.kubernetes);
  CHECK(c.pod == "vllm-0");
  CHECK(c.namespace_ == "ml");
  CHECK(c.container == "vllm");
  CHECK(c.container_id == std::string(64, 'a'));
  CHECK(c.restart.empty());

  std::string id(64, 'b');
  auto d = parse_log_path("/var/lib/docker/containers/" + id + "/" + id + "-json.log");
  CHECK(d.docker);
  CHECK(d.container_id == id);
  CHECK(d.format_hint == ContainerFormat::docker);

  CHECK(!parse_log_path("/var/log/syslog").kubernetes);
  CHECK(!parse_log_path("/var/log/pods/bad/vllm/0.log").kubernetes);              // not ns_pod_uid
  CHECK(!parse_log_path("/var/log/pods/a_b_c/vllm/0.log.20260101-000000").kubernetes);  // rotated name
}

TEST_CASE("globs expand in every component and report the directories to watch") {
  TempDir t;
  fs::create_directories(t.path / "pods/a_p1_u1/c1");
  fs::create_directories(t.path / "pods/b_p2_u2/c2");
  write(t / "pods/a_p1_u1/c1/0.log", "x\n");
  write(t / "pods/a_p1_u1/c1/1.log", "x\n");
  write(t / "pods/b_p2_u2/c2/0.log", "x\n");
  write(t / "pods/b_p2_u2/c2/.hidden.log", "x\n");
  std::vector<std::string> dirs;
  auto found = expand_glob(t / "pods/*/*/*.log", &dirs);
  REQUIRE(found.size() == 3);
  CHECK(found[0] == t / "pods/a_p1_u1/c1/0.log");
  CHECK(found[2] == t / "pods/b_p2_u2/c2/0.log");
  CHECK(std::find(dirs.begin(), dirs.end(), t / "pods") != dirs.end());
  CHECK(std::find(dirs.begin(), dirs.end(), t / "pods/a_p1_u1/c1") != dirs.end());
  // A literal path: its directory is watched even before the file exists.
  dirs.clear();
  CHECK(expand_glob(t / "pods/missing.log", &dirs).empty());
  CHECK(dirs == std::vector<std::string>{t / "pods"});
  CHECK(expand_glob(t / "nothing/*/x.log").empty());
  // Complete unless a directory the pattern names literally is missing (no watch could announce it).
  bool complete = true;
  expand_glob(t / "pods/*/*/*.log", nullptr, &complete);
  expand_glob(t / "pods/missing.log", nullptr, &complete);
  CHECK(complete);
  expand_glob(t / "nothing/*/x.log", nullptr, &complete);
  CHECK(!complete);
}

TEST_CASE("kmsg records") {
  auto r = parse_kmsg_record("4,1002,7000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234\n SUBSYSTEM=pci\n");
  REQUIRE(r);
  CHECK(r->priority == 4);
  CHECK(r->facility == 0);
  CHECK(r->seq == 1002);
  CHECK(r->usec == 7000000);
  CHECK(r->message == "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234");
  auto fac = parse_kmsg_record("30,7,1,c,more;systemd[1]: x");
  REQUIRE(fac);
  CHECK(fac->facility == 3);
  CHECK(fac->priority == 6);
  CHECK(!parse_kmsg_record("no semicolon"));
  CHECK(!parse_kmsg_record("x,1,2;msg"));
  CHECK(!parse_kmsg_record("1,2;msg"));
  Time boot = *parse_rfc3339("2026-11-30T10:00:00Z");
  CHECK(format_kmsg_line(*r, boot) == "2026-11-30T10:00:07.000Z WARNING kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234");
  KmsgRecord err = *r;
  err.priority = 3;
  CHECK(format_kmsg_line(err, boot).find(" ERROR kernel: ") != std::string::npos);
}

TEST_CASE("checkpoints round-trip, are written atomically and carry a version") {
  TempDir t;
  Checkpoint c;
  FilePosition p;
  p.path = "/var/log/a.log";
  p.dev = 2049;
  p.inode = 1234567;
  p.fingerprint = Fingerprint{0xfeedfacecafebeefULL, 1024};
  p.offset = 4096;
  p.line = 77;
  p.size = 5000;
  p.finished = true;
  c.positions.files.push_back(p);
  c.positions.kmsg = KmsgPosition{"boot-1", 99, 1000, 12, true};
  c.correlator_state = R"({"version":1,"stories":[]})";
  c.fingerprints = R"({"version":1,"entries":[]})";
  c.written = *parse_rfc3339("2026-11-30T10:00:00Z");
  REQUIRE(write_checkpoint(t.path.string(), c).ok());
  CHECK(!fs::exists(t.path / ("checkpoint.json.tmp." + std::to_string(::getpid()))));
  auto read = read_checkpoint(t.path.string());
  REQUIRE(read.ok());
  const std::optional<Checkpoint>& back = *read;
  REQUIRE(back);
  REQUIRE(back->positions.files.size() == 1);
  const auto& q = back->positions.files[0];
  CHECK(q.path == p.path);
  CHECK(q.dev == p.dev);
  CHECK(q.inode == p.inode);
  CHECK(q.fingerprint == p.fingerprint);
  CHECK(q.offset == 4096);
  CHECK(q.line == 77);
  CHECK(q.size == 5000);
  CHECK(q.finished);
  CHECK(back->positions.kmsg.valid);
  CHECK(back->positions.kmsg.seq == 99);
  CHECK(back->correlator_state == c.correlator_state);
  CHECK(back->fingerprints == c.fingerprints);
  CHECK(back->written == c.written);
  // A checkpoint written before the inventory was kept: no fingerprints, no error.
  auto older = checkpoint_from_json(R"({"version":1,"files":[],"correlator":""})");
  REQUIRE(older.ok());
  CHECK(older->fingerprints.empty());

  // No checkpoint: nothing, without an error. Wrong version or garbage: an error naming the file.
  TempDir empty;
  auto none = read_checkpoint(empty.path.string());
  REQUIRE(none.ok());
  CHECK(!*none);
  write(t / "checkpoint.json", R"({"version":99,"files":[]})", false);
  auto wrong = read_checkpoint(t.path.string());
  REQUIRE(!wrong.ok());
  CHECK(wrong.error().message.find("version 99") != std::string::npos);
  CHECK(wrong.error().message.find("checkpoint.json") != std::string::npos);
  write(t / "checkpoint.json", "{not json", false);
  auto garbage = read_checkpoint(t.path.string());
  REQUIRE(!garbage.ok());
  CHECK(garbage.error().message.find("malformed") != std::string::npos);
  // Numeric fields must be integers in range: 1e300 or -1 is an error, never converted.
  for (const char* bad : {R"({"version":1e300,"files":[]})", R"({"version":1.0,"files":[]})",
                          R"({"version":1,"files":[{"path":"/a","dev":1e300,"inode":1,"fingerprint":1,)"
                          R"("fingerprint_bytes":1,"offset":0,"line":1}]})",
                          R"({"version":1,"files":[{"path":"/a","dev":1,"inode":1,"fingerprint":1,)"
                          R"("fingerprint_bytes":-1,"offset":0,"line":1}]})"}) {
    INFO(bad);
    write(t / "checkpoint.json", bad, false);
    auto read_bad = read_checkpoint(t.path.string());
    CHECK(!read_bad.ok());
  }
}

TEST_CASE("raise_open_files_limit reaches the hard limit") {
  auto n = raise_open_files_limit();
  struct rlimit rl;
  ::getrlimit(RLIMIT_NOFILE, &rl);
  CHECK(n == rl.rlim_cur);
  CHECK(rl.rlim_cur == rl.rlim_max);
}

TEST_CASE_METHOD(TailFixture, "a file is read from the beginning, then followed as it grows") {
  write(t / "app.log", lines(1, 3));
  auto& r = start(files(t / "*.log"));
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 3));
  CHECK(r.rec.saw("first " + t / "app.log" + " @0 L1"));
  write(t / "app.log", lines(4, 5));
  r.step();
  CHECK(r.rec.data_of(t / "app.log") == lines(1, 5));
  const auto* s = r.rec.find(t / "app.log");
  CHECK(*find_field(s->identity.labels, "node") == "node-a");
  CHECK(*find_field(s->identity.labels, "source") == "file");
  CHECK(r.tailer.stats().watched_files == 1);
}

TEST_CASE_METHOD(TailFixture, "reading a followed file does not touch its access time") {
  // A log is written all the time: with relatime, every read after a write would update the inode's access time
  // (and journal it). The tailer opens files with O_NOATIME (it owns them here).
  write(t / "app.log", lines(1, 3));
  {
    tail::UniqueFd fd(tail::open_for_reading(t / "app.log"));
    REQUIRE(fd.get() >= 0);
    CHECK((::fcntl(fd.get(), F_GETFL) & O_NOATIME) != 0);
  }
  // An access time older than the last write: a read without O_NOATIME updates it under relatime and strictatime.
  const struct timespec times[2] = {{1000, 0}, {0, UTIME_OMIT}};
  REQUIRE(::utimensat(AT_FDCWD, (t / "app.log").c_str(), times, 0) == 0);
  auto& r = start(files(t / "*.log"));
  r.step();
  REQUIRE(r.rec.data_of(t / "app.log") == lines(1, 3));
  write(t / "app.log", lines(4, 5));
  REQUIRE(::utimensat(AT_FDCWD, (t / "app.log").c_str(), times, 0) == 0);
  r.step();
  REQUIRE(r.rec.data_of(t / "app.log") == lines(1, 5));
  struct stat st {};
  REQUIRE(::stat((t / "app.log").c_str(), &st) == 0);
  CHECK(st.st_atim.tv_sec == 1000);
}

TEST_CASE_METHOD(TailFixture, "start_at end skips what existing files hold at the first start only") {
  write(t / "old.log", lines(1, 3));
  auto& r = start(files(t / "*.log", StartAt::end));
  r.step();
  CHECK(r.rec.data_of(t / "old.log").empty());
  CHECK(r.rec.saw("first " + t / "old.log" + " @" + std::to_string(lines(1, 3).size()) + " L4"));
  write(t / "old.log", lines(4, 4));
  write(t / "new.log", lines(1, 2, "new"));  // appears later: read whole
  r.step();
  CHECK(r.rec.data_of(t / "old.log") == lines(4, 4));
  CHECK(r.rec.data_of(t / "new.log") == lines(1, 2, "new"));
}

TEST_CASE_METHOD(TailFixture, "a partial last line: idle after the partial-line timeout, not before") {
  auto& r = start(files(t / "app.log"));
  write(t / "app.log", "no newline yet");
  r.step();
  const auto* s = r.rec.find(t / "app.log");
  REQUIRE(s);
  CHECK(s->idles == 0);
  CHECK(r.tailer.next_timeout() <= std::chrono::milliseconds(2001));
  r.clock.advance(std::chrono::milliseconds(1500));
  r.tailer.poll_once();
  CHECK(s->idles == 0);
  r.clock.advance(std::chrono::milliseconds(600));
  r.tailer.poll_once();
  CHECK(s->idles == 1);
  r.clock.advance(std::chrono::seconds(5));
  r.tailer.poll_once();
  CHECK(s->idles == 1);  // once per burst
}

TEST_CASE_METHOD(TailFixture, "reading is bounded per poll and fair") {
  std::string big(3 * 1024 * 1024, 'x');
  big += "\n";
  write(t / "a.log", big);
  write(t / "b.log", big);
  opts.read_chunk_bytes = 64 * 1024;
  opts.max_bytes_per_poll = 256 * 1024;
  auto& r = start(files(t / "*.log"));
  r.clock.advance(std::chrono::seconds(2));
  CHECK(r.tailer.poll_once());  // more to read
  auto a = r.rec.data_of(t / "a.log").size(), b = r.rec.data_of(t / "b.log").size();
  CHECK(a + b <= 256 * 1024);
  CHECK(a > 0);
  CHECK(b > 0);
  int polls = 1;
  while (r.tailer.poll_once()) ++polls;
  CHECK(polls >= 20);
  CHECK(r.rec.data_of(t / "a.log").size() == big.size());
  CHECK(r.rec.data_of(t / "b.log").size() == big.size());
}

TEST_CASE_METHOD(TailFixture,
                 "Kubernetes pod logs: names, labels, a new restart is a new instance, faultline's own pod is skipped") {
  std::string pod = t / "pods/ml_vllm-0_uid-1/vllm";
  std::string self = t / "pods/monitoring_faultline-abcde_uid-2/faultline";
  fs::create_directories(pod);
  fs::create_directories(self);
  auto& r = start(files(t / "pods/*/*/*.log"));
  r.step();
  write(pod + "/0.log", "2026-11-30T10:00:00Z stdout F a\n");
  write(self + "/0.log", "2026-11-30T10:00:00Z stdout F self\n");
  r.step();
  const auto* s = r.rec.find("ml/vllm-0/vllm");
  REQUIRE(s);
  CHECK(s->format == ContainerFormat::cri);
  CHECK(s->identity.logical == "ml/vllm-0/vllm");
  CHECK(s->identity.instance == "0");
  CHECK(*find_field(s->identity.labels, "namespace") == "ml");
  CHECK(*find_field(s->identity.labels, "pod") == "vllm-0");
  CHECK(*find_field(s->identity.labels, "container") == "vllm");
  CHECK(*find_field(s->identity.labels, "restart") == "0");
  CHECK(!r.rec.find("monitoring/faultline-abcde/faultline"));
  // The container restarts.
  write(pod + "/1.log", "2026-11-30T10:01:00Z stdout F b\n");
  r.step();
  r.step();
  CHECK(r.rec.saw("new_instance ml/vllm-0/vllm @0 L1 i=1"));
  CHECK(*find_field(s->identity.labels, "restart") == "1");
  CHECK(s->data == "2026-11-30T10:00:00Z stdout F a\n2026-11-30T10:01:00Z stdout F b\n");
  // The kubelet removes the older restart's file: the stream goes on in the current one.
  fs::remove(pod + "/0.log");
  r.step();
  r.step();
  CHECK_FALSE(s->ended);
  // The pod is deleted with its directory: its last file read, the stream ends.
  fs::remove_all(t / "pods/ml_vllm-0_uid-1");
  r.step();
  r.step();
  CHECK(s->ended);
  CHECK(r.tailer.stats().streams_ended == 1);
}

TEST_CASE_METHOD(TailFixture, "restart files found together are read in restart order") {
  std::string pod = t / "pods/ml_p_uid/c";
  fs::create_directories(pod);
  write(pod + "/10.log", "ten\n");
  write(pod + "/9.log", "nine\n");
  auto& r = start(files(t / "pods/*/*/*.log"));
  r.step();
  r.step();
  CHECK(r.rec.data_of("ml/p/c") == "nine\nten\n");
}

TEST_CASE_METHOD(TailFixture, "symlinks are followed; the same file under two names is read once") {
  fs::create_directories(t.path / "pods/ns_p_uid/c");
  fs::create_directories(t.path / "containers");
  write(t / "pods/ns_p_uid/c/0.log", "2026-11-30T10:00:00Z stdout F x\n");
  fs::create_symlink(t / "pods/ns_p_uid/c/0.log", t / ("containers/p_ns_c-" + std::string(64, 'a') + ".log"));
  auto& r = start({files(t / "containers/*.log"), files(t / "pods/*/*/*.log")});
  r.step();
  REQUIRE(r.rec.streams.size() == 1);
  CHECK(r.rec.streams[0].identity.name == "ns/p/c");
  CHECK(*find_field(r.rec.streams[0].identity.labels, "restart") == "0");  // from the link's target
  CHECK(r.rec.streams[0].data == "2026-11-30T10:00:00Z stdout F x\n");
}

TEST_CASE_METHOD(TailFixture, "exclude globs and stream names from a template") {
  write(t / "a.log", "a\n");
  write(t / "b.log", "b\n");
  SourceSpec s = files(t / "*.log");
  s.exclude = {"*/b.log"};
  s.name = "svc/{stem}";
  s.source = "apps";
  s.labels = {{"cluster", "c1"}};
  auto& r = start(s);
  r.step();
  REQUIRE(r.rec.streams.size() == 1);
  CHECK(r.rec.streams[0].identity.name == "svc/a");
  CHECK(*find_field(r.rec.streams[0].identity.labels, "source") == "apps");
  CHECK(*find_field(r.rec.streams[0].identity.labels, "cluster") == "c1");
}

TEST_CASE_METHOD(TailFixture, "unreadable files are counted and skipped") {
  if (::geteuid() == 0) {
    SUCCEED("root reads everything");
    return;
  }
  write(t / "secret.log", "x\n");
  ::chmod((t / "secret.log").c_str(), 0);
  auto& r = start(files(t / "*.log"));
  r.step();
  CHECK(r.tailer.stats().unreadable >= 1);
  CHECK(r.rec.streams.empty());
}

namespace {

const SourceTailStats* stats_of(const std::vector<SourceTailStats>& all, const std::string& source) {
  for (const auto& s : all)
    if (s.source == source) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE_METHOD(TailFixture, "per-source counters are charged to the source a file belongs to") {
  fs::create_directories(t.path / "apps");
  fs::create_directories(t.path / "sys");
  write(t / "apps/a.log", lines(1, 2));
  write(t / "sys/s.log", lines(1, 5));
  SourceSpec apps = files(t / "apps/*.log");
  apps.source = "apps";
  SourceSpec sys = files(t / "sys/*.log");
  sys.source = "sys";
  SourceSpec kernel;
  kernel.kind = SourceKind::kmsg;
  kernel.paths = {t / "no-such-kmsg"};
  kernel.optional = true;
  auto& r = start({apps, sys, kernel});
  r.step();
  fs::rename(t / "sys/s.log", t / "sys/s.log.1");
  write(t / "sys/s.log", lines(6, 6));
  r.step();
  r.step(std::chrono::milliseconds(600));
  REQUIRE(r.rec.data_of(t / "sys/s.log") == lines(1, 6));

  auto all = r.tailer.source_stats();
  REQUIRE(all.size() == 3);  // every configured source, sorted by label
  CHECK(all[0].source == "apps");
  CHECK(all[1].source == "kmsg");
  CHECK(all[2].source == "sys");
  const auto* a = stats_of(all, "apps");
  const auto* s = stats_of(all, "sys");
  const auto* k = stats_of(all, "kmsg");
  CHECK(a->bytes == lines(1, 2).size());
  CHECK(s->bytes == lines(1, 6).size());
  CHECK(a->files_opened == 1);
  CHECK(s->files_opened == 2);
  CHECK(a->rotations == 0);
  CHECK(s->rotations == 1);
  CHECK(k->unreadable == 1);  // the kernel log that cannot be opened
  CHECK(a->unreadable == 0);
  // The per-source counters add up to the Tailer's.
  const auto& total = r.tailer.stats();
  std::uint64_t bytes = 0, opened = 0, rotations = 0, unreadable = 0;
  for (const auto& e : all) {
    bytes += e.bytes;
    opened += e.files_opened;
    rotations += e.rotations;
    unreadable += e.unreadable;
  }
  CHECK(bytes == total.bytes);
  CHECK(opened == total.files_opened);
  CHECK(rotations == total.rotations);
  CHECK(unreadable == total.unreadable);

  // A file of `sys` that went away while stopped: its unread bytes are charged to `sys`, not to the first source.
  TailPositions saved = r.tailer.positions();
  FilePosition gone;
  gone.path = t / "sys/old.log";
  gone.dev = 1;
  gone.inode = 987654321;
  gone.offset = 10;
  gone.size = 110;
  saved.files.push_back(gone);
  auto& again = start({apps, sys}, &saved);
  again.step();
  auto after = again.tailer.source_stats();
  CHECK(again.tailer.stats().rotated_unread_bytes == 100);
  CHECK(stats_of(after, "sys")->rotated_unread_bytes == 100);
  CHECK(stats_of(after, "apps")->rotated_unread_bytes == 0);
}

TEST_CASE_METHOD(TailFixture, "kmsg-format records from a file become timed lines; a restart skips what was processed") {
  write(t / "kmsg", "6,10,1000000,-;first\n SUBSYSTEM=x\n3,11,2000000,-;NVRM: Xid 79\n");
  SourceSpec s;
  s.kind = SourceKind::kmsg;
  s.paths = {t / "kmsg"};
  s.start_at = StartAt::beginning;
  TailPositions saved;
  {
    auto& r = start(s);
    r.step();
    REQUIRE(r.rec.streams.size() == 1);
    CHECK(r.rec.streams[0].identity.name == "kmsg");
    CHECK(*find_field(r.rec.streams[0].identity.labels, "source") == "kmsg");
    auto data = r.rec.streams[0].data;
    CHECK(data.find(" INFO kernel: first\n") != std::string::npos);
    CHECK(data.find(" ERROR kernel: NVRM: Xid 79\n") != std::string::npos);
    CHECK(data.find("SUBSYSTEM") == std::string::npos);
    CHECK(r.tailer.stats().kmsg_records == 2);
    saved = r.tailer.positions();
  }
  CHECK(saved.kmsg.valid);
  CHECK(saved.kmsg.seq == 11);
  write(t / "kmsg", "4,12,3000000,-;third\n");
  {
    auto& r = start(s, &saved);
    r.step();
    REQUIRE(r.rec.streams.size() == 1);
    CHECK(r.rec.streams[0].data.find("first") == std::string::npos);
    CHECK(r.rec.streams[0].data.find(" WARNING kernel: third\n") != std::string::npos);
    CHECK(r.rec.saw("resumed kmsg @" + std::to_string(saved.kmsg.offset)));
  }
}

TEST_CASE("the inotify reader owns its descriptor, adds watches and drains every queued event") {
  TempDir t;
  InotifyReader none;
  CHECK(!none.valid());
  CHECK(none.drain([](const InotifyEvent&) {}) == 0);

  auto opened = InotifyReader::open();
  REQUIRE(opened.ok());
  InotifyReader reader = std::move(*opened);
  REQUIRE(reader.valid());
  CHECK(!opened->valid());  // moved from: owns nothing
  auto wd = reader.add_watch(t.path.string(), IN_CREATE | IN_MODIFY | IN_DELETE | IN_ONLYDIR);
  REQUIRE(wd.ok());
  auto again = reader.add_watch(t.path.string(), IN_CREATE | IN_MODIFY | IN_DELETE | IN_ONLYDIR);
  REQUIRE(again.ok());
  CHECK(*again == *wd);  // the same directory: the same watch
  auto missing = reader.add_watch(t / "missing", IN_CREATE);
  REQUIRE(!missing.ok());
  CHECK(missing.error().message.find(t / "missing") != std::string::npos);

  CHECK(reader.drain([](const InotifyEvent&) {}) == 0);  // nothing yet, and no blocking
  write(t / "a.log", "x\n");
  write(t / "b.log", "y\n");
  std::vector<std::string> created;
  std::size_t modified = 0;
  std::size_t n = reader.drain([&](const InotifyEvent& ev) {
    CHECK(ev.wd == *wd);
    if (ev.mask & IN_CREATE) created.emplace_back(ev.name);
    if (ev.mask & IN_MODIFY) ++modified;
  });
  CHECK(n == created.size() + modified);
  CHECK(created == std::vector<std::string>{"a.log", "b.log"});
  CHECK(modified >= 2);
  CHECK(reader.drain([](const InotifyEvent&) {}) == 0);  // drained

  // Moved into another holder, the descriptor stays open once and is closed once.
  int fd = reader.fd();
  InotifyReader other;
  other = std::move(reader);
  CHECK(other.fd() == fd);
  CHECK(!reader.valid());
  other.remove_watch(*wd);
  std::size_t ignored = 0;
  other.drain([&](const InotifyEvent& ev) { ignored += (ev.mask & IN_IGNORED) ? 1 : 0; });
  CHECK(ignored == 1);
}

TEST_CASE("newlines are counted as a byte-by-byte count does, at every length, alignment and density") {
  // The count keeps a byte-wide counter per lane and sums them before one can wrap: a text of nothing but newlines
  // longer than 255 lanes' worth is the case that would wrap.
  std::string text;
  for (int i = 0; i < 40000; ++i) text += (i * 7919 % 13 == 0) ? '\n' : static_cast<char>('a' + i % 26);
  text += std::string(3 * 32 * 255 + 17, '\n');
  text += std::string(100, '\xff');  // bytes with the high bit set are not newlines
  const auto slow = [](std::string_view s) { return static_cast<std::uint64_t>(std::count(s.begin(), s.end(), '\n')); };
  for (std::size_t from : {0, 1, 3, 31, 32, 33}) {
    for (std::size_t size : {0, 1, 31, 32, 33, 255, 8160, 8161, 40000, 65536}) {
      const std::string_view piece = std::string_view(text).substr(from, size);
      INFO("from " << from << ", " << piece.size() << " bytes");
      CHECK(tail::count_newlines(piece) == slow(piece));
    }
  }
  const std::string_view all_newlines = std::string_view(text).substr(40000, 3 * 32 * 255 + 17);
  CHECK(tail::count_newlines(all_newlines) == all_newlines.size());
  CHECK(tail::count_newlines(text) == slow(text));
}
