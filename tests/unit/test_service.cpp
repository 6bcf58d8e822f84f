// service: the whole daemon in-process — real files in a temp dir, the real tailer, pipeline, journal, checkpoints
// and outputs — driven by explicit steps on a ManualClock. Nothing sleeps: the tailer checks files when the clock
// says a rescan is due, and a reload is awaited by joining its compile.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "faultline/checkpoint.hpp"
#include "faultline/metrics.hpp"
#include "faultline/service.hpp"
#include "faultline/sinks.hpp"

using namespace faultline;
namespace fs = std::filesystem;

namespace {

constexpr const char* kEveryLine = R"(id: every-line
title: "line {n}"
severity: warning
events:
  line:
    regex: 'LINE (?P<n>\d+)'
key: [stream, "field:n"]
)";

constexpr const char* kBeta = R"(id: beta-line
title: "beta {n}"
severity: critical
events:
  beta:
    regex: 'BETA (?P<n>\d+)'
key: [stream, "field:n"]
)";

constexpr const char* kBroken = R"(id: broken-rule
title: broken
severity: sometimes
events:
  bad:
    regex: 'unclosed ( group'
)";

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/faultline-service-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A daemon over <dir>/logs/app.log with the rules in <dir>/rules, its state in <dir>/state, incidents as JSON lines
// in <dir>/out.jsonl, no HTTP server.
struct Daemon {
  TempDir dir;
  ManualClock clock;
  std::string log = dir / "logs/app.log";
  std::string out = dir / "out.jsonl";

  Daemon() {
    fs::create_directories(dir / "logs");
    fs::create_directories(dir / "rules");
    write(dir / "rules/every.yaml", kEveryLine);
    write(log, "");
  }

  Config config() const {
    Config c = default_config();
    c.sources.clear();
    SourceSpec s;
    s.paths = {log};
    s.source = "app";
    s.format = ContainerFormat::raw;
    s.start_at = StartAt::beginning;
    c.sources.push_back(s);
    c.rules.paths = {dir / "rules"};
    c.rules.watch = false;
    c.state_dir = dir / "state";
    c.listen.clear();
    c.output = out;
    c.node_name = "node-1";
    c.tail.use_inotify = false;  // the clock alone says when files are looked at
    c.checkpoint_interval = std::chrono::seconds(5);
    return c;
  }

  std::unique_ptr<Service> start() {
    auto s = std::make_unique<Service>(ServiceOptions{config(), &clock});
    auto started = s->start();
    INFO((started ? std::string() : started.error().message));
    REQUIRE(started);
    return s;
  }

  // Steps the service through `d` of clock time, 100 ms at a time (and at once while it has more ready).
  void run(Service& s, Duration d) {
    for (Duration t{}; t < d; t += std::chrono::milliseconds(100)) {
      clock.advance(std::chrono::milliseconds(100));
      while (s.step().more) {
      }
    }
  }

  // Steps until `done` holds (at most `max` of clock time); returns whether it does.
  template <class Pred>
  bool run_until(Service& s, Pred done, Duration max = std::chrono::seconds(30)) {
    for (Duration t{}; t < max && !done(); t += std::chrono::milliseconds(100)) run(s, std::chrono::milliseconds(100));
    return done();
  }

  // (n, revision) of every-line incidents written to the output, in order.
  std::vector<std::pair<std::string, int>> emitted(const std::string& rule = "every-line") const {
    std::vector<std::pair<std::string, int>> got;
    std::istringstream in(slurp(out));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      if (j["rule"] == rule) got.emplace_back(j["fields"]["n"].get<std::string>(), j["revision"].get<int>());
    }
    return got;
  }
};

std::set<std::string> numbers(const std::vector<std::pair<std::string, int>>& incidents) {
  std::set<std::string> n;
  for (const auto& [num, rev] : incidents) n.insert(num);
  return n;
}

}  // namespace

TEST_CASE("start-up is a list of named steps, in order", "[service]") {
  auto steps = Service::start_steps();
  REQUIRE(steps.size() >= 5);
  CHECK(steps.front() == "rules");
  auto pos = [&](std::string_view name) { return std::find(steps.begin(), steps.end(), name) - steps.begin(); };
  CHECK(pos("state dir") < pos("outputs"));
  CHECK(pos("outputs") < pos("journal"));
  CHECK(pos("checkpoint") < pos("pipeline"));
  CHECK(pos("pipeline") < pos("sources"));
  CHECK(pos("loop") == static_cast<std::ptrdiff_t>(steps.size()) - 1);
}

