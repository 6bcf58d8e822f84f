// tail: path layouts, globs, kmsg records, checkpoints, and the Tailer driven step by step with a manual clock.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "faultline/checkpoint.hpp"
#include "faultline/tail.hpp"

using namespace faultline;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/faultline-tail-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write(const std::string& path, const std::string& text, bool append = true) {
  std::ofstream out(path, append ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
  out << text;
}

// Stands in for the pipeline: records what the Tailer says, and commits like a decoder (up to the last newline).
struct Recorder : TailHandler {
  struct Stream {
    StreamIdentity identity;
    ContainerFormat format{};
    std::string data;  // everything fed
    std::uint64_t base = 0;     // file offset where the current file's bytes started
    std::uint64_t fed = 0;      // bytes of the current file fed
    std::uint64_t committed = 0;
    std::uint64_t line = 1;
    int idles = 0;
    bool ended = false;
  };
  std::vector<Stream> streams;
  std::vector<std::string> events;

  std::uint32_t open_stream(const StreamIdentity& identity, ContainerFormat format) override {
    streams.push_back(Stream{identity, format});
    events.push_back("open " + identity.name);
    return static_cast<std::uint32_t>(streams.size() - 1);
  }
  void begin_file(std::uint32_t s, FileStart how, const StreamIdentity& identity, std::uint64_t offset,
                  std::uint64_t line) override {
    auto& st = streams[s];
    st.identity = identity;
    st.base = offset;
    st.fed = 0;
    st.committed = offset;
    st.line = line;
    events.push_back(std::string(to_string(how)) + " " + identity.name + " @" + std::to_string(offset) + " L" +
                     std::to_string(line) + " i=" + identity.instance);
  }
  void data(std::uint32_t s, std::string_view bytes, Time) override {
    auto& st = streams[s];
    st.data.append(bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] == '\n') {
        st.committed = st.base + st.fed + i + 1;
        ++st.line;
      }
    }
    st.fed += bytes.size();
  }
  void idle(std::uint32_t s, Time) override { ++streams[s].idles; }
  void end_of_stream(std::uint32_t s, Time) override { streams[s].ended = true; }
  Committed committed(std::uint32_t s) override { return Committed{streams[s].committed, streams[s].line}; }

  const Stream* find(const std::string& name) const {
    for (const auto& s : streams)
      if (s.identity.name == name) return &s;
    return nullptr;
  }
  std::string data_of(const std::string& name) const {
    auto* s = find(name);
    return s ? s->data : "";
  }
  bool saw(const std::string& prefix) const {
    for (const auto& e : events)
      if (e.rfind(prefix, 0) == 0) return true;
    return false;
  }
};

TailOptions options() {
  TailOptions o;
  o.rescan_interval = std::chrono::seconds(1);
  o.rotate_wait = std::chrono::milliseconds(500);
  o.partial_timeout = std::chrono::seconds(2);
  o.node_name = "node-a";
  return o;
}

// One rescan period passes; polls until the Tailer has nothing more to do now.
void step(Tailer& t, ManualClock& clock, Duration d = std::chrono::milliseconds(1100)) {
  clock.advance(d);
  for (int i = 0; i < 1000 && t.poll_once(); ++i) {
  }
}

SourceSpec files(const std::string& glob, StartAt start = StartAt::beginning) {
  SourceSpec s;
  s.paths = {glob};
  s.start_at = start;
  return s;
}

std::string lines(int from, int to, const std::string& tag = "line") {
  std::string out;
  for (int i = from; i <= to; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

}  // namespace

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
  CHECK(back->written == c.written);

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
}

TEST_CASE("a file is read from the beginning, then followed as it grows") {
  TempDir t;
  write(t / "app.log", lines(1, 3));
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 3));
  CHECK(rec.saw("first " + t / "app.log" + " @0 L1"));
  write(t / "app.log", lines(4, 5));
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 5));
  const auto* s = rec.find(t / "app.log");
  CHECK(*find_field(s->identity.labels, "node") == "node-a");
  CHECK(*find_field(s->identity.labels, "source") == "file");
  CHECK(tailer.stats().watched_files == 1);
}

