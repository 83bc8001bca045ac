#include "core/base/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace dtsim {
namespace {

struct UnitEntry {
  std::string_view symbol;
  double factor;  // to the base unit
};

// A number followed by a unit symbol, with optional spaces between them.
struct Lexed {
  bool has_number = false;
  double number = 0;
  std::string_view unit;
  std::string_view number_text;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Lexed lex(std::string_view text) {
  Lexed out;
  text = trim(text);
  size_t i = 0;
  auto is_num_char = [&](size_t k) {
    char c = text[k];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-')
      return true;
    // An exponent: 'e' or 'E' followed by a digit or sign (so "1e3" is a number but "1EB" is not).
    if ((c == 'e' || c == 'E') && k > 0 && k + 1 < text.size()) {
      char n = text[k + 1];
      return std::isdigit(static_cast<unsigned char>(n)) || n == '+' || n == '-';
    }
    return false;
  };
  while (i < text.size() && is_num_char(i)) ++i;
  out.number_text = text.substr(0, i);
  if (i > 0) {
    std::string num(text.substr(0, i));
    if (num.front() == '+') num.erase(0, 1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec == std::errc() && ptr == num.data() + num.size()) {
      out.has_number = true;
      out.number = v;
    } else if (ec == std::errc::result_out_of_range) {
      out.has_number = true;
      out.number = HUGE_VAL;
    }
  }
  out.unit = trim(text.substr(i));
  return out;
}

const UnitEntry* find_unit(std::string_view symbol, const auto& table) {
  for (const auto& e : table)
    if (e.symbol == symbol) return &e;
  return nullptr;
}

constexpr std::array kByteUnits{UnitEntry{"B", 1},
                                UnitEntry{"kB", 1e3},
                                UnitEntry{"KB", 1e3},
                                UnitEntry{"MB", 1e6},
                                UnitEntry{"GB", 1e9},
                                UnitEntry{"TB", 1e12},
                                UnitEntry{"PB", 1e15},
                                UnitEntry{"KiB", 1024.0},
                                UnitEntry{"MiB", 1048576.0},
                                UnitEntry{"GiB", 1073741824.0},
                                UnitEntry{"TiB", 1099511627776.0},
                                UnitEntry{"PiB", 1125899906842624.0}};

// Bit-valued symbols that users write by mistake where bytes are required.
constexpr std::array kBitUnits{
    UnitEntry{"b", 1},        UnitEntry{"kb", 1e3},        UnitEntry{"Kb", 1e3},
    UnitEntry{"Mb", 1e6},     UnitEntry{"Gb", 1e9},        UnitEntry{"Tb", 1e12},
    UnitEntry{"Kib", 1024.0}, UnitEntry{"Mib", 1048576.0}, UnitEntry{"Gib", 1073741824.0}};

constexpr std::array kDurationUnits{
    UnitEntry{"ns", 1e-9}, UnitEntry{"us", 1e-6}, UnitEntry{"\xC2\xB5s", 1e-6},
    UnitEntry{"ms", 1e-3}, UnitEntry{"s", 1},     UnitEntry{"min", 60},
    UnitEntry{"h", 3600},  UnitEntry{"d", 86400}};

constexpr std::array kFlopPrefixes{UnitEntry{"", 1},    UnitEntry{"k", 1e3},  UnitEntry{"M", 1e6},
                                   UnitEntry{"G", 1e9}, UnitEntry{"T", 1e12}, UnitEntry{"P", 1e15},
                                   UnitEntry{"E", 1e18}};

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// Shared front half of every parser: a finite, non-negative number and a unit.
template <class Q>
bool lex_number(std::string_view text, std::string_view what, Lexed& lx, Parsed<Q>& out) {
  lx = lex(text);
  if (trim(text).empty()) {
    out.error = "expected " + std::string(what) + ", found an empty value";
    return false;
  }
  if (!lx.has_number) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text));
    return false;
  }
  if (!std::isfinite(lx.number)) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) +
                ", which is too large to represent";
    return false;
  }
  if (lx.number < 0) {
    out.error =
        "expected " + std::string(what) + ", found the negative value " + quoted(trim(text));
    return false;
  }
  if (lx.unit.empty()) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) +
                " with no unit (a number needs a unit here)";
    return false;
  }
  return true;
}

}  // namespace

