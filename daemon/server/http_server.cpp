// The Beast HTTP/1.1 listener: one coroutine per connection on the daemon's io thread. Every read and write has a
// deadline — a short one to the end of the header, a longer one for the body and the response — and requests are
// bounded in size. Connections are bounded in number, in all and per client address; beyond a bound the connection
// that has waited longest gives way (connection_book.hpp), so slow or idle clients never keep a probe out.
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include "http_server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <spdlog/spdlog.h>
#include <unordered_map>

#include "connection_book.hpp"

namespace faultline {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct State {
  State(asio::io_context& io, const ServerOptions& o)
      : acceptor(io), options(o), book({o.max_connections, o.max_connections_per_client}) {}
  tcp::acceptor acceptor;
  ServerOptions options;
  HttpServer::Handler handler;
  HttpServer::Observer observer;
  bool closed = false;
  ConnectionBook book;
  std::unordered_map<ConnectionBook::Id, beast::tcp_stream*> streams;  // open connections, closed by close() or shed
};

void observe(State& st, std::string_view handler, unsigned status) {
  if (st.observer) st.observer(handler, status);
}

bool too_large(const beast::error_code& ec) {
  return ec == http::error::header_limit || ec == http::error::body_limit || ec == http::error::buffer_overflow;
}

asio::awaitable<void> answer_too_large(State& st, beast::tcp_stream& stream) {
  http::response<http::string_body> res{http::status::payload_too_large, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::connection, "close");
  res.body() = "request too large\n";
  res.prepare_payload();
  stream.expires_after(st.options.request_timeout);
  beast::error_code ec;
  co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  observe(st, "other", 413);
}

// Reads one request: on a keep-alive connection first waits (idle_timeout) for its first byte, then gives the header
// header_timeout and the body request_timeout. False when the connection is to close.
asio::awaitable<bool> read_request(State& st, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                   http::request_parser<http::string_body>& parser, bool first) {
  beast::error_code ec;
  auto on_error = asio::redirect_error(asio::use_awaitable, ec);
  if (!first && buffer.size() == 0) {
    stream.expires_after(st.options.idle_timeout);
    std::size_t n = co_await stream.async_read_some(buffer.prepare(std::min<std::size_t>(512, buffer.max_size())), on_error);
    if (ec) co_return false;
    buffer.commit(n);
  }
  stream.expires_after(st.options.header_timeout);
  co_await http::async_read_header(stream, buffer, parser, on_error);
  if (!ec && !parser.is_done()) {
    stream.expires_after(st.options.request_timeout);
    co_await http::async_read(stream, buffer, parser, on_error);
  }
  if (ec && too_large(ec) && !st.closed) co_await answer_too_large(st, stream);
  co_return !ec;
}

// A Server-Sent Events response: the header and the first events, then what the stream's next() returns, until its
// time is up, the client goes, the connection is shed or the server closes. The connection counts as waiting: a new
// one beyond a bound sheds it (the browser reconnects) rather than being refused.
asio::awaitable<void> stream_events(State& st, beast::tcp_stream& stream, ConnectionBook::Id id, unsigned version,
                                    HttpResponse out, const std::string& handler) {
  http::response<http::empty_body> res{static_cast<http::status>(out.status), version};
  res.set(http::field::server, "faultline");
  res.set(http::field::content_type, out.content_type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Accel-Buffering", "no");  // nginx: pass the events on as they come
  for (const auto& [k, v] : out.headers) res.set(k, v);
  res.keep_alive(false);  // the body ends when the connection does
  http::response_serializer<http::empty_body> serializer(res);
  beast::error_code ec;
  auto on_error = asio::redirect_error(asio::use_awaitable, ec);
  stream.expires_after(st.options.request_timeout);
  co_await http::async_write_header(stream, serializer, on_error);
  observe(st, handler, out.status);
  if (ec) co_return;
  st.book.waiting(id);
  std::string chunk = std::move(out.body);
  auto end = std::chrono::steady_clock::now() + out.stream->max_duration;
  asio::steady_timer timer(stream.get_executor());
  for (;;) {
    if (!chunk.empty()) {
      stream.expires_after(st.options.request_timeout);
      co_await asio::async_write(stream, asio::buffer(chunk), on_error);
      if (ec) co_return;
    }
    if (std::chrono::steady_clock::now() >= end) co_return;
    timer.expires_after(out.stream->interval);
    co_await timer.async_wait(on_error);
    // Closed meanwhile: what next() reads may be going away. Shed: the socket is closed already.
    if (st.closed || !st.book.holds(id)) co_return;
    chunk = out.stream->next();
  }
}

asio::awaitable<void> session(std::shared_ptr<State> st, tcp::socket socket, ConnectionBook::Id id) {
  beast::tcp_stream stream(std::move(socket));
  if (!st->book.holds(id)) co_return;  // shed before it started: the socket closes with the stream
  st->streams[id] = &stream;
  beast::flat_buffer buffer(st->options.max_request_bytes);
  bool first = true;
  for (;;) {
    if (st->closed) break;
    st->book.waiting(id);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(st->options.max_request_bytes));
    parser.body_limit(st->options.max_request_bytes);
    bool ok = co_await read_request(*st, stream, buffer, parser, first);
    first = false;
    if (!ok || st->closed) break;  // closed just now: the handler's state may be going away
    if (!st->book.holds(id)) break;  // shed while its last bytes were on their way
    st->book.busy(id);
    auto& req = parser.get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    auto header = [&req](auto field) {
      auto it = req.find(field);
      return it == req.end() ? std::string() : std::string(it->value());
    };
    r.authorization = header(http::field::authorization);
    r.cookie = header(http::field::cookie);
    r.origin = header(http::field::origin);
    r.host = header(http::field::host);
    r.fetch_site = header("Sec-Fetch-Site");
    r.forwarded_proto = header("X-Forwarded-Proto");
    r.content_type = header(http::field::content_type);
    r.body = req.body();
    std::string handler = "other";
    HttpResponse out = st->handler(r, &handler);
    if (out.stream && req.method() != http::verb::head) {
      co_await stream_events(*st, stream, id, req.version(), std::move(out), handler);
      break;
    }

    http::response<http::string_body> res{static_cast<http::status>(out.status), req.version()};
    res.set(http::field::server, "faultline");
    res.set(http::field::content_type, out.content_type);
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : out.headers) res.set(k, v);
    bool keep_alive = req.keep_alive() && !st->closed;
    res.keep_alive(keep_alive);
    if (req.method() == http::verb::head) {
      res.content_length(out.body.size());
    } else {
      res.body() = std::move(out.body);
      res.prepare_payload();
    }
    stream.expires_after(st->options.request_timeout);
    beast::error_code ec;
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    observe(*st, handler, out.status);
    if (ec || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.socket().close(ignored);
  if (auto it = st->streams.find(id); it != st->streams.end() && it->second == &stream) st->streams.erase(it);
  st->book.remove(id);
}

// The book has forgotten `id` already; a session not started yet sees that and ends at once.
void shed(State& st, ConnectionBook::Id id) {
  observe(st, "shed", 503);
  auto it = st.streams.find(id);
  if (it == st.streams.end()) return;
  beast::error_code ignored;
  it->second->socket().close(ignored);  // its pending read ends with operation_aborted; the session cleans up
  st.streams.erase(it);
}

asio::awaitable<void> accept_loop(std::shared_ptr<State> st) {
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await st->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (st->closed) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      // EMFILE and friends: back off a little instead of spinning.
      spdlog::warn("http: accept failed: {}", ec.message());
      asio::steady_timer t(st->acceptor.get_executor(), std::chrono::milliseconds(100));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    auto peer = socket.remote_endpoint(ec);
    std::string client = ec ? std::string() : peer.address().to_string();
    auto admission = st->book.admit(client);
    for (auto victim : admission.shed) shed(*st, victim);
    if (!admission.id) {
      beast::error_code ignored;
      socket.close(ignored);
      observe(*st, "overload", 503);
      continue;
    }
    asio::co_spawn(st->acceptor.get_executor(), session(st, std::move(socket), *admission.id), asio::detached);
  }
}

class BeastServer final : public HttpServer {
 public:
  explicit BeastServer(std::shared_ptr<State> st) : st_(std::move(st)) {}
  ~BeastServer() override = default;