TEST_CASE("a failing start-up step is named in the error", "[service]") {
  Daemon d;
  SECTION("broken rules") {
    write(d.dir / "rules/broken.yaml", kBroken);
    Service s(ServiceOptions{d.config(), &d.clock});
    auto started = s.start();
    REQUIRE_FALSE(started);
    CHECK(started.error().message.rfind("rules: ", 0) == 0);
    CHECK(started.error().message.find("error(s) in the rules") != std::string::npos);
  }
  SECTION("the state dir is taken by another daemon") {
    auto first = d.start();
    Service second(ServiceOptions{d.config(), &d.clock});
    auto started = second.start();
    REQUIRE_FALSE(started);
    CHECK(started.error().message == "state dir: another faultline uses the state dir " + d.config().state_dir);
    first->stop(Duration{0});
  }
}

TEST_CASE("lines appended to a followed file become incidents, checkpointed; a restart emits no revision twice",
          "[service]") {
  Daemon d;
  {
    auto s = d.start();
    write(d.log, "LINE 1 first\n");
    d.run(*s, std::chrono::seconds(2));
    CHECK(numbers(d.emitted()) == std::set<std::string>{"1"});
    // The periodic checkpoint: the offset after line 1 and the correlator's state.
    CHECK(d.run_until(*s, [&] { return s->checkpoints_written() == 1; }));
    CHECK(fs::exists(d.dir / "state/checkpoint.json"));

    // Line 2 is emitted after the checkpoint — then the daemon dies before the next one.
    write(d.log, "LINE 2 after the checkpoint\n");
    d.run(*s, std::chrono::seconds(2));
    CHECK(numbers(d.emitted()) == std::set<std::string>{"1", "2"});
    CHECK(slurp(d.dir / "state/emitted.log").find(" 1\n") != std::string::npos);
  }  // destroyed without stop(): a crash, no final checkpoint

  auto s = d.start();
  d.run(*s, std::chrono::seconds(2));
  // Line 2 was read again from the checkpoint's offset and gave the same revision: the journal held it back.
  CHECK(s->suppressed_duplicates() == 1);
  write(d.log, "LINE 3 after the restart\n");
  d.run(*s, std::chrono::seconds(2));
  s->stop(Duration{0});

  auto got = d.emitted();
  CHECK(numbers(got) == std::set<std::string>{"1", "2", "3"});
  std::set<std::pair<std::string, int>> unique(got.begin(), got.end());
  CHECK(unique.size() == got.size());
}

TEST_CASE("a revision written to the output file but not journalled before a crash is not written again",
          "[service]") {
  Daemon d;
  {
    auto s = d.start();
    write(d.log, "LINE 1 first\n");
    d.run(*s, std::chrono::seconds(2));
    CHECK(d.run_until(*s, [&] { return s->checkpoints_written() == 1; }));
    write(d.log, "LINE 2 after the checkpoint\n");
    d.run(*s, std::chrono::seconds(2));
    CHECK(numbers(d.emitted()) == std::set<std::string>{"1", "2"});
  }  // a crash
  // It came between the output's write and the journal's: the journal keeps only its mark (the output's size at
  // the checkpoint), not line 2's revision.
  std::string kept;
  {
    std::istringstream in(slurp(d.dir / "state/emitted.log"));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("@output ", 0) == 0) kept += line + "\n";
  }
  CHECK_FALSE(kept.empty());
  std::ofstream(d.dir / "state/emitted.log", std::ios::trunc) << kept;

  auto s = d.start();
  d.run(*s, std::chrono::seconds(2));
  CHECK(s->suppressed_duplicates() == 1);  // read again from the checkpoint, found in the output file
  s->stop(Duration{0});
  auto got = d.emitted();
  std::set<std::pair<std::string, int>> unique(got.begin(), got.end());
  CHECK(unique.size() == got.size());
  CHECK(numbers(got) == std::set<std::string>{"1", "2"});
}

