// The unit types and the one unit parser (core/base/units.h).
#include "core/base/units.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace dtsim {
namespace {

// Meaningless arithmetic must not compile. These traits probe the operators without
// instantiating an error, so the proof runs at compile time, in this file.
template <class A, class B>
concept Addable = requires(A a, B b) {
  a + b;
};
template <class A, class B>
concept Divisible = requires(A a, B b) {
  a / b;
};
template <class A, class B>
concept Multipliable = requires(A a, B b) {
  a* b;
};

static_assert(!Addable<Bytes, Seconds>, "bytes + seconds must not compile");
static_assert(!Addable<Flops, Bytes>, "FLOPs + bytes must not compile");
static_assert(!Addable<Bytes, double>, "a unitless number cannot be added to bytes");
static_assert(!Addable<BytesPerSecond, FlopsPerSecond>, "bandwidth + compute rate");
static_assert(!Multipliable<Bytes, Bytes>, "bytes x bytes has no meaning here");
static_assert(!Divisible<Bytes, FlopsPerSecond>, "bytes / FLOP/s is not a time");
static_assert(!std::is_convertible_v<double, Bytes>, "no implicit construction from a double");
static_assert(!std::is_convertible_v<Bytes, double>, "no implicit unwrap to a double");
static_assert(Addable<Bytes, Bytes>);
static_assert(std::is_same_v<decltype(Bytes{} / BytesPerSecond{}), Seconds>);
static_assert(std::is_same_v<decltype(Flops{} / FlopsPerSecond{}), Seconds>);
static_assert(std::is_same_v<decltype(BytesPerSecond{} * Seconds{}), Bytes>);
static_assert(std::is_same_v<decltype(Bytes{} / Bytes{}), double>);

TEST(UnitParser, BytesDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB").value->value(), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("80GB").value->value(), 80e9);
  EXPECT_DOUBLE_EQ(parse_bytes("25MiB").value->value(), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1.5 KB").value->value(), 1500);
  EXPECT_DOUBLE_EQ(parse_bytes("512B").value->value(), 512);
  EXPECT_DOUBLE_EQ(parse_bytes("1e3MB").value->value(), 1e9);
}

TEST(UnitParser, RejectsUnitlessNegativeAndBits) {
  auto unitless = parse_bytes("80");
  EXPECT_FALSE(unitless);
  EXPECT_NE(unitless.error.find("no unit"), std::string::npos) << unitless.error;
  auto negative = parse_bytes("-4GiB");
  EXPECT_FALSE(negative);
  EXPECT_NE(negative.error.find("negative value"), std::string::npos) << negative.error;
  auto bits = parse_bytes("25Mb");
  EXPECT_FALSE(bits);
  EXPECT_NE(bits.error.find("bits, not bytes"), std::string::npos) << bits.error;
  EXPECT_FALSE(parse_bytes("80 parsecs"));
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("GiB"));
  EXPECT_FALSE(parse_bytes("1e400GB"));  // overflows a double
}

TEST(UnitParser, BandwidthBitsVersusBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value->value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s").value->value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GBps").value->value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s").value->value(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2TBps").value->value(), 2e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s").value->value(), 1073741824.0);
  EXPECT_FALSE(parse_bandwidth("400G"));
  EXPECT_FALSE(parse_bandwidth("400"));
  EXPECT_FALSE(parse_bandwidth("-1Gbps"));
}

TEST(UnitParser, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration("2us").value->value(), 2e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1.5us").value->value(), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_duration("300ns").value->value(), 300e-9);
  EXPECT_DOUBLE_EQ(parse_duration("5ms").value->value(), 5e-3);
  EXPECT_DOUBLE_EQ(parse_duration("30min").value->value(), 1800);
  EXPECT_DOUBLE_EQ(parse_duration("50000h").value->value(), 50000.0 * 3600);
  EXPECT_DOUBLE_EQ(parse_duration("3s").value->value(), 3);
  EXPECT_FALSE(parse_duration("3"));
  EXPECT_FALSE(parse_duration("3 fortnights"));
}

TEST(UnitParser, FlopRates) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOPS").value->value(), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOP/s").value->value(), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("1.979PFLOPS").value->value(), 1.979e15);
  EXPECT_DOUBLE_EQ(parse_flops("3.5PFLOP").value->value(), 3.5e15);
  EXPECT_FALSE(parse_flop_rate("312"));
  EXPECT_FALSE(parse_flop_rate("312TB"));
}

TEST(Units, MeaningfulArithmetic) {
  using namespace unit_literals;
  Seconds t = 1_GiB / BytesPerSecond(1073741824.0);
  EXPECT_DOUBLE_EQ(t.value(), 1.0);
  Bytes moved = 50_GBps * 2_s;
  EXPECT_DOUBLE_EQ(moved.value(), 100e9);
  EXPECT_DOUBLE_EQ((Flops(312e12) / 312_TFLOPS).value(), 1.0);
  EXPECT_DOUBLE_EQ((400_Gbps).value(), 50e9);
  EXPECT_DOUBLE_EQ(2_GiB / 1_GiB, 2.0);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(Bytes(80.0 * 1024 * 1024 * 1024)), "80.00 GiB");
  EXPECT_EQ(format_duration(Seconds(1.5e-6)), "1.500 us");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(50e9)), "50.00 GB/s");
}

}  // namespace
}  // namespace dtsim