TEST_CASE("start_at end skips what existing files hold at the first start only") {
  TempDir t;
  write(t / "old.log", lines(1, 3));
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "*.log", StartAt::end));
  tailer.restore(nullptr);
  step(tailer, clock);
  CHECK(rec.data_of(t / "old.log").empty());
  CHECK(rec.saw("first " + t / "old.log" + " @" + std::to_string(lines(1, 3).size()) + " L4"));
  write(t / "old.log", lines(4, 4));
  write(t / "new.log", lines(1, 2, "new"));  // appears later: read whole
  step(tailer, clock);
  CHECK(rec.data_of(t / "old.log") == lines(4, 4));
  CHECK(rec.data_of(t / "new.log") == lines(1, 2, "new"));
}

TEST_CASE("rename rotation: the old file is finished before the new one starts") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 2));
  step(tailer, clock);
  // Rotate: the writer still adds to the renamed file, then moves to a new one.
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log.1", lines(3, 4));
  write(t / "app.log", lines(5, 6));
  step(tailer, clock, std::chrono::milliseconds(1100));  // sees both; the old one is read to its end
  step(tailer, clock, std::chrono::milliseconds(600));   // rotate_wait passed: moves on
  CHECK(rec.data_of(t / "app.log") == lines(1, 6));
  CHECK(rec.saw("rotated " + t / "app.log" + " @0 L1"));
  CHECK(tailer.stats().rotations == 1);
  // The old file is finished: growing it later is counted, not read.
  write(t / "app.log.1", "late\n");
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 6));
}

TEST_CASE("copytruncate: a file shorter than the offset is read again from 0, and counted") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 5));
  step(tailer, clock);
  ::truncate((t / "app.log").c_str(), 0);
  write(t / "app.log", lines(6, 6));
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 6));
  CHECK(rec.saw("truncated " + t / "app.log" + " @0 L1"));
  CHECK(tailer.stats().truncations == 1);
}

TEST_CASE("copytruncate refilled past the old offset is told by the fingerprint") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 3, "old"));
  step(tailer, clock);
  write(t / "app.log", lines(1, 20, "new"), false);  // truncated and refilled before the next look
  step(tailer, clock);
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 3, "old") + lines(1, 20, "new"));
  CHECK(tailer.stats().truncations == 1);
}

TEST_CASE("a deleted file is read to its end and closed; a recreated one continues the stream") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 2));
  step(tailer, clock);
  {
    std::ofstream out(t / "app.log", std::ios::app);
    fs::remove(t / "app.log");
    out << lines(3, 4);  // written after the unlink, through the open file
  }
  step(tailer, clock);
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 4));
  CHECK(tailer.stats().deleted == 1);
  CHECK(tailer.stats().watched_files == 0);
  write(t / "app.log", lines(5, 5));
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(1, 5));
  CHECK(rec.saw("rotated " + t / "app.log" + " @0"));
}

TEST_CASE("a partial last line: idle after the partial-line timeout, not before") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", "no newline yet");
  step(tailer, clock);
  const auto* s = rec.find(t / "app.log");
  REQUIRE(s);
  CHECK(s->idles == 0);
  CHECK(tailer.next_timeout() <= std::chrono::milliseconds(2001));
  clock.advance(std::chrono::milliseconds(1500));
  tailer.poll_once();
  CHECK(s->idles == 0);
  clock.advance(std::chrono::milliseconds(600));
  tailer.poll_once();
  CHECK(s->idles == 1);
  clock.advance(std::chrono::seconds(5));
  tailer.poll_once();
  CHECK(s->idles == 1);  // once per burst
}