Parsed<Bytes> parse_bytes(std::string_view text) {
  Parsed<Bytes> out;
  Lexed lx;
  constexpr std::string_view what = "a size with a byte unit (B, KB, MB, GB, KiB, MiB, GiB, ...)";
  if (!lex_number(text, what, lx, out)) return out;
  if (const auto* u = find_unit(lx.unit, kByteUnits)) {
    out.value = Bytes(lx.number * u->factor);
    return out;
  }
  if (find_unit(lx.unit, kBitUnits)) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) + ": " +
                quoted(lx.unit) + " is bits, not bytes (write B for bytes, e.g. " +
                std::string(lx.number_text) + std::string(lx.unit.substr(0, lx.unit.size() - 1)) +
                (lx.unit.back() == 'b' ? "B" : "") + ")";
    return out;
  }
  out.error = "expected " + std::string(what) + ", found unknown unit " + quoted(lx.unit) + " in " +
              quoted(trim(text));
  return out;
}

Parsed<BytesPerSecond> parse_bandwidth(std::string_view text) {
  Parsed<BytesPerSecond> out;
  Lexed lx;
  constexpr std::string_view what =
      "a bandwidth such as 400Gbps (bits/s), 50GBps or 50GB/s (bytes/s)";
  if (!lex_number(text, what, lx, out)) return out;
  std::string_view unit = lx.unit;
  std::string_view size;
  if (unit.ends_with("ps")) {
    size = unit.substr(0, unit.size() - 2);
  } else if (unit.ends_with("/s")) {
    size = unit.substr(0, unit.size() - 2);
  } else {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) +
                ": the unit needs a per-second suffix (ps or /s)";
    return out;
  }
  if (const auto* u = find_unit(size, kByteUnits)) {
    out.value = BytesPerSecond(lx.number * u->factor);
    return out;
  }
  if (const auto* u = find_unit(size, kBitUnits)) {
    out.value = BytesPerSecond(lx.number * u->factor / 8.0);
    return out;
  }
  out.error = "expected " + std::string(what) + ", found unknown unit " + quoted(unit);
  return out;
}

namespace {
// A number and one of `units` (each a factor to Q's base unit).
template <class Q>
Parsed<Q> parse_with_units(std::string_view text, std::string_view what, const auto& units) {
  Parsed<Q> out;
  Lexed lx;
  if (!lex_number(text, what, lx, out)) return out;
  if (const auto* u = find_unit(lx.unit, units)) {
    out.value = Q(lx.number * u->factor);
    return out;
  }
  out.error = "expected " + std::string(what) + ", found unknown unit " + quoted(lx.unit) + " in " +
              quoted(trim(text));
  return out;
}
}  // namespace

Parsed<Seconds> parse_duration(std::string_view text) {
  return parse_with_units<Seconds>(text, "a duration with a unit (ns, us, ms, s, min, h, d)",
                                   kDurationUnits);
}

namespace {
// "TFLOPS", "TFLOP/s" (rates) or "TFLOP" (counts), with an SI prefix.
template <class Q>
Parsed<Q> parse_flop_quantity(std::string_view text, bool rate) {
  Parsed<Q> out;
  Lexed lx;
  const std::string what =
      rate ? "a compute rate such as 312TFLOPS or 312TFLOP/s" : "a FLOP count such as 3.5PFLOP";
  if (!lex_number(text, what, lx, out)) return out;
  std::string_view unit = lx.unit;
  std::string_view prefix;
  bool ok = false;
  for (std::string_view suffix : rate ? std::array<std::string_view, 2>{"FLOP/s", "FLOPS"}
                                      : std::array<std::string_view, 2>{"FLOPs", "FLOP"}) {
    if (unit.ends_with(suffix)) {
      prefix = unit.substr(0, unit.size() - suffix.size());
      ok = true;
      break;
    }
  }
  if (ok) {
    if (const auto* p = find_unit(prefix, kFlopPrefixes)) {
      out.value = Q(lx.number * p->factor);
      return out;
    }
  }
  out.error =
      "expected " + what + ", found unknown unit " + quoted(unit) + " in " + quoted(trim(text));
  return out;
}
}  // namespace

Parsed<FlopsPerSecond> parse_flop_rate(std::string_view text) {
  return parse_flop_quantity<FlopsPerSecond>(text, true);
}
Parsed<Flops> parse_flops(std::string_view text) {
  return parse_flop_quantity<Flops>(text, false);
}

