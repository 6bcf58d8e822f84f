// Who may read the API (routes.hpp): the bearer token for API clients, a session cookie for browsers. The cookie is
// HttpOnly (no script reads it) and SameSite=Strict (no other site's page sends it); logging in and out also needs a
// same-origin request, so another site can neither use a session nor plant one.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "routes.hpp"

namespace faultline::server_detail {
namespace {

std::string hmac_hex(const std::string& key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

bool equal_secret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::int64_t unix_seconds(Time t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// The value of cookie `name` in a Cookie header ("a=1; b=2"); empty when absent.
std::string_view cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    auto semi = header.find(';');
    auto part = header.substr(0, semi);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
      return part.substr(name.size() + 1);
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return {};
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string cookie_attributes(const HttpRequest& request, const ApiContext& context) {
  // The cookie goes to the whole site: the page may sit behind a proxy under a path prefix it does not know.
  std::string attrs = "; Path=/; HttpOnly; SameSite=Strict";
  if (lower(request.forwarded_proto) == "https" || context.external_url.rfind("https://", 0) == 0) attrs += "; Secure";
  return attrs;
}

bool session_valid(std::string_view value, const std::string& token, Time now) {
  if (value.substr(0, 3) != "v1.") return false;
  auto dot = value.find('.', 3);
  if (dot == std::string_view::npos) return false;
  auto expiry_text = value.substr(3, dot - 3);
  std::int64_t expiry = 0;
  auto [p, ec] = std::from_chars(expiry_text.data(), expiry_text.data() + expiry_text.size(), expiry);
  if (ec != std::errc() || p != expiry_text.data() + expiry_text.size()) return false;
  if (expiry <= unix_seconds(now)) return false;
  return equal_secret(value.substr(dot + 1), hmac_hex(token, value.substr(0, dot)));
}

}  // namespace

bool bearer_ok(std::string_view authorization, const std::string& token) {
  constexpr std::string_view prefix = "bearer ";
  if (authorization.size() < prefix.size() || lower(authorization.substr(0, prefix.size())) != prefix) return false;
  auto given = authorization.substr(prefix.size());
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  return equal_secret(given, token);
}

std::string make_session(const std::string& token, Time now) {
  auto expiry = unix_seconds(now + kSessionLifetime);
  std::string head = "v1." + std::to_string(expiry);
  return head + "." + hmac_hex(token, head);
}

bool session_ok(std::string_view cookie_header, const std::string& token, Time now) {
  auto value = cookie_value(cookie_header, kSessionCookie);
  return !value.empty() && session_valid(value, token, now);
}

bool same_origin(const HttpRequest& request) {
  if (!request.fetch_site.empty() && request.fetch_site != "same-origin") return false;
  if (request.origin.empty()) return true;  // not a browser's cross-origin request (they all send Origin with POST)
  auto scheme_end = request.origin.find("://");
  if (scheme_end == std::string::npos) return false;  // "null": a sandboxed frame, a file, a redirect across sites
  return lower(std::string_view(request.origin).substr(scheme_end + 3)) == lower(request.host);
}

HttpResponse login(const HttpRequest& request, const ApiContext& context, Time now) {
  if (!same_origin(request)) return error_response(403, "cross-origin login refused");
  if (context.api_token.empty()) return error_response(404, "no token is configured: the API is open");
  std::string token;
  for (const auto& [k, v] : parse_query(request.body))
    if (k == "token") token = v;
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (!equal_secret(token, context.api_token)) return error_response(401, "wrong token");
  HttpResponse r;
  r.status = 204;
  auto max_age = std::chrono::duration_cast<std::chrono::seconds>(kSessionLifetime).count();
  std::string cookie = std::string(kSessionCookie) + "=" + make_session(context.api_token, now);
  cookie += cookie_attributes(request, context) + "; Max-Age=" + std::to_string(max_age);
  r.headers.emplace_back("Set-Cookie", std::move(cookie));
  return r;
}

HttpResponse logout(const HttpRequest& request, const ApiContext& context, Time now) {
  if (!same_origin(request)) return error_response(403, "cross-origin logout refused");
  if (!context.api_token.empty() && !session_ok(request.cookie, context.api_token, now) &&
      !bearer_ok(request.authorization, context.api_token))
    return error_response(401, "not logged in");
  HttpResponse r;
  r.status = 204;
  r.headers.emplace_back("Set-Cookie",
                         std::string(kSessionCookie) + "=" + cookie_attributes(request, context) + "; Max-Age=0");
  return r;
}

HttpResponse session_state(const HttpRequest& request, const ApiContext& context, Time now) {
  bool required = !context.api_token.empty();
  bool authenticated = !required || bearer_ok(request.authorization, context.api_token) ||
                       session_ok(request.cookie, context.api_token, now);
  nlohmann::ordered_json j;
  j["token_required"] = required;
  j["authenticated"] = authenticated;
  return json_response(200, j.dump());
}

}  // namespace faultline::server_detail