TEST_CASE("reading is bounded per poll and fair") {
  TempDir t;
  std::string big(3 * 1024 * 1024, 'x');
  big += "\n";
  write(t / "a.log", big);
  write(t / "b.log", big);
  TailOptions o = options();
  o.read_chunk_bytes = 64 * 1024;
  o.max_bytes_per_poll = 256 * 1024;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(o, clock, rec);
  tailer.add_source(files(t / "*.log"));
  tailer.restore(nullptr);
  clock.advance(std::chrono::seconds(2));
  CHECK(tailer.poll_once());  // more to read
  auto a = rec.data_of(t / "a.log").size(), b = rec.data_of(t / "b.log").size();
  CHECK(a + b <= 256 * 1024);
  CHECK(a > 0);
  CHECK(b > 0);
  int polls = 1;
  while (tailer.poll_once()) ++polls;
  CHECK(polls >= 20);
  CHECK(rec.data_of(t / "a.log").size() == big.size());
  CHECK(rec.data_of(t / "b.log").size() == big.size());
}

TEST_CASE("positions resume after a restart; a reused inode starts over; finished files stay finished") {
  TempDir t;
  TailPositions saved;
  write(t / "app.log", lines(1, 3) + "partial");
  write(t / "done.log", lines(1, 2, "done"));
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log"));
    tailer.restore(nullptr);
    step(tailer, clock);
    saved = tailer.positions();
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
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log", StartAt::end));  // start_at applies to the first start only
    tailer.restore(&saved);
    step(tailer, clock);
    CHECK(rec.data_of(t / "app.log") == "partial now complete\n" + lines(5, 5));
    CHECK(rec.saw("resumed " + t / "app.log" + " @" + std::to_string(lines(1, 3).size()) + " L4"));
  }
  // Another file with the same inode number (fingerprint differs): read from the start.
  TailPositions reused = saved;
  reused.files[0].fingerprint.hash ^= 1;
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log"));
    tailer.restore(&reused);
    step(tailer, clock);
    CHECK(rec.saw("first " + t / "app.log" + " @0 L1"));
  }
  // Truncated while stopped: from 0, counted.
  TailPositions beyond = saved;
  beyond.files[0].offset = 1 << 20;
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log"));
    tailer.restore(&beyond);
    step(tailer, clock);
    CHECK(tailer.stats().truncations == 1);
    CHECK(rec.saw("truncated " + t / "app.log" + " @0 L1"));
  }
  // A file that went away while stopped: its unread bytes are counted.
  TailPositions gone = saved;
  gone.files[0].inode += 1000000;
  gone.files[0].size = gone.files[0].offset + 100;
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log"));
    tailer.restore(&gone);
    step(tailer, clock);
    CHECK(tailer.stats().rotated_unread_bytes == 100);
  }
}

TEST_CASE("Kubernetes pod logs: names, labels, a new restart is a new instance, faultline's own pod is skipped") {
  TempDir t;
  std::string pod = t / "pods/ml_vllm-0_uid-1/vllm";
  std::string self = t / "pods/monitoring_faultline-abcde_uid-2/faultline";
  fs::create_directories(pod);
  fs::create_directories(self);
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "pods/*/*/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  write(pod + "/0.log", "2026-11-30T10:00:00Z stdout F a\n");
  write(self + "/0.log", "2026-11-30T10:00:00Z stdout F self\n");
  step(tailer, clock);
  const auto* s = rec.find("ml/vllm-0/vllm");
  REQUIRE(s);
  CHECK(s->format == ContainerFormat::cri);
  CHECK(s->identity.logical == "ml/vllm-0/vllm");
  CHECK(s->identity.instance == "0");
  CHECK(*find_field(s->identity.labels, "namespace") == "ml");
  CHECK(*find_field(s->identity.labels, "pod") == "vllm-0");
  CHECK(*find_field(s->identity.labels, "container") == "vllm");
  CHECK(*find_field(s->identity.labels, "restart") == "0");
  CHECK(!rec.find("monitoring/faultline-abcde/faultline"));
  // The container restarts.
  write(pod + "/1.log", "2026-11-30T10:01:00Z stdout F b\n");
  step(tailer, clock);
  step(tailer, clock);
  CHECK(rec.saw("new_instance ml/vllm-0/vllm @0 L1 i=1"));
  CHECK(*find_field(s->identity.labels, "restart") == "1");
  CHECK(s->data == "2026-11-30T10:00:00Z stdout F a\n2026-11-30T10:01:00Z stdout F b\n");
}

