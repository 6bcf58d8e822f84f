// The on-call page's files, served from the copies compiled into the binary (page_assets.hpp). The page renders
// everything in the browser from the JSON API, with textContent only; the policy below forbids inline script, so even
// a mistake there could not run text from a log line.
#include "page_assets.hpp"
#include "routes.hpp"

namespace faultline::server_detail {

std::optional<HttpResponse> page_file(std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;  // checked first: an empty target has no name
  std::string_view name = path == "/" || path == "/index.html" ? std::string_view("index.html") : path.substr(1);
  if (name.find('/') != std::string_view::npos) return std::nullopt;
  for (const auto& asset : page_assets()) {
    if (asset.name != name) continue;
    HttpResponse r;
    r.content_type = std::string(asset.content_type);
    r.body = std::string(asset.body);
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    r.headers.emplace_back("X-Frame-Options", "DENY");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    return r;
  }
  return std::nullopt;
}

}  // namespace faultline::server_detail
