// net: outgoing HTTP(S) as plain values — a parsed http(s) URL and the TLS options of a connection. The client that
// uses them runs on the io thread and lives in http_client.hpp (it names Boost.Asio; this header does not).
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace faultline {

struct ParsedUrl {
  std::string scheme;  // "http" | "https"
  std::string host;    // without brackets for IPv6
  std::uint16_t port = 0;
  std::string target;  // path + query, at least "/"
};

// http(s)://host[:port][/path][?query]; credentials in the URL are refused. Returns nullopt and sets `error`.
// Messages name the URL masked and cut (excerpt, types.hpp): never its credentials.
std::optional<ParsedUrl> parse_url(std::string_view url, std::string* error = nullptr);

// The URL as it may be shown: credentials masked ("http://user:***@host/…"; a user part alone, which may be a
// token, becomes "***@"); anything else unchanged.
std::string mask_url_credentials(std::string_view url);

struct TlsOptions {
  std::string ca_file;           // PEM bundle to trust; empty: the system's default trust store
  bool verify = true;            // verify the peer's certificate chain and host name
  std::string client_cert_file;  // optional client certificate (PEM) ...
  std::string client_key_file;   // ... and its key
  std::string server_name;       // SNI and the name verified; empty: the URL's host
};

}  // namespace faultline