TEST_CASE("restart files found together are read in restart order") {
  TempDir t;
  std::string pod = t / "pods/ml_p_uid/c";
  fs::create_directories(pod);
  write(pod + "/10.log", "ten\n");
  write(pod + "/9.log", "nine\n");
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "pods/*/*/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);
  CHECK(rec.data_of("ml/p/c") == "nine\nten\n");
}

TEST_CASE("symlinks are followed; the same file under two names is read once") {
  TempDir t;
  fs::create_directories(t.path / "pods/ns_p_uid/c");
  fs::create_directories(t.path / "containers");
  write(t / "pods/ns_p_uid/c/0.log", "2026-11-30T10:00:00Z stdout F x\n");
  fs::create_symlink(t / "pods/ns_p_uid/c/0.log", t / ("containers/p_ns_c-" + std::string(64, 'a') + ".log"));
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "containers/*.log"));
  tailer.add_source(files(t / "pods/*/*/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  REQUIRE(rec.streams.size() == 1);
  CHECK(rec.streams[0].identity.name == "ns/p/c");
  CHECK(*find_field(rec.streams[0].identity.labels, "restart") == "0");  // from the link's target
  CHECK(rec.streams[0].data == "2026-11-30T10:00:00Z stdout F x\n");
}

TEST_CASE("exclude globs and stream names from a template") {
  TempDir t;
  write(t / "a.log", "a\n");
  write(t / "b.log", "b\n");
  SourceSpec s = files(t / "*.log");
  s.exclude = {"*/b.log"};
  s.name = "svc/{stem}";
  s.source = "apps";
  s.labels = {{"cluster", "c1"}};
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(s);
  tailer.restore(nullptr);
  step(tailer, clock);
  REQUIRE(rec.streams.size() == 1);
  CHECK(rec.streams[0].identity.name == "svc/a");
  CHECK(*find_field(rec.streams[0].identity.labels, "source") == "apps");
  CHECK(*find_field(rec.streams[0].identity.labels, "cluster") == "c1");
}

TEST_CASE("unreadable files are counted and skipped") {
  if (::geteuid() == 0) {
    SUCCEED("root reads everything");
    return;
  }
  TempDir t;
  write(t / "secret.log", "x\n");
  ::chmod((t / "secret.log").c_str(), 0);
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  CHECK(tailer.stats().unreadable >= 1);
  CHECK(rec.streams.empty());
}

TEST_CASE("kmsg-format records from a file become timed lines; a restart skips what was processed") {
  TempDir t;
  write(t / "kmsg", "6,10,1000000,-;first\n SUBSYSTEM=x\n3,11,2000000,-;NVRM: Xid 79\n");
  SourceSpec s;
  s.kind = SourceKind::kmsg;
  s.paths = {t / "kmsg"};
  s.start_at = StartAt::beginning;
  TailPositions saved;
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(s);
    tailer.restore(nullptr);
    step(tailer, clock);
    REQUIRE(rec.streams.size() == 1);
    CHECK(rec.streams[0].identity.name == "kmsg");
    CHECK(*find_field(rec.streams[0].identity.labels, "source") == "kmsg");
    auto data = rec.streams[0].data;
    CHECK(data.find(" INFO kernel: first\n") != std::string::npos);
    CHECK(data.find(" ERROR kernel: NVRM: Xid 79\n") != std::string::npos);
    CHECK(data.find("SUBSYSTEM") == std::string::npos);
    CHECK(tailer.stats().kmsg_records == 2);
    saved = tailer.positions();
  }
  CHECK(saved.kmsg.valid);
  CHECK(saved.kmsg.seq == 11);
  write(t / "kmsg", "4,12,3000000,-;third\n");
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(s);
    tailer.restore(&saved);
    step(tailer, clock);
    REQUIRE(rec.streams.size() == 1);
    CHECK(rec.streams[0].data.find("first") == std::string::npos);
    CHECK(rec.streams[0].data.find(" WARNING kernel: third\n") != std::string::npos);
    CHECK(rec.saw("resumed kmsg @" + std::to_string(saved.kmsg.offset)));
  }
}

