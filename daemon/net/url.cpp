// URLs of webhook receivers: http(s)://host[:port][/path][?query], IPv6 in brackets, no credentials.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "faultline/net.hpp"
#include "faultline/types.hpp"

namespace faultline {

std::string mask_url_credentials(std::string_view url) {
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return std::string(url);
  auto start = sep + 3;
  auto end = url.find_first_of("/?#", start);
  auto authority = url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  auto userinfo = authority.substr(0, at);
  auto colon = userinfo.find(':');
  std::string out(url.substr(0, start));
  if (colon != std::string_view::npos) out.append(userinfo.substr(0, colon)).append(":");
  out += "***";
  out.append(url.substr(start + at));
  return out;
}

std::optional<ParsedUrl> parse_url(std::string_view url, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<ParsedUrl> {
    if (error) *error = "invalid URL '" + excerpt(mask_url_credentials(url)) + "': " + msg;
    return std::nullopt;
  };
  ParsedUrl out;
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return fail("expected http:// or https://");
  out.scheme = std::string(url.substr(0, sep));
  std::transform(out.scheme.begin(), out.scheme.end(), out.scheme.begin(), ::tolower);
  if (out.scheme != "http" && out.scheme != "https") return fail("scheme must be http or https");
  auto rest = url.substr(sep + 3);
  auto path_at = rest.find_first_of("/?#");
  auto authority = rest.substr(0, path_at);
  out.target = path_at == std::string_view::npos ? "/" : std::string(rest.substr(path_at));
  if (auto hash = out.target.find('#'); hash != std::string::npos) out.target.resize(hash);
  if (out.target.empty() || out.target[0] == '?') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos)
    return fail("credentials in the URL are not supported; use bearer_token_file or headers");
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated [ in host");
    out.host = std::string(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return fail("unexpected text after ]");
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      out.host = std::string(authority.substr(0, colon));
      port_text = authority.substr(colon + 1);
    } else {
      out.host = std::string(authority);
    }
  }
  if (out.host.empty()) return fail("empty host");
  if (!port_text.empty()) {
    unsigned p = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || p == 0 || p > 65535)
      return fail("bad port");
    out.port = static_cast<std::uint16_t>(p);
  } else {
    out.port = out.scheme == "https" ? 443 : 80;
  }
  return out;
}

}  // namespace faultline
