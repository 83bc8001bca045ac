// Strong unit types and the one parser for unit strings.
//
// Contract:
// - Bytes, Flops, Seconds, BytesPerSecond and FlopsPerSecond are distinct types wrapping a
//   double in base SI units (bytes, floating-point operations, seconds). Only physically
//   meaningful arithmetic compiles: Bytes / BytesPerSecond is Seconds, Bytes + Seconds is a
//   compile error (tests/core/units_test.cc proves it with static_asserts).
// - Unwrap with value() only at third-party boundaries, into a local named with the unit.
// - parse_* accept the unit strings of scenario files (docs/design.md section 4). They tell bits
//   from bytes ("Gbps" is gigabits per second, "GBps" and "GB/s" gigabytes per second) and
//   decimal from binary ("GB" = 1e9 bytes, "GiB" = 2^30 bytes). A number without a unit, a
//   negative number, and a bit unit where bytes are required are errors with a hint.
// Thread safety: all functions are pure.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace dtsim {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  // The raw value in the base unit of Tag (bytes, FLOPs, seconds, bytes/s, FLOP/s).
  constexpr double value() const { return value_; }

  constexpr Quantity operator+(Quantity o) const { return Quantity(value_ + o.value_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(value_ - o.value_); }
  constexpr Quantity operator-() const { return Quantity(-value_); }
  constexpr Quantity& operator+=(Quantity o) {
    value_ += o.value_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    value_ -= o.value_;
    return *this;
  }
  constexpr Quantity operator*(double k) const { return Quantity(value_ * k); }
  constexpr Quantity operator/(double k) const { return Quantity(value_ / k); }
  friend constexpr Quantity operator*(double k, Quantity q) { return Quantity(k * q.value_); }
  // The ratio of two quantities of one kind is a plain number.
  constexpr double operator/(Quantity o) const { return value_ / o.value_; }
  constexpr auto operator<=>(const Quantity&) const = default;

 private:
  double value_ = 0.0;
};

struct BytesTag {};
struct FlopsTag {};
struct SecondsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};
struct WattsTag {};
struct JoulesTag {};

using Bytes = Quantity<BytesTag>;
using Flops = Quantity<FlopsTag>;
using Seconds = Quantity<SecondsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;
using Watts = Quantity<WattsTag>;    // power, W
using Joules = Quantity<JoulesTag>;  // energy, J

// Cross-unit arithmetic: only the combinations that mean something.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) {
  return Seconds(b.value() / r.value());
}
constexpr Seconds operator/(Flops f, FlopsPerSecond r) {
  return Seconds(f.value() / r.value());
}
constexpr BytesPerSecond operator/(Bytes b, Seconds t) {
  return BytesPerSecond(b.value() / t.value());
}
constexpr FlopsPerSecond operator/(Flops f, Seconds t) {
  return FlopsPerSecond(f.value() / t.value());
}
constexpr Bytes operator*(BytesPerSecond r, Seconds t) {
  return Bytes(r.value() * t.value());
}
constexpr Bytes operator*(Seconds t, BytesPerSecond r) {
  return r * t;
}
constexpr Flops operator*(FlopsPerSecond r, Seconds t) {
  return Flops(r.value() * t.value());
}
constexpr Flops operator*(Seconds t, FlopsPerSecond r) {
  return r * t;
}

constexpr Joules operator*(Watts p, Seconds t) {
  return Joules(p.value() * t.value());
}
constexpr Joules operator*(Seconds t, Watts p) {
  return p * t;
}
constexpr Watts operator/(Joules e, Seconds t) {
  return Watts(e.value() / t.value());
}

namespace unit_literals {
constexpr Bytes operator""_B(long double v) {
  return Bytes(static_cast<double>(v));
}
constexpr Bytes operator""_B(unsigned long long v) {
  return Bytes(static_cast<double>(v));
}
constexpr Bytes operator""_KiB(unsigned long long v) {
  return Bytes(v * 1024.0);
}
constexpr Bytes operator""_MiB(unsigned long long v) {
  return Bytes(v * 1048576.0);
}
constexpr Bytes operator""_GiB(unsigned long long v) {
  return Bytes(v * 1073741824.0);
}
constexpr Bytes operator""_GB(unsigned long long v) {
  return Bytes(v * 1e9);
}
constexpr Seconds operator""_s(long double v) {
  return Seconds(static_cast<double>(v));
}
constexpr Seconds operator""_s(unsigned long long v) {
  return Seconds(static_cast<double>(v));
}
constexpr Seconds operator""_ms(unsigned long long v) {
  return Seconds(v * 1e-3);
}
constexpr Seconds operator""_us(long double v) {
  return Seconds(static_cast<double>(v) * 1e-6);
}
constexpr Seconds operator""_us(unsigned long long v) {
  return Seconds(v * 1e-6);
}
constexpr BytesPerSecond operator""_GBps(unsigned long long v) {
  return BytesPerSecond(v * 1e9);
}
constexpr BytesPerSecond operator""_Gbps(unsigned long long v) {
  return BytesPerSecond(v * 1e9 / 8.0);
}
constexpr FlopsPerSecond operator""_TFLOPS(long double v) {
  return FlopsPerSecond(static_cast<double>(v) * 1e12);
}
constexpr FlopsPerSecond operator""_TFLOPS(unsigned long long v) {
  return FlopsPerSecond(v * 1e12);
}
}  // namespace unit_literals

// The outcome of parsing a unit string: a value, or a one-line reason that names what was
// expected (for example "expected a size with a byte unit such as 80GiB, found 80Gb: Gb is
// gigabits").
template <class Q>
struct Parsed {
  std::optional<Q> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
};

Parsed<Bytes> parse_bytes(std::string_view text);
Parsed<BytesPerSecond> parse_bandwidth(std::string_view text);
Parsed<Seconds> parse_duration(std::string_view text);
Parsed<FlopsPerSecond> parse_flop_rate(std::string_view text);
Parsed<Flops> parse_flops(std::string_view text);
Parsed<Watts> parse_power(std::string_view text);  // W, kW, MW

// A price: an amount and an ISO 4217 currency code ("2.49 USD", "2.49USD"), optionally with an
// SI suffix on the amount ("2M USD" is two million). The amount is positive.
struct Money {
  double amount = 0;
  std::string currency;  // three capital letters
};
Parsed<Money> parse_money(std::string_view text);
std::string format_money(const Money& m);  // "1.23 M USD", "2.49 USD"

// Human-readable renderings with units, for tables and messages ("80 GiB", "1.50 us").
std::string format_bytes(Bytes b);
std::string format_duration(Seconds t);
// One number through a printf format with one double conversion, e.g. ("%.1f GB/s", 12.34).
std::string format_number(const char* printf_format, double value);
std::string format_bandwidth(BytesPerSecond r);  // in GB/s (decimal), as nccl-tests does
std::string format_flop_rate(FlopsPerSecond r);  // in TFLOP/s
std::string format_flops(Flops f);
std::string format_power(Watts p);    // "705 W", "1.20 MW"
std::string format_energy(Joules e);  // in kWh, MWh or GWh

}  // namespace dtsim