  std::string local_address() const override {
    beast::error_code ec;
    auto ep = st_->acceptor.local_endpoint(ec);
    if (ec) return {};
    auto addr = ep.address();
    std::string host = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
    return host + ":" + std::to_string(ep.port());
  }

  void close() override {
    if (st_->closed) return;
    st_->closed = true;
    beast::error_code ec;
    st_->acceptor.close(ec);
    for (auto& entry : st_->streams) entry.second->socket().close(ec);
  }

 private:
  std::shared_ptr<State> st_;
};

}  // namespace

std::unique_ptr<HttpServer> HttpServer::create(asio::io_context& io, const ServerOptions& options, Handler handler,
                                               Observer observer, std::string* error) {
  auto parsed = parse_listen_address(options.listen, error);
  if (!parsed) return nullptr;
  auto st = std::make_shared<State>(io, options);
  st->handler = std::move(handler);
  st->observer = std::move(observer);
  beast::error_code ec;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(parsed->first, std::to_string(parsed->second),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    if (error) *error = "cannot resolve listen address '" + options.listen + "': " + ec.message();
    return nullptr;
  }
  tcp::endpoint ep = results.begin()->endpoint();
  auto fail = [&](const char* what) -> std::unique_ptr<HttpServer> {
    if (error) *error = std::string("cannot ") + what + " " + options.listen + ": " + ec.message();
    return nullptr;
  };
  st->acceptor.open(ep.protocol(), ec);
  if (ec) return fail("open");
  st->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  st->acceptor.bind(ep, ec);
  if (ec) return fail("listen on");
  st->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen on");
  asio::co_spawn(io, accept_loop(st), asio::detached);
  return std::make_unique<BeastServer>(std::move(st));
}

}  // namespace faultline
