// Standard Webhooks signing: base64 (standard alphabet out; standard or URL-safe in), the "whsec_" secret format and
// the HMAC-SHA256 signature "v1,<base64>" over "<id>.<timestamp>.<body>".
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "faultline/secrets.hpp"
#include "faultline/sinks.hpp"

namespace faultline {

std::string base64_encode(std::string_view in) {
  static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8) | std::uint8_t(in[i + 2]);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (i + 1 == in.size()) {
    std::uint32_t v = std::uint8_t(in[i]) << 16;
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (bits >= 6) return std::nullopt;  // a lone trailing character
  return out;
}

std::string decode_webhook_secret(std::string_view secret) {
  auto s = trim(secret);
  if (s.rfind("whsec_", 0) == 0) {
    if (auto key = base64_decode(std::string_view(s).substr(6))) return *key;
  }
  return s;
}

std::string standard_webhooks_signature(std::string_view key, std::string_view id, std::int64_t timestamp,
                                        std::string_view body) {
  std::string message;
  message.reserve(id.size() + body.size() + 24);
  message.append(id).append(".").append(std::to_string(timestamp)).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

}  // namespace faultline
