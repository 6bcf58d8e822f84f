// json_integer: a JSON number read as an integer of type T only when it is an integer that fits T. A float (1e300),
// a negative number where T is unsigned, or one out of T's range is not: converting it would be undefined behaviour.
// For the readers of what the daemon wrote to disk (checkpoint, correlator state, spool), which must treat an edited
// or torn file as bad input, never crash on it. Part of common; header-only.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace faultline {

template <class T>
std::optional<T> json_integer(const nlohmann::json& j) {
  static_assert(std::is_integral_v<T>);
  if (!j.is_number_integer()) return std::nullopt;
  if (j.is_number_unsigned()) {
    const auto v = j.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(v);
  }
  const auto v = j.get<std::int64_t>();
  if constexpr (std::is_unsigned_v<T>) {
    if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<T>::max()) return std::nullopt;
  } else {
    if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        v > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
      return std::nullopt;
  }
  return static_cast<T>(v);
}

// The field `key` of object `j` as json_integer<T>: `fallback` when absent, nullopt when present but not such an integer.
template <class T>
std::optional<T> json_integer_field(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  return json_integer<T>(*it);
}

}  // namespace faultline
