// Result<T>: the value of an operation that can fail in an expected way (bad input, a missing
// file). Library code returns these instead of exiting; main() prints the message once.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace vramsim {

// A fully formatted diagnostic, e.g.
// "configs/x.yaml:12:16: error: hardware.link.bandwidth: expected a bandwidth like \"13.9GB/s\", got \"-13.9\"".
struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}    // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  // Precondition: ok(). Violations are programming errors and throw std::logic_error.
  T& value() & { check(); return std::get<T>(state_); }
  const T& value() const& { check(); return std::get<T>(state_); }
  T&& value() && { check(); return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Precondition: !ok().
  const Error& error() const {
    if (ok()) throw std::logic_error("Result::error() called on a value");
    return std::get<Error>(state_);
  }

 private:
  void check() const {
    if (!ok()) throw std::logic_error("Result::value() called on an error: " + std::get<Error>(state_).message);
  }
  std::variant<T, Error> state_;
};

// Status: a Result with no value.
struct Ok {};
using Status = Result<Ok>;

}  // namespace vramsim