// While inotify covers every directory, the periodic check stats only what an event named (or what inotify cannot
// vouch for); the full rescan runs on directory events and every covered_rescan_interval. Without inotify, every
// rescan_interval, as before.
TEST_CASE("idle with inotify: no full rescan until a directory changes or covered_rescan_interval passes") {
  TempDir t;
  write(t / "a.log", "a\n");
  TailOptions covered = options();
  covered.covered_rescan_interval = std::chrono::seconds(10);
  ManualClock clock;
  Recorder rec;
  Tailer tailer(covered, clock, rec);
  tailer.add_source(files(t / "*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);  // the look again after the first watches were added
  auto base = tailer.stats().rescans;
  for (int i = 0; i < 5; ++i) step(tailer, clock);
  CHECK(tailer.stats().rescans == base);
  write(t / "a.log", "more\n");  // a write: an event, read at once, no rescan
  clock.advance(std::chrono::milliseconds(10));
  while (tailer.poll_once()) {
  }
  CHECK(rec.data_of(t / "a.log") == "a\nmore\n");
  step(tailer, clock);
  CHECK(tailer.stats().rescans == base);
  write(t / "b.log", "b\n");  // a new file: a directory event, a rescan at once
  clock.advance(std::chrono::milliseconds(10));
  while (tailer.poll_once()) {
  }
  CHECK(rec.data_of(t / "b.log") == "b\n");
  CHECK(tailer.stats().rescans == base + 1);
  for (int i = 0; i < 10; ++i) step(tailer, clock);  // 11 s: the periodic full rescan ran
  CHECK(tailer.stats().rescans == base + 2);

  TailOptions o = options();
  o.use_inotify = false;
  ManualClock clock2;
  Recorder rec2;
  Tailer polling(o, clock2, rec2);
  polling.add_source(files(t / "*.log"));
  polling.restore(nullptr);
  step(polling, clock2);
  auto base2 = polling.stats().rescans;
  for (int i = 0; i < 5; ++i) step(polling, clock2);
  CHECK(polling.stats().rescans == base2 + 5);
}

TEST_CASE("copytruncate refilled past the old offset between two idle checks is told by the fingerprint") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 3, "old"));
  step(tailer, clock);
  step(tailer, clock);
  auto base = tailer.stats().rescans;
  write(t / "app.log", lines(1, 20, "new"), false);
  step(tailer, clock);
  step(tailer, clock);
  CHECK(tailer.stats().rescans == base);  // found by the check of the file an event named
  CHECK(rec.data_of(t / "app.log") == lines(1, 3, "old") + lines(1, 20, "new"));
  CHECK(tailer.stats().truncations == 1);
}

TEST_CASE("a file rotated away without a successor is still followed between rescans") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log"));
  tailer.restore(nullptr);
  write(t / "app.log", lines(1, 2));
  step(tailer, clock);
  step(tailer, clock);
  fs::rename(t / "app.log", t / "app.log.1");  // a directory event: the rescan sees it rotated away
  step(tailer, clock);
  auto base = tailer.stats().rescans;
  write(t / "app.log.1", lines(3, 4));  // its events carry a name no glob matches
  step(tailer, clock);
  CHECK(tailer.stats().rescans == base);
  CHECK(rec.data_of(t / "app.log") == lines(1, 4));
}

TEST_CASE("a file written through a hard link in an unwatched directory is still read") {
  TempDir t;
  fs::create_directories(t.path / "logs");
  fs::create_directories(t.path / "elsewhere");
  write(t / "logs/app.log", lines(1, 1));
  fs::create_hard_link(t / "logs/app.log", t / "elsewhere/app.log");
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "logs/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);
  write(t / "elsewhere/app.log", lines(2, 3));  // the event goes to `elsewhere`, which is not watched
  step(tailer, clock);
  CHECK(rec.data_of(t / "logs/app.log") == lines(1, 3));
}

