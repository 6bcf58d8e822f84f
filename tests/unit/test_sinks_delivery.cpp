// sinks: delivery through the Dispatcher to loopback receivers — signing, deduplication, retries, isolation of a dead
// sink, pending deliveries across a restart, Alertmanager re-sends and resolution, backpressure. Wall time comes from
// a ManualClock; the tests wait on conditions (a request received, a spool emptied, Dispatcher::flush), never for a
// fixed time.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/sinks.hpp"
#include "net_util.h"
#include "sinks_support.hpp"

using namespace faultline;
using namespace sinkstest;

namespace {

// Polls a condition that another thread makes true (a receiver thread, the io thread).
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

bool spool_empty(const std::string& dir) { return fs::exists(dir) && fs::is_empty(dir); }

SinkConfig sink(const std::string& name, const std::string& url) {
  SinkConfig s;
  s.name = name;
  s.url = url;
  s.backoff_initial = std::chrono::milliseconds(20);
  s.backoff_max = std::chrono::milliseconds(100);
  s.timeout = std::chrono::seconds(2);
  return s;
}

// The delivery side of the daemon over one state dir, as `faultline run` wires it.
struct Rig {
  explicit Rig(std::string dir, DispatcherOptions options = {}, IncidentStoreLimits limits = {})
      : state(std::move(dir)),
        store(limits, state + "/incidents.jsonl"),
        dispatcher(std::move(options), io, metrics, store) {}
  ~Rig() { stop(Duration::zero()); }

  void start(const std::vector<SinkConfig>& sinks) {
    REQUIRE(store.open());
    WebhookContext ctx{io, metrics, clock, state + "/spool", "http://faultline:9464", "test", &store, 1000};
    for (const auto& s : sinks) {
      auto made = make_webhook_sink(s, ctx);
      REQUIRE(made);
      dispatcher.add(std::move(*made));
    }
    REQUIRE(dispatcher.start());
    io.start();
  }
  void stop(Duration grace) {
    dispatcher.stop(grace);
    io.stop();
  }
  std::string spool(const std::string& sink) const { return state + "/spool/" + sink; }

  std::string state;
  ManualClock clock;
  Metrics metrics;
  IoThread io;
  IncidentStore store;
  Dispatcher dispatcher;
};

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Deliveries in a spool directory (a file holds one batch of them).
std::size_t spooled(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".json") n += nlohmann::json::parse(slurp(f.path().string()))["deliveries"].size();
  return n;
}

}  // namespace

TEST_CASE("json webhook: signed, deduplicated, retried until 2xx", "[sinks][delivery]") {
  TempDir tmp;
  std::atomic<int> calls{0};
  nettest::Receiver rx([&](const nettest::Received&) { return ++calls <= 2 ? 503 : 200; });
  std::ofstream(tmp.path + "/secret") << "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n";
  auto s = sink("hook", rx.url("/hook?x=1"));
  s.hmac_secret_file = tmp.path + "/secret";
  s.headers = {{"X-Team", "ml"}};
  Rig rig(tmp.path);
  rig.start({s});
  auto inc = make_incident();
  inc.evidence[0].text = "Authorization: Bearer supersecrettoken123";
  REQUIRE(rig.dispatcher.submit(inc));
  REQUIRE(rig.dispatcher.submit(inc));  // the same revision again: not delivered twice
  rig.dispatcher.flush();               // both handed over: the second went nowhere
  REQUIRE(rx.wait_for(3));
  REQUIRE(eventually([&] { return spool_empty(rig.spool("hook")); }));
  auto got = rx.received();
  REQUIRE(got.size() == 3);  // two 503s, then the 200
  const auto& r = got.back();
  CHECK(r.method == "POST");
  CHECK(r.target == "/hook?x=1");
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.header("x-team") == "ml");
  CHECK(r.header("webhook-id") == inc.id + "-1");
  auto ts = std::stoll(r.header("webhook-timestamp"));
  CHECK(ts == std::chrono::duration_cast<std::chrono::seconds>(rig.clock.now().time_since_epoch()).count());
  auto key = decode_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  CHECK(r.header("webhook-signature") == standard_webhooks_signature(key, inc.id + "-1", ts, r.body));
  auto body = nlohmann::json::parse(r.body);
  CHECK(body["id"] == inc.id);
  CHECK(body["evidence"][0]["text"] == "Authorization: Bearer [REDACTED]");
  auto text = rig.metrics.serialize();
  CHECK(has(text, "faultline_webhook_deliveries_total{result=\"http_error\",sink=\"hook\"} 2"));
  CHECK(has(text, "faultline_webhook_deliveries_total{result=\"success\",sink=\"hook\"} 1"));
  CHECK(has(text, "faultline_webhook_retries_total{sink=\"hook\"} 2"));
  CHECK(has(text, "faultline_incidents_total{rule=\"flashinfer-fmha-unsupported-arch\",severity=\"critical\"} 1"));
  CHECK(has(text, "faultline_incidents_active{rule=\"flashinfer-fmha-unsupported-arch\",severity=\"critical\"} 1"));
  CHECK(has(text, "faultline_spool_oldest_pending_seconds{sink=\"hook\"} 0"));
  auto stats = rig.dispatcher.stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].name == "hook");
  CHECK(stats[0].delivered == 1);
  CHECK(stats[0].failed == 0);
  rig.stop(std::chrono::seconds(1));
}