Parsed<Watts> parse_power(std::string_view text) {
  constexpr std::array kPowerUnits{UnitEntry{"W", 1}, UnitEntry{"kW", 1e3}, UnitEntry{"MW", 1e6}};
  return parse_with_units<Watts>(text, "a power with a unit (W, kW, MW), such as 700W",
                                 kPowerUnits);
}

Parsed<Money> parse_money(std::string_view text) {
  Parsed<Money> out;
  Lexed lx;
  constexpr std::string_view what =
      "an amount and a currency code, such as 2.49USD or 2M USD (ISO 4217: USD, EUR, ...)";
  if (!lex_number(text, what, lx, out)) return out;
  std::string_view unit = lx.unit;
  double factor = 1;
  // An SI suffix on the amount, separated from the code by a space or not: "2MUSD", "2M USD".
  constexpr std::array kMoneyPrefixes{UnitEntry{"k", 1e3}, UnitEntry{"K", 1e3}, UnitEntry{"M", 1e6},
                                      UnitEntry{"B", 1e9}};
  if (unit.size() > 3) {
    std::string_view head = trim(unit.substr(0, unit.size() - 3));
    if (const auto* p = find_unit(head, kMoneyPrefixes)) {
      factor = p->factor;
      unit = unit.substr(unit.size() - 3);
    }
  }
  const bool code = unit.size() == 3 && std::all_of(unit.begin(), unit.end(),
                                                    [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!code) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) +
                ": the currency must be a three-letter code in capitals";
    return out;
  }
  if (lx.number <= 0) {
    out.error = "expected " + std::string(what) + ", found " + quoted(trim(text)) +
                ": a price must be greater than zero";
    return out;
  }
  out.value = Money{lx.number * factor, std::string(unit)};
  return out;
}

namespace {
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
}  // namespace

std::string format_bytes(Bytes b) {
  double v = b.value();
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (std::fabs(v) >= 1024.0 && i < 5) {
    v /= 1024.0;
    ++i;
  }
  return fixed(v, i == 0 ? 0 : 2) + " " + units[i];
}

std::string format_duration(Seconds t) {
  double s = t.value();
  double a = std::fabs(s);
  if (a >= 1.0 || a == 0.0) return fixed(s, 3) + " s";
  if (a >= 1e-3) return fixed(s * 1e3, 3) + " ms";
  if (a >= 1e-6) return fixed(s * 1e6, 3) + " us";
  return fixed(s * 1e9, 1) + " ns";
}

std::string format_bandwidth(BytesPerSecond r) {
  return fixed(r.value() / 1e9, 2) + " GB/s";
}
std::string format_flop_rate(FlopsPerSecond r) {
  return fixed(r.value() / 1e12, 2) + " TFLOP/s";
}
std::string format_flops(Flops f) {
  double v = f.value();
  if (v >= 1e15) return fixed(v / 1e15, 3) + " PFLOP";
  if (v >= 1e12) return fixed(v / 1e12, 3) + " TFLOP";
  return fixed(v / 1e9, 3) + " GFLOP";
}

std::string format_money(const Money& m) {
  const double a = std::fabs(m.amount);
  if (a >= 1e9) return fixed(m.amount / 1e9, 2) + " B " + m.currency;
  if (a >= 1e6) return fixed(m.amount / 1e6, 2) + " M " + m.currency;
  if (a >= 1e4) return fixed(m.amount / 1e3, 1) + " k " + m.currency;
  return fixed(m.amount, 2) + " " + m.currency;
}

std::string format_power(Watts p) {
  const double w = p.value();
  if (std::fabs(w) >= 1e6) return fixed(w / 1e6, 2) + " MW";
  if (std::fabs(w) >= 1e4) return fixed(w / 1e3, 1) + " kW";
  return fixed(w, 0) + " W";
}

std::string format_energy(Joules e) {
  const double kwh = e.value() / 3.6e6;
  if (std::fabs(kwh) >= 1e6) return fixed(kwh / 1e6, 2) + " GWh";
  if (std::fabs(kwh) >= 1e3) return fixed(kwh / 1e3, 2) + " MWh";
  if (std::fabs(kwh) >= 1) return fixed(kwh, 2) + " kWh";
  if (std::fabs(e.value()) >= 1e3) return fixed(e.value() / 1e3, 1) + " kJ";
  return fixed(e.value(), 1) + " J";
}

std::string format_number(const char* printf_format, double value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, printf_format, value);
  return buf;
}

}  // namespace dtsim
