// result: how fallible runtime operations (files, sockets, state) report failure. User input — rules, config, CLI
// values — is reported as positioned Diagnostics instead (rules.hpp); broken invariants are asserts; exceptions are
// only third-party ones, caught at the room boundary (main is the last catch). Plain values; thread-safe.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace faultline {

// What failed and where it came from, in words for a person: "cannot rename /var/lib/faultline/x.tmp: No space left
// on device". Rooms prefix their own context; nobody parses it.
struct Error {
  std::string message;

  // "<what> <path>: <strerror(errno)>" — call right after the failing system call.
  static Error from_errno(std::string_view what, std::string_view path);
  static Error from_errno(std::string_view what, std::string_view path, int saved_errno);
};

// A value or the Error that kept it from being made.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}    // NOLINT: implicit, so `return value;` works
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit, so `return Error{...};` works

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success, or the Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit, so `return Error{...};` works

  bool ok() const { return !error_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace faultline