TEST_CASE("a resolution takes the active gauge back to 0 at the next scrape", "[sinks][delivery]") {
  TempDir tmp;
  Rig rig(tmp.path);
  rig.start({});
  auto inc = make_incident();
  REQUIRE(rig.dispatcher.submit(inc));
  rig.dispatcher.flush();
  const std::string series = "faultline_incidents_active{rule=\"flashinfer-fmha-unsupported-arch\",severity=\"critical\"} ";
  CHECK(has(rig.metrics.serialize(), series + "1"));
  inc.revision = 2;
  inc.status = IncidentStatus::resolved;
  REQUIRE(rig.dispatcher.submit(inc));
  rig.dispatcher.flush();
  CHECK(has(rig.metrics.serialize(), series + "0"));
}

TEST_CASE("a dead sink does not delay another; pending deliveries survive a restart", "[sinks][delivery]") {
  TempDir tmp;
  nettest::Receiver good;
  // A port with nothing listening: connections are refused.
  std::uint16_t dead_port;
  { nettest::Receiver gone; dead_port = gone.port(); }
  auto dead = sink("dead", "http://127.0.0.1:" + std::to_string(dead_port) + "/");
  auto live = sink("live", good.url());
  {
    Rig rig(tmp.path);
    rig.start({dead, live});
    for (int i = 0; i < 5; ++i) REQUIRE(rig.dispatcher.submit(make_incident("inc" + std::to_string(i))));
    REQUIRE(good.wait_for(5, std::chrono::milliseconds(3000)));
    auto got = good.received();
    for (int i = 0; i < 5; ++i)
      CHECK(got[static_cast<std::size_t>(i)].header("webhook-id") == "inc" + std::to_string(i) + "-1");
    rig.stop(std::chrono::milliseconds(100));
  }
  // The dead sink's deliveries are still spooled; a new process with a live receiver delivers them, in order.
  CHECK(spooled(tmp.path + "/spool/dead") == 5);
  nettest::Receiver revived;
  Rig rig(tmp.path);
  rig.start({sink("dead", revived.url())});
  REQUIRE(revived.wait_for(5));
  auto got = revived.received();
  for (int i = 0; i < 5; ++i)
    CHECK(got[static_cast<std::size_t>(i)].header("webhook-id") == "inc" + std::to_string(i) + "-1");
  // Replaying the same revisions after the restart sends nothing new (the store remembers them).
  REQUIRE(rig.dispatcher.submit(make_incident("inc0")));
  rig.dispatcher.flush();
  REQUIRE(eventually([&] { return spool_empty(rig.spool("dead")); }));
  CHECK(revived.received().size() == 5);
  rig.stop(std::chrono::seconds(1));
}

