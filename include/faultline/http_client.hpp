// http_client: one POST at a time to one http(s) URL, as a coroutine on the io thread (io_thread.hpp) — resolve,
// connect, TLS handshake (SNI, chain and host-name verification), send, read, all under one deadline. The same code
// runs over a plain TCP stream or a TLS stream. Used by the webhook sinks; not thread-safe: one client belongs to one
// coroutine on the io thread.
#pragma once

#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/net.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {

enum class PostOutcome : std::uint8_t { success, http_error, network_error, timeout, tls_error };
std::string_view to_string(PostOutcome outcome);  // the `result` label words

struct PostResult {
  PostOutcome outcome = PostOutcome::network_error;
  unsigned status = 0;  // the HTTP status when one was read
  std::string detail;   // for logs: the step that failed and why, or "HTTP 503: <start of the body>"
};

struct PostRequest {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // set after the defaults, so they may replace them
};

class HttpClient {
 public:
  // For https, the TLS context is made here (trust store, client certificate); an Error names what failed.
  static Result<std::unique_ptr<HttpClient>> create(ParsedUrl url, TlsOptions tls, std::string user_agent);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One POST of `request` as application/json with Connection: close; `timeout` bounds the whole attempt. Never
  // throws: every failure is a PostResult.
  boost::asio::awaitable<PostResult> post(PostRequest request, Duration timeout);
  // Closes the connection of the attempt in flight and refuses later ones (at shutdown). Call on the io thread.
  void cancel();
  const ParsedUrl& url() const;

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