TEST_CASE("a reload with a broken rule file keeps the old rules; a good one swaps every room at once", "[service]") {
  Daemon d;
  auto s = d.start();
  write(d.log, "LINE 1 before\n");
  d.run(*s, std::chrono::seconds(2));
  REQUIRE(numbers(d.emitted()) == std::set<std::string>{"1"});

  write(d.dir / "rules/broken.yaml", kBroken);
  s->request_reload("test");
  s->await_reload();
  d.run(*s, std::chrono::milliseconds(100));
  auto text = s->metrics().serialize();
  CHECK(text.find("faultline_reloads_total{result=\"failure\"} 1") != std::string::npos);
  CHECK(text.find("faultline_rules_loaded 1") != std::string::npos);
  write(d.log, "LINE 2 after the rejected reload\n");
  d.run(*s, std::chrono::seconds(2));
  CHECK(numbers(d.emitted()) == std::set<std::string>{"1", "2"});

  fs::remove(d.dir / "rules/broken.yaml");
  write(d.dir / "rules/beta.yaml", kBeta);
  s->request_reload("test");
  s->await_reload();
  d.run(*s, std::chrono::milliseconds(100));
  write(d.log, "LINE 3 BETA 3 both rules\n");
  d.run(*s, std::chrono::seconds(2));
  CHECK(numbers(d.emitted()) == std::set<std::string>{"1", "2", "3"});
  CHECK(numbers(d.emitted("beta-line")) == std::set<std::string>{"3"});
  text = s->metrics().serialize();
  CHECK(text.find("faultline_reloads_total{result=\"success\"} 2") != std::string::npos);  // the start, the reload
  CHECK(text.find("faultline_rules_loaded 2") != std::string::npos);
  CHECK(text.find("faultline_event_matches_total{event=\"beta\",rule=\"beta-line\"} 1") != std::string::npos);
  s->stop(Duration{0});
}

TEST_CASE("stop drains: what was read is checkpointed at the file's end and handed to the incident store",
          "[service]") {
  Daemon d;
  auto s = d.start();
  write(d.log, "LINE 7 just before the stop\nLINE 8 too\n");
  d.run(*s, std::chrono::milliseconds(1100));
  s->stop(std::chrono::seconds(5));

  CHECK(numbers(d.emitted()) == std::set<std::string>{"7", "8"});
  auto read = read_checkpoint(d.dir / "state");
  REQUIRE(read);
  REQUIRE(read->has_value());
  REQUIRE((*read)->positions.files.size() == 1);
  CHECK((*read)->positions.files[0].offset == fs::file_size(d.log));
  CHECK((*read)->positions.files[0].line == 3);
  // The emitted journal holds no revision again (everything before the checkpoint is covered by it), only the output
  // file's size at the checkpoint.
  CHECK(slurp(d.dir / "state/emitted.log") == "@output " + std::to_string(fs::file_size(d.out)) + "\n");
  // The outputs took both revisions into the API's store (state/incidents.jsonl).
  std::string store = slurp(d.dir / "state/incidents.jsonl");
  CHECK(store.find("\"line 7\"") != std::string::npos);
  CHECK(store.find("\"line 8\"") != std::string::npos);
}

TEST_CASE("the source metrics are read from the rooms' counts", "[service]") {
  Daemon d;
  auto s = d.start();
  // From the start every configured source has its series.
  CHECK(s->metrics().serialize().find("faultline_lines_read_total{source=\"app\"} 0") != std::string::npos);
  write(d.log, "LINE 1 a\nLINE 2 b\nno match\n");
  d.run(*s, std::chrono::seconds(2));
  auto text = s->metrics().serialize();
  CHECK(text.find("faultline_lines_read_total{source=\"app\"} 3") != std::string::npos);
  CHECK(text.find("faultline_bytes_read_total{source=\"app\"} 27") != std::string::npos);
  CHECK(text.find("faultline_source_lag_bytes{source=\"app\"} 0") != std::string::npos);
  CHECK(text.find("faultline_event_matches_total{event=\"line\",rule=\"every-line\"} 2") != std::string::npos);
  s->stop(Duration{0});
}

TEST_CASE("the state dir holds what the service names in it", "[service]") {
  Daemon d;
  Config c = d.config();
  std::string error;
  auto sink = sink_from_url("http://127.0.0.1:9/hook", WebhookFormat::json, "hook", &error);
  REQUIRE(sink);
  c.sinks.push_back(*sink);
  Service s(ServiceOptions{c, &d.clock});
  REQUIRE(s.start());
  write(d.log, "LINE 1 one\n");
  d.run(s, std::chrono::milliseconds(1100));
  s.stop(Duration{0});
  // daemon/service/state_dir.hpp (StateLayout) names these; the checkpoint and the outputs must agree with it.
  for (const char* name : {"lock", "checkpoint.json", "emitted.log", "incidents.jsonl", "spool/hook", "cache"}) {
    INFO(name);
    CHECK(fs::exists(d.dir / (std::string("state/") + name)));
  }
}