TEST_CASE("alertmanager sink posts to /api/v2/alerts, re-sends while firing, and resolves", "[sinks][delivery]") {
  TempDir tmp;
  nettest::Receiver am;
  auto s = sink("am", "http://127.0.0.1:" + std::to_string(am.port()));
  s.format = WebhookFormat::alertmanager;
  s.resend_interval = std::chrono::seconds(1);
  Rig rig(tmp.path);
  rig.start({s});
  auto inc = make_incident();
  REQUIRE(rig.dispatcher.submit(inc));
  REQUIRE(am.wait_for(1));
  auto first = am.received().front();
  CHECK(first.target == "/api/v2/alerts");
  auto arr = nlohmann::json::parse(first.body);
  REQUIRE(arr.is_array());
  CHECK(arr[0]["labels"]["alertname"] == "FaultlineFlashinferFmhaUnsupportedArch");
  CHECK(arr[0]["generatorURL"].get<std::string>().find("/api/v1/incidents/" + inc.id) != std::string::npos);
  // Re-sent while firing, once the resend interval has passed.
  rig.clock.advance(s.resend_interval);
  rig.dispatcher.poke();
  REQUIRE(am.wait_for(2, std::chrono::milliseconds(4000)));
  CHECK(nlohmann::json::parse(am.received()[1].body)[0]["labels"]["incident_id"] == inc.id);

  inc.revision = 2;
  inc.status = IncidentStatus::resolved;
  REQUIRE(rig.dispatcher.submit(inc));
  auto revision_of = [](const nettest::Received& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_array() && !j.empty() ? j[0]["annotations"]["revision"].get<std::string>() : std::string();
  };
  std::size_t resolved_at = 0;
  REQUIRE(eventually([&] {
    auto got = am.received();
    for (std::size_t i = 0; i < got.size(); ++i)
      if (revision_of(got[i]) == "2") return (resolved_at = i), true;
    return false;
  }));
  // Resolved: no more re-sends. Another incident fires; the next re-send carries it alone.
  auto other = make_incident("feedfacefeedface");
  REQUIRE(rig.dispatcher.submit(other));
  auto mentions = [](const nettest::Received& r, const std::string& id) { return has(r.body, id); };
  REQUIRE(eventually([&] {
    auto got = am.received();
    return std::any_of(got.begin(), got.end(), [&](const auto& r) { return mentions(r, other.id); });
  }));
  rig.clock.advance(s.resend_interval);
  rig.dispatcher.poke();
  REQUIRE(eventually([&] {
    auto got = am.received();
    return std::count_if(got.begin(), got.end(), [&](const auto& r) { return mentions(r, other.id); }) >= 2;
  }));
  auto got = am.received();
  for (std::size_t i = resolved_at + 1; i < got.size(); ++i) CHECK_FALSE(mentions(got[i], inc.id));
  rig.stop(std::chrono::seconds(1));
}

TEST_CASE("backpressure and stop", "[sinks][delivery]") {
  TempDir tmp;
  DispatcherOptions o;
  o.queue_capacity = 2;
  Rig rig(tmp.path, o);
  CHECK_FALSE(rig.dispatcher.submit(make_incident()));  // not started
  rig.start({});
  for (int i = 0; i < 6; ++i) rig.dispatcher.submit(make_incident("q" + std::to_string(i)));
  CHECK(rig.dispatcher.wait_for_space(std::chrono::seconds(2)));
  CHECK_FALSE(rig.dispatcher.backpressure());
  rig.stop(std::chrono::milliseconds(100));
  CHECK_FALSE(rig.dispatcher.submit(make_incident("late")));
}

