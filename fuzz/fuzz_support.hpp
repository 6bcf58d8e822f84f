// Helpers shared by the fuzz targets: split the fuzzer's bytes into a few values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace faultline::fuzz {

// Reads the fuzzer's bytes front to back: a byte, or the text up to the next separator.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  std::uint8_t byte() {
    if (rest_.empty()) return 0;
    auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // The text up to the next `separator` (which is consumed), or all that is left.
  std::string_view until(char separator) {
    auto pos = rest_.find(separator);
    auto part = rest_.substr(0, pos);
    rest_.remove_prefix(pos == std::string_view::npos ? rest_.size() : pos + 1);
    return part;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace faultline::fuzz
