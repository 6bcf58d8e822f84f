// server: the listener under slow and idle clients — which connection gives way when the listener is full
// (ConnectionBook), the short header deadline, the per-client bound, and probes answered while slots are held.
#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <chrono>

#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/server.hpp"
#include "net_util.h"
#include "server/connection_book.hpp"

using namespace faultline;
using namespace std::chrono_literals;

TEST_CASE("connection book: the longest waiting connection gives way", "[server]") {
  ConnectionBook book({3, 10});
  auto a = *book.admit("10.0.0.1").id;
  auto b = *book.admit("10.0.0.2").id;
  auto c = *book.admit("10.0.0.3").id;
  book.waiting(a);  // a waits again (a new keep-alive request): b has now waited longest
  auto d = book.admit("10.0.0.4");
  REQUIRE(d.id);
  CHECK(d.shed == std::vector<ConnectionBook::Id>{b});
  CHECK_FALSE(book.holds(b));
  CHECK(book.size() == 3);
  // Busy connections (writing a response) are never shed; with all busy a new one is refused.
  book.busy(a);
  book.busy(c);
  book.busy(*d.id);
  auto e = book.admit("10.0.0.5");
  CHECK_FALSE(e.id);
  CHECK(e.shed.empty());
  CHECK(book.size() == 3);
  book.waiting(c);
  auto f = book.admit("10.0.0.5");
  CHECK(f.id);
  CHECK(f.shed == std::vector<ConnectionBook::Id>{c});
  book.remove(a);
  book.remove(a);  // twice: ignored
  CHECK(book.size() == 2);
}

TEST_CASE("connection book: a client beyond its bound sheds its own connections", "[server]") {
  ConnectionBook book({4, 2});
  auto p = *book.admit("probe").id;
  auto x1 = *book.admit("x").id;
  auto x2 = *book.admit("x").id;
  auto x3 = book.admit("x");
  REQUIRE(x3.id);
  CHECK(x3.shed == std::vector<ConnectionBook::Id>{x1});  // not the probe's, although it waited longer
  CHECK(book.of_client("x") == 2);
  CHECK(book.holds(p));
  CHECK(book.holds(x2));
  // Both bounds at once: one of the client's own and the oldest of all.
  auto y = *book.admit("y").id;
  auto x4 = book.admit("x");
  REQUIRE(x4.id);
  CHECK(x4.shed == std::vector<ConnectionBook::Id>{x2});  // room made by its own: the total is not exceeded
  book.busy(*x3.id);
  book.busy(*x4.id);
  CHECK_FALSE(book.admit("x").id);  // its own are all busy: refused, the others untouched
  CHECK(book.holds(p));
  CHECK(book.holds(y));
}

namespace {

int connect_from(const char* source, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the server closes `fd` within `bound`.
bool closed_within(int fd, std::chrono::milliseconds bound) {
  auto end = std::chrono::steady_clock::now() + bound;
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

struct Listening {
  explicit Listening(ServerOptions o) : server(prepare(std::move(o)), context(), io, metrics) {
    REQUIRE(server.start());
    io.start();
    port = nettest::port_of(server.listen_address());
  }
  ~Listening() {
    server.stop();
    io.stop();
  }
  static ServerOptions prepare(ServerOptions o) {
    o.listen = "127.0.0.1:0";
    return o;
  }
  ApiContext context() {
    ApiContext api;
    api.metrics = &metrics;
    api.readiness = [] { return std::vector<ReadinessItem>{}; };
    api.rules = [] { return std::vector<RuleInfo>{}; };
    return api;
  }
  Metrics metrics;
  IoThread io;
  Server server;
  std::uint16_t port = 0;
};

struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST_CASE("live: held connections do not keep a probe out; the longest waiting gives way", "[server][live]") {
  ServerOptions o;
  o.max_connections = 4;
  o.max_connections_per_client = 100;
  o.header_timeout = 10s;  // only shedding closes them here
  Listening l(o);
  Fds held;
  for (int i = 0; i < 4; ++i) {
    held.fds.push_back(nettest::connect_to(l.port));
    if (i % 2) ::send(held.fds.back(), "GET /metrics HTTP/1.1\r\nX-", 25, MSG_NOSIGNAL);  // a slow header
  }
  // The kernel's accept queue keeps them in order: the listener takes all four before the probe.
  CHECK(nettest::get(l.port, "/healthz").status == 200);
  CHECK(nettest::get(l.port, "/metrics").status == 200);
  CHECK(closed_within(held.fds[0], 5s));  // the oldest waiter was shed for the first probe
  CHECK_FALSE(closed_within(held.fds[1], 100ms));  // the second found the first's slot free again
  auto m = nettest::get(l.port, "/metrics").body;
  CHECK(m.find("handler=\"shed\"") != std::string::npos);
}

TEST_CASE("live: a header must end within header_timeout", "[server][live]") {
  ServerOptions o;
  o.header_timeout = 300ms;
  o.request_timeout = 10s;
  Listening l(o);
  Fds held;
  held.fds.push_back(nettest::connect_to(l.port));
  ::send(held.fds[0], "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32, MSG_NOSIGNAL);
  auto start = std::chrono::steady_clock::now();
  CHECK(closed_within(held.fds[0], 5s));
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  // A keep-alive connection waits idle_timeout for its next request, and header_timeout only from its first byte.
  held.fds.push_back(nettest::connect_to(l.port));
  std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ::send(held.fds[1], req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  auto end = std::chrono::steady_clock::now() + 5s;
  while (got.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < end) {
    pollfd p{held.fds[1], POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    auto n = ::recv(held.fds[1], buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  REQUIRE(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK_FALSE(closed_within(held.fds[1], 600ms));  // idle for twice the header deadline: still open
  req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ::send(held.fds[1], req.data(), req.size(), MSG_NOSIGNAL);
  CHECK(nettest::read_all(held.fds[1]).find("HTTP/1.1 200") != std::string::npos);
}

TEST_CASE("live: one client beyond its bound sheds only its own connections", "[server][live]") {
  ServerOptions o;
  o.max_connections = 100;
  o.max_connections_per_client = 2;
  Listening l(o);
  Fds held;
  int other = connect_from("127.0.0.3", l.port);
  REQUIRE(other >= 0);
  held.fds.push_back(other);
  for (int i = 0; i < 3; ++i) held.fds.push_back(connect_from("127.0.0.2", l.port));
  CHECK(closed_within(held.fds[1], 5s));  // 127.0.0.2's first, for its third
  CHECK_FALSE(closed_within(held.fds[0], 200ms));  // 127.0.0.3's connection is not touched
  CHECK_FALSE(closed_within(held.fds[3], 10ms));
  CHECK(nettest::get(l.port, "/healthz").status == 200);
}