TEST_CASE("deliver: a batch is durable in the spool when it returns; a failed spool write keeps it and retries",
          "[sinks][delivery]") {
  TempDir tmp;
  std::uint16_t dead_port;
  { nettest::Receiver gone; dead_port = gone.port(); }
  DispatcherOptions o;
  o.queue_capacity = 3;
  Rig rig(tmp.path, o);
  rig.start({sink("hook", "http://127.0.0.1:" + std::to_string(dead_port) + "/")});
  auto pending = [&] { return spooled(rig.spool("hook")); };
  auto files = [&] { return std::distance(fs::directory_iterator(rig.spool("hook")), fs::directory_iterator{}); };
  auto first = rig.dispatcher.deliver({make_incident("b1"), make_incident("b2"), make_incident("b3")});
  CHECK(first.durable);
  CHECK(first.backlog == 0);
  CHECK(pending() == 3);  // on disk when deliver() returns, in one file
  CHECK(files() == 1);

  // The spool directory cannot be written (a file where it was: every create fails, as on a full disk).
  fs::rename(rig.spool("hook"), tmp.path + "/aside");
  std::ofstream(rig.spool("hook")) << "in the way";
  auto failed = rig.dispatcher.deliver({make_incident("f1"), make_incident("f2")});
  CHECK_FALSE(failed.durable);
  CHECK(failed.backlog == 2);
  CHECK_FALSE(failed.error.empty());
  CHECK_FALSE(rig.dispatcher.backpressure());
  auto more = rig.dispatcher.deliver({make_incident("f3")});
  CHECK(more.backlog == 3);
  CHECK(rig.dispatcher.backpressure());  // at queue_capacity revisions held in memory: the reader pauses
  auto text = rig.metrics.serialize();
  CHECK(has(text, "faultline_state_write_failures_total{what=\"spool\"} 2"));
  CHECK(has(text, "faultline_spool_dropped_total{reason=\"spool_full\",sink=\"hook\"} 0"));
  // Until the spool is durable again, the store does not log them (a crash must not make them look delivered).
  CHECK(slurp(tmp.path + "/incidents.jsonl").find("\"f1\"") == std::string::npos);

  // Space returns: the next delivery (an empty one: the service's next step) writes them, in order.
  fs::remove(rig.spool("hook"));
  fs::rename(tmp.path + "/aside", rig.spool("hook"));
  auto again = rig.dispatcher.deliver({});
  CHECK(again.durable);
  CHECK(again.backlog == 0);
  CHECK_FALSE(rig.dispatcher.backpressure());
  CHECK(pending() == 6);
  CHECK(files() == 2);
  CHECK(slurp(tmp.path + "/incidents.jsonl").find("\"f3\"") != std::string::npos);
  rig.stop(Duration::zero());
}

namespace {

// A sink that fails or throws on demand, to show the others are not affected.
class Flaky final : public Sink {
 public:
  explicit Flaky(bool throws) : throws_(throws) {}
  std::string_view name() const override { return throws_ ? "throws" : "fails"; }
  bool accepts(const Incident&) const override { return true; }
  Result<void> deliver(const Incident&) override {
    if (throws_) throw std::runtime_error("boom");
    return Error{"disk full"};
  }
  void stop(Duration) override {}

 private:
  bool throws_;
};

}  // namespace

TEST_CASE("a sink that fails or throws is counted and does not stop the others", "[sinks][delivery]") {
  TempDir tmp;
  nettest::Receiver rx;
  Rig rig(tmp.path);
  rig.dispatcher.add(std::make_unique<Flaky>(true));
  rig.dispatcher.add(std::make_unique<Flaky>(false));
  rig.start({sink("hook", rx.url())});
  REQUIRE(rig.dispatcher.submit(make_incident("a")));
  REQUIRE(rig.dispatcher.submit(make_incident("b")));
  REQUIRE(rx.wait_for(2));
  auto stats = rig.dispatcher.stats();
  REQUIRE(stats.size() == 3);
  CHECK(stats[0].failed == 2);
  CHECK(stats[1].failed == 2);
  CHECK(stats[2].name == "hook");
  CHECK(stats[2].delivered == 2);
  CHECK(rig.store.size() == 2);
}


TEST_CASE("an incident the store let go is not counted again when its next revision comes", "[sinks][delivery]") {
  TempDir tmp;
  Rig rig(tmp.path, {}, {.incidents = 2});
  rig.start({});
  for (const char* id : {"a", "b", "c"}) REQUIRE(rig.dispatcher.submit(make_incident(id, 1)));
  rig.dispatcher.flush();
  REQUIRE(rig.store.find("a") == nullptr);  // the oldest, evicted
  REQUIRE(rig.dispatcher.submit(make_incident("a", 2)));
  rig.dispatcher.flush();
  CHECK(rig.store.find("a") != nullptr);
  CHECK(has(rig.metrics.serialize(),
            "faultline_incidents_total{rule=\"flashinfer-fmha-unsupported-arch\",severity=\"critical\"} 3"));
}
