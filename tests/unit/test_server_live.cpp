// server: the live Beast listener on an IoThread, wired as `faultline run` wires it — routes, the bearer token,
// readiness, limits, a port already in use.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/rules.hpp"
#include "faultline/server.hpp"
#include "faultline/sinks.hpp"
#include "net_util.h"
#include "server_support.hpp"

using namespace faultline;
using servertest::incident;
namespace fs = std::filesystem;

namespace {

// The serving side of the daemon, as `faultline run` wires it.
struct Serving {
  explicit Serving(ServerOptions options, std::string state = {})
      : status(state), store({}, state.empty() ? "" : state + "/incidents.jsonl"),
        dispatcher({}, io, metrics, store), server(std::move(options), context(), io, metrics) {}
  ApiContext context() {
    ApiContext api;
    api.incidents = &store;
    api.metrics = &metrics;
    use_status(api, status);
    return api;
  }
  Metrics metrics;
  IoThread io;
  ServerStatus status;
  IncidentStore store;
  Dispatcher dispatcher;
  Server server;
};

}  // namespace

TEST_CASE("live server: routes, token, readiness, limits", "[server][live]") {
  char tmpl[] = "/tmp/faultline-server-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::ofstream(dir + "/token") << "tok-123\n";
  fs::create_directories(dir + "/state");
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.api_token_file = dir + "/token";
  o.max_request_bytes = 2048;
  {
    Serving out(o, dir + "/state");
    REQUIRE(out.store.open());
    auto started = out.server.start();
    INFO((started ? std::string() : started.error().message));
    REQUIRE(started);
    REQUIRE(out.dispatcher.start());
    out.io.start();
    auto port = nettest::port_of(out.server.listen_address());
    RuleSet rs;
    auto& r = rs.rules.emplace_back();
    r.id = "cuda-oom";
    r.title = "CUDA OOM";
    r.content_hash = "h1";
    out.metrics.declare_rules(rs);
    out.status.set_rules(rule_infos(rs));
    out.status.set_ready("rules", true, "1 rule");
    out.status.set_ready("sources", false, "waiting");
    REQUIRE(out.dispatcher.submit(incident("abcd", "cuda-oom", Severity::critical)));
    out.dispatcher.flush();

    CHECK(nettest::get(port, "/healthz").status == 200);
    CHECK(nettest::get(port, "/readyz").status == 503);
    out.status.set_ready("sources", true);
    CHECK(nettest::get(port, "/readyz").status == 200);
    auto m = nettest::get(port, "/metrics");
    CHECK(m.status == 200);
    CHECK(m.body.find("faultline_rules_loaded 1") != std::string::npos);
    // Series exist from the start for each rule's severity, at 0.
    CHECK(m.body.find("faultline_incidents_total{rule=\"cuda-oom\",severity=\"warning\"} 0") != std::string::npos);
    CHECK(m.body.find("faultline_incidents_total{rule=\"cuda-oom\",severity=\"critical\"} 1") != std::string::npos);
    CHECK(nettest::get(port, "/api/v1/incidents").status == 401);
    auto inc = nettest::get(port, "/api/v1/incidents/abcd", "Authorization: Bearer tok-123\r\n");
    REQUIRE(inc.status == 200);
    CHECK(nlohmann::json::parse(inc.body)["id"] == "abcd");
    auto rules = nettest::get(port, "/api/v1/rules", "Authorization: Bearer tok-123\r\n");
    CHECK(nlohmann::json::parse(rules.body)["rules"][0]["content_hash"] == "h1");
    auto head = nettest::get(port, "/healthz", {}, "HEAD");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    // An oversized request is refused.
    auto big = nettest::get(port, "/healthz", "X-Pad: " + std::string(4096, 'a') + "\r\n");
    CHECK((big.status == 413 || big.status == 0));
    // A client that connects and says nothing is not a problem for the others.
    int idle = nettest::connect_to(port);
    CHECK(nettest::get(port, "/healthz").status == 200);
    ::close(idle);
    auto metrics = nettest::get(port, "/metrics").body;
    CHECK(metrics.find("faultline_http_requests_total{code=\"401\",handler=\"unauthorized\"} 1") != std::string::npos);
    out.server.stop();
    out.dispatcher.stop(std::chrono::milliseconds(200));
    CHECK(nettest::get(port, "/healthz").status == 0);  // closed
    out.io.stop();
  }
  fs::remove_all(dir);
}

TEST_CASE("a port in use is an error at start", "[server][live]") {
  ServerOptions a;
  a.listen = "127.0.0.1:0";
  Serving first(a);
  CHECK(first.server.listen_address().empty());  // not started: nothing bound
  REQUIRE(first.server.start());
  ServerOptions b;
  b.listen = first.server.listen_address();
  Serving second(b);
  auto started = second.server.start();
  REQUIRE_FALSE(started);
  CHECK(started.error().message.find("listen") != std::string::npos);
  first.server.stop();
}
