// The webhook client: one connection per attempt, one deadline over the attempt. attempt() is written once for any
// stream: a plain beast::tcp_stream, or a beast::ssl_stream over one (which adds the handshake).
#include "faultline/http_client.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <type_traits>

namespace faultline {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Deadline = std::chrono::steady_clock::time_point;
using Request = http::request<http::string_body>;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;
template <class Stream>
constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

PostResult classify(beast::error_code ec, const char* step) {
  if (ec == beast::error::timeout) return {PostOutcome::timeout, 0, std::string(step) + " timed out"};
  return {PostOutcome::network_error, 0, std::string(step) + ": " + ec.message()};
}

PostResult from_response(const http::response<http::string_body>& res) {
  unsigned code = res.result_int();
  if (code >= 200 && code < 300) return {PostOutcome::success, code, {}};
  std::string body = res.body().substr(0, 200);
  return {PostOutcome::http_error, code, "HTTP " + std::to_string(code) + (body.empty() ? "" : ": " + body)};
}

}  // namespace

std::string_view to_string(PostOutcome outcome) {
  switch (outcome) {
    case PostOutcome::success: return "success";
    case PostOutcome::http_error: return "http_error";
    case PostOutcome::network_error: return "network_error";
    case PostOutcome::timeout: return "timeout";
    case PostOutcome::tls_error: return "tls_error";
  }
  return "?";
}

struct HttpClient::Impl {
  ParsedUrl url;
  TlsOptions tls_options;
  std::string user_agent;
  std::unique_ptr<ssl::context> tls;  // https only
  beast::tcp_stream* in_flight = nullptr;
  bool cancelled = false;

  Request make_request(PostRequest r) const {
    Request req{http::verb::post, url.target, 11};
    bool default_port = (url.scheme == "https" && url.port == 443) || (url.scheme == "http" && url.port == 80);
    std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
    req.set(http::field::host, default_port ? host : host + ":" + std::to_string(url.port));
    req.set(http::field::user_agent, user_agent);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::connection, "close");
    for (const auto& [k, v] : r.headers) req.set(k, v);
    req.body() = std::move(r.body);
    req.prepare_payload();
    return req;
  }

  asio::awaitable<std::optional<tcp::resolver::results_type>> resolve(Deadline deadline, PostResult& a) {
    auto ex = co_await asio::this_coro::executor;
    tcp::resolver resolver(ex);
    asio::steady_timer timer(ex);
    timer.expires_at(deadline);
    bool timed_out = false;
    timer.async_wait([&](beast::error_code ec) {
      if (!ec) {
        timed_out = true;
        resolver.cancel();
      }
    });
    beast::error_code ec;
    auto results = co_await resolver.async_resolve(url.host, std::to_string(url.port),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    timer.cancel();
    // Let the cancelled wait complete before the timer goes out of scope (its handler refers to locals).
    co_await asio::post(ex, asio::use_awaitable);
    if (timed_out) {
      a = {PostOutcome::timeout, 0, "resolving " + url.host + " timed out"};
      co_return std::nullopt;
    }
    if (ec) {
      a = {PostOutcome::network_error, 0, "resolving " + url.host + ": " + ec.message()};
      co_return std::nullopt;
    }
    co_return results;
  }

  // Connect (and for TLS: SNI, verification, handshake), send, read. The one body for both kinds of stream.
  template <class Stream>
  asio::awaitable<PostResult> attempt(Stream& stream, const tcp::resolver::results_type& endpoints, const Request& req,
                                      Deadline deadline) {
    auto& lower = beast::get_lowest_layer(stream);
    in_flight = &lower;
    struct Clear {
      beast::tcp_stream*& p;
      ~Clear() { p = nullptr; }
    } clear{in_flight};
    std::string name;
    if constexpr (kIsTls<Stream>) {
      name = tls_options.server_name.empty() ? url.host : tls_options.server_name;
      beast::error_code addr_ec;
      asio::ip::make_address(name, addr_ec);
      bool is_ip = !addr_ec;  // SNI carries host names only (RFC 6066); an IP is still verified against the cert
      if (!is_ip && !SSL_set_tlsext_host_name(stream.native_handle(), name.c_str()))
        co_return PostResult{PostOutcome::tls_error, 0, "cannot set SNI " + name};
      if (tls_options.verify) stream.set_verify_callback(ssl::host_name_verification(name));
    }
    beast::error_code ec;
    lower.expires_at(deadline);
    co_await lower.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return classify(ec, "connect");
    if constexpr (kIsTls<Stream>) {
      lower.expires_at(deadline);
      co_await stream.async_handshake(ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == beast::error::timeout) co_return classify(ec, "TLS handshake");
        std::string detail = "TLS handshake: " + ec.message();
        long verify = SSL_get_verify_result(stream.native_handle());
        if (verify != X509_V_OK) detail += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
        co_return PostResult{PostOutcome::tls_error, 0, detail};
      }
    }
    lower.expires_at(deadline);
    co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return classify(ec, "send");
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    lower.expires_at(deadline);
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    // No TLS close_notify exchange: the request is answered, and a peer that never replies would hold us to the
    // deadline. Closing the socket is enough for Connection: close.
    beast::error_code ignored;
    lower.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (ec && !parser.is_header_done()) co_return classify(ec, "read response");
    co_return from_response(parser.get());
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

const ParsedUrl& HttpClient::url() const { return impl_->url; }

Result<std::unique_ptr<HttpClient>> HttpClient::create(ParsedUrl url, TlsOptions tls, std::string user_agent) {
  auto impl = std::make_unique<Impl>();
  impl->url = std::move(url);
  impl->tls_options = std::move(tls);
  impl->user_agent = std::move(user_agent);
  if (impl->url.scheme == "https") {
    const auto& o = impl->tls_options;
    try {  // Asio's ssl::context reports bad files by throwing
      auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
      ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      if (o.verify) {
        ctx->set_verify_mode(ssl::verify_peer);
        if (o.ca_file.empty()) ctx->set_default_verify_paths();
        else ctx->load_verify_file(o.ca_file);
      } else {
        ctx->set_verify_mode(ssl::verify_none);
      }
      if (!o.client_cert_file.empty()) {
        ctx->use_certificate_chain_file(o.client_cert_file);
        ctx->use_private_key_file(o.client_key_file, ssl::context::pem);
      }
      impl->tls = std::move(ctx);
    } catch (const std::exception& e) {
      return Error{std::string("TLS setup failed: ") + e.what()};
    }
  }
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

void HttpClient::cancel() {
  auto& d = *impl_;
  d.cancelled = true;
  if (d.in_flight) {
    beast::error_code ec;
    d.in_flight->socket().close(ec);
  }
}

asio::awaitable<PostResult> HttpClient::post(PostRequest request, Duration timeout) {
  auto& d = *impl_;
  // Network deadlines are real time: Asio's timers run on the steady clock.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  auto req = d.make_request(std::move(request));
  PostResult a{PostOutcome::network_error, 0, "cancelled"};
  if (d.cancelled) co_return a;
  auto endpoints = co_await d.resolve(deadline, a);
  if (!endpoints || d.cancelled) co_return a;
  auto ex = co_await asio::this_coro::executor;
  // (Not a conditional expression: g++ 12 miscompiles co_await inside ?:.)
  if (d.tls) {
    TlsStream stream(ex, *d.tls);
    a = co_await d.attempt(stream, *endpoints, req, deadline);
  } else {
    beast::tcp_stream stream(ex);
    a = co_await d.attempt(stream, *endpoints, req, deadline);
  }
  co_return a;
}

}  // namespace faultline
