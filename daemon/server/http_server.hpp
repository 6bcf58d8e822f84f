// Internal: the Beast listener behind faultline's HTTP server. It runs on an io_context it is given (the daemon's io
// thread) and hands each request to a plain handler (handle_request in server.hpp). Not a public header: it names
// Boost.Asio's io_context, which faultline's public headers never include.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "faultline/server.hpp"

namespace boost::asio {
class io_context;
}

namespace faultline {

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&, std::string* handler)>;
  using Observer = std::function<void(std::string_view handler, unsigned status)>;

  // Binds and starts accepting on `io` (call before or on the io thread). nullptr and `error` on failure.
  static std::unique_ptr<HttpServer> create(boost::asio::io_context& io, const ServerOptions& options,
                                            Handler handler, Observer observer, std::string* error);
  virtual ~HttpServer() = default;
  virtual std::string local_address() const = 0;
  // Stops accepting and closes every connection. Call on the io thread.
  virtual void close() = 0;
};

}  // namespace faultline