TEST_CASE("a watched directory moved away and created again: new files in the new one are found") {
  TempDir t;
  fs::create_directories(t.path / "logs");
  write(t / "logs/a.log", "a\n");
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "logs/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);
  fs::rename(t / "logs", t / "logs.old");
  fs::create_directories(t.path / "logs");
  step(tailer, clock);
  step(tailer, clock);
  write(t / "logs/b.log", "b\n");
  step(tailer, clock);
  CHECK(rec.data_of(t / "logs/b.log") == "b\n");
}

TEST_CASE("a directory reached through a symlink keeps the periodic rescan: retargeting the link is seen") {
  TempDir t;
  fs::create_directories(t.path / "v1");  // empty: only the glob's directory is watched
  fs::create_directories(t.path / "v2");
  fs::create_directory_symlink(t / "v1", t / "current");
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "current/*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);
  write(t / "v2/b.log", "b\n");
  fs::remove(t / "current");
  fs::create_directory_symlink(t / "v2", t / "current");  // no event in any watched directory
  step(tailer, clock);
  CHECK(rec.data_of(t / "current/b.log") == "b\n");
}

TEST_CASE("a directory a glob names literally appears later: found at the next rescan") {
  TempDir t;
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "pods/*/*.log"));  // `pods` is missing: nothing inotify could watch announces it
  tailer.restore(nullptr);
  step(tailer, clock);
  step(tailer, clock);
  fs::create_directories(t.path / "pods/p");
  write(t / "pods/p/a.log", "a\n");
  step(tailer, clock);
  CHECK(rec.data_of(t / "pods/p/a.log") == "a\n");
}

TEST_CASE("idle: next_timeout waits until the next rescan") {
  TempDir t;
  write(t / "a.log", "a\n");
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "*.log"));
  tailer.restore(nullptr);
  step(tailer, clock);
  clock.advance(std::chrono::seconds(3));  // past the partial timeout
  tailer.poll_once();
  auto timeout = tailer.next_timeout();
  CHECK(timeout > std::chrono::milliseconds(500));
  CHECK(timeout <= std::chrono::milliseconds(1001));
  CHECK(!tailer.poll_once());
}

TEST_CASE("raise_open_files_limit reaches the hard limit") {
  auto n = raise_open_files_limit();
  struct rlimit rl;
  ::getrlimit(RLIMIT_NOFILE, &rl);
  CHECK(n == rl.rlim_cur);
  CHECK(rl.rlim_cur == rl.rlim_max);
}

TEST_CASE("a file rotated while stopped keeps its stream: finished first, then the new file") {
  TempDir t;
  write(t / "app.log", lines(1, 3));
  TailPositions saved;
  {
    ManualClock clock;
    Recorder rec;
    Tailer tailer(options(), clock, rec);
    tailer.add_source(files(t / "app.log*"));
    tailer.restore(nullptr);
    step(tailer, clock);
    saved = tailer.positions();
  }
  write(t / "app.log", lines(4, 4));
  fs::rename(t / "app.log", t / "app.log.1");
  write(t / "app.log", lines(5, 5));
  ManualClock clock;
  Recorder rec;
  Tailer tailer(options(), clock, rec);
  tailer.add_source(files(t / "app.log*"));
  tailer.restore(&saved);
  step(tailer, clock);
  step(tailer, clock);
  CHECK(rec.data_of(t / "app.log") == lines(4, 5));
  CHECK(!rec.find(t / "app.log.1"));
  // Restarted again: nothing is read twice.
  auto again = tailer.positions();
  ManualClock clock2;
  Recorder rec2;
  Tailer tailer2(options(), clock2, rec2);
  tailer2.add_source(files(t / "app.log*"));
  tailer2.restore(&again);
  step(tailer2, clock2);
  step(tailer2, clock2);
  CHECK(rec2.data_of(t / "app.log").empty());
  CHECK(rec2.data_of(t / "app.log.1").empty());
}
