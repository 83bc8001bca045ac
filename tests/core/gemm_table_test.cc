// The measured GEMM table (core/hardware/gemm_table.h) and its use in compute_time
// (core/exec/compute_cost.h): exact at grid points, log-space trilinear and monotone between them,
// clamped outside, a full grid or an error naming the missing point.
#include "core/hardware/gemm_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/exec/compute_cost.h"

namespace dtsim {
namespace {

const std::vector<double> kAxis = {64, 256, 1024};

// A rate that grows along every axis (a monotone grid), in FLOP/s.
double monotone_rate(double m, double n, double k) {
  auto f = [](double x) { return 1 + std::log2(x); };
  return 1e12 * f(m) * (2 * f(n)) * (3 * f(k)) / 1000;
}

std::vector<GemmPoint> grid(double (*rate)(double, double, double)) {
  std::vector<GemmPoint> out;
  for (double m : kAxis)
    for (double n : kAxis)
      for (double k : kAxis) out.push_back({m, n, k, FlopsPerSecond(rate(m, n, k))});
  return out;
}

// Rates with no order at all, so that exactness cannot come from a smooth formula.
double scrambled_rate(double m, double n, double k) {
  return 1e12 * (1 + std::fmod(m * 7 + n * 13 + k * 3, 97));
}

std::string error_of(const std::vector<GemmPoint>& samples) {
  try {
    GemmTable::from_samples(samples);
  } catch (const InputError& e) {
    return e.diagnostics().front().message;
  }
  return "";
}

TEST(GemmTable, ReproducesEveryGridPointExactly) {
  std::vector<GemmPoint> samples = grid(scrambled_rate);
  // Sample order must not matter: hand them over backwards.
  const GemmTable t = GemmTable::from_samples({samples.rbegin(), samples.rend()});
  for (const GemmPoint& p : samples)
    EXPECT_EQ(t.rate(p.m, p.n, p.k).value(), p.rate.value()) << p.m << " " << p.n << " " << p.k;
  EXPECT_EQ(t.points().size(), 27u);
  EXPECT_EQ(t.m_values(), kAxis);
}

TEST(GemmTable, InterpolatesLinearlyInLog2OfTheShape) {
  // One axis varies: at m = 128, halfway between 64 and 256 in log2, the rate is the mean of the
  // two; at m = 2^7.5 a quarter of the way.
  const GemmTable t = GemmTable::from_samples(
      {{64, 512, 512, FlopsPerSecond(100e12)}, {256, 512, 512, FlopsPerSecond(300e12)}});
  EXPECT_DOUBLE_EQ(t.rate(128, 512, 512).value(), 200e12);
  EXPECT_DOUBLE_EQ(t.rate(std::pow(2.0, 6.5), 512, 512).value(), 150e12);
  // Three axes: the centre of a cell in log space is the mean of its eight corners.
  const GemmTable full = GemmTable::from_samples(grid(scrambled_rate));
  double mean = 0;
  for (double m : {64.0, 256.0})
    for (double n : {64.0, 256.0})
      for (double k : {64.0, 256.0}) mean += scrambled_rate(m, n, k) / 8;
  EXPECT_NEAR(full.rate(128, 128, 128).value(), mean, mean * 1e-12);
}

TEST(GemmTable, MonotoneBetweenNeighbouringPointsOnAMonotoneGrid) {
  const GemmTable t = GemmTable::from_samples(grid(monotone_rate));
  // Sweep each axis from below the grid to beyond it in small log steps, the other two at grid
  // values and between them; the rate must never fall (up to rounding, 1e-12 relative) and must
  // stay between the rates of the cell's corners.
  const std::vector<double> others = {64, 100, 256, 700, 1024};
  for (int axis = 0; axis < 3; ++axis)
    for (double a : others)
      for (double b : others) {
        double previous = 0;
        for (double e = 5; e <= 11; e += 1.0 / 64) {
          const double x = std::pow(2.0, e);
          const double m = axis == 0 ? x : a, n = axis == 1 ? x : (axis == 0 ? a : b),
                       k = axis == 2 ? x : b;
          const double r = t.rate(m, n, k).value();
          EXPECT_GE(r, previous * (1 - 1e-12)) << axis << " at " << m << " " << n << " " << k;
          EXPECT_GE(r, monotone_rate(64, 64, 64) * (1 - 1e-12));
          EXPECT_LE(r, monotone_rate(1024, 1024, 1024) * (1 + 1e-12));
          previous = r;
        }
      }
}

TEST(GemmTable, ClampsToTheGridsEdges) {
  const GemmTable t = GemmTable::from_samples(grid(scrambled_rate));
  // Beyond the grid along one axis: the edge value of that axis.
  EXPECT_EQ(t.rate(1 << 20, 256, 64).value(), scrambled_rate(1024, 256, 64));
  EXPECT_EQ(t.rate(1, 256, 64).value(), scrambled_rate(64, 256, 64));
  EXPECT_EQ(t.rate(0, 1e9, 0).value(), scrambled_rate(64, 1024, 64));
  // Beyond on every axis: the corner.
  EXPECT_EQ(t.rate(1e7, 1e7, 1e7).value(), scrambled_rate(1024, 1024, 1024));
  EXPECT_EQ(t.rate(2, 3, 4).value(), scrambled_rate(64, 64, 64));
  // Between grid values on one axis and beyond on another: interpolated along the first only.
  EXPECT_DOUBLE_EQ(t.rate(128, 1e6, 64).value(),
                   (scrambled_rate(64, 1024, 64) + scrambled_rate(256, 1024, 64)) / 2);
}

TEST(GemmTable, LargestPointAndBestRate) {
  const GemmTable t = GemmTable::from_samples(grid(scrambled_rate));
  EXPECT_EQ(t.rate_at_largest().value(), scrambled_rate(1024, 1024, 1024));
  double best = 0;
  for (const GemmPoint& p : grid(scrambled_rate)) best = std::max(best, p.rate.value());
  EXPECT_EQ(t.best_rate().value(), best);
  EXPECT_TRUE(GemmTable().empty());
  EXPECT_EQ(GemmTable().best_rate().value(), 0);
}

TEST(GemmTable, AnIncompleteGridIsAnErrorNamingTheMissingPoint) {
  std::vector<GemmPoint> samples = grid(monotone_rate);
  std::erase_if(samples, [](const GemmPoint& p) { return p.m == 256 && p.n == 1024 && p.k == 64; });
  const std::string message = error_of(samples);
  EXPECT_NE(message.find("not complete"), std::string::npos) << message;
  EXPECT_NE(message.find("m=256 n=1024 k=64 is missing"), std::string::npos) << message;
  EXPECT_NE(message.find("{64, 256, 1024}"), std::string::npos) << message;

  // An L-shaped set (two points that differ in two dimensions) is not a grid either.
  EXPECT_NE(error_of({{64, 64, 64, FlopsPerSecond(1e12)}, {128, 128, 64, FlopsPerSecond(2e12)}})
                .find("is missing"),
            std::string::npos);
}

TEST(GemmTable, RejectsRepeatedAndInvalidSamples) {
  EXPECT_NE(error_of({{64, 64, 64, FlopsPerSecond(1e12)}, {64, 64, 64, FlopsPerSecond(2e12)}})
                .find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of({{64, 0, 64, FlopsPerSecond(1e12)}}).find("n must be a whole number"),
            std::string::npos);
  EXPECT_NE(error_of({{64, 64, 64.5, FlopsPerSecond(1e12)}}).find("k must be a whole number"),
            std::string::npos);
  EXPECT_NE(error_of({{64, 64, 64, FlopsPerSecond(0)}}).find("positive, finite rate"),
            std::string::npos);
  EXPECT_NE(error_of({}).find("no samples"), std::string::npos);
}

// compute_time with a table: flops over the table's rate plus the launch overhead, no
// gemm_efficiency and no wave quantization; a batch multiplies the work, not the per-GEMM shape.
GpuSpec gpu_with_table() {
  GpuSpec g;
  g.name = "test-gpu";
  g.peak = {{DType::kBf16, FlopsPerSecond(1000e12)}, {DType::kFp32, FlopsPerSecond(60e12)}};
  g.memory_bandwidth = BytesPerSecond(3e12);
  g.gemm_efficiency = 0.8;
  g.attention_efficiency = 0.4;
  g.memory_efficiency = 0.9;
  g.kernel_launch_overhead = Seconds(5e-6);
  g.sm_count = 132;
  g.gemm_table[DType::kBf16] = GemmTable::from_samples(grid(monotone_rate));
  return g;
}

ComputeOp gemm_op(KernelKind kind, DType dtype, GemmShape shape) {
  ComputeOp op;
  op.kind = kind;
  op.dtype = dtype;
  op.shape = shape;
  op.flops = Flops(shape.known() ? 2 * shape.batch * shape.m * shape.n * shape.k : 1e12);
  op.bytes = Bytes(1e3);  // far under the compute time: the op is compute-bound
  return op;
}

TEST(GemmTableCost, GemmsRunAtTheTablesRateAtTheirPerGemmShape) {
  const GpuSpec g = gpu_with_table();
  const GemmTable& t = g.gemm_table.at(DType::kBf16);
  const GemmShape shape{4, 300, 700, 100};  // a batch of 4 GEMMs, off the grid
  const ComputeOp op = gemm_op(KernelKind::kGemm, DType::kBf16, shape);
  const Seconds expected = op.flops / t.rate(300, 700, 100) + g.kernel_launch_overhead;
  EXPECT_EQ(compute_time(op, g).value(), expected.value());
  // The batch does not move the look-up: one GEMM of the shape takes a quarter of the time.
  const ComputeOp one = gemm_op(KernelKind::kGemm, DType::kBf16, {1, 300, 700, 100});
  EXPECT_DOUBLE_EQ((compute_time(one, g) - g.kernel_launch_overhead).value(),
                   (expected - g.kernel_launch_overhead).value() / 4);
}

TEST(GemmTableCost, UnknownShapesRunAtTheLargestGridPoint) {
  const GpuSpec g = gpu_with_table();
  const ComputeOp op = gemm_op(KernelKind::kGemm, DType::kBf16, GemmShape{});
  EXPECT_EQ(compute_time(op, g).value(),
            (op.flops / g.gemm_table.at(DType::kBf16).rate_at_largest() + g.kernel_launch_overhead)
                .value());
}

TEST(GemmTableCost, AttentionRunsAtItsFactorOfTheTablesRate) {
  GpuSpec g = gpu_with_table();
  const GemmShape shape{8, 1024, 1024, 128};
  const ComputeOp op = gemm_op(KernelKind::kAttention, DType::kBf16, shape);
  const FlopsPerSecond gemm = g.gemm_table.at(DType::kBf16).rate(1024, 1024, 128);
  // Without a measured factor: the catalog's attention/GEMM efficiency ratio, 0.4 / 0.8.
  EXPECT_DOUBLE_EQ(compute_time(op, g).value(),
                   (op.flops / (gemm * 0.5) + g.kernel_launch_overhead).value());
  g.attention_factor = 0.7;
  EXPECT_DOUBLE_EQ(compute_time(op, g).value(),
                   (op.flops / (gemm * 0.7) + g.kernel_launch_overhead).value());
}

TEST(GemmTableCost, ADtypeWithoutATableKeepsTheRoofline) {
  const GpuSpec with = gpu_with_table();
  GpuSpec without = with;
  without.gemm_table.clear();
  for (KernelKind kind : {KernelKind::kGemm, KernelKind::kAttention}) {
    const ComputeOp op = gemm_op(kind, DType::kFp32, {2, 1000, 3000, 500});
    EXPECT_EQ(compute_time(op, with).value(), compute_time(op, without).value());
    EXPECT_FALSE(measured_flop_rate(with, kind, DType::kFp32, op.shape));
  }
  // Memory-bound and elementwise kernels are the same with or without a table.
  ComputeOp add;
  add.kind = KernelKind::kElementwise;
  add.dtype = DType::kBf16;
  add.flops = Flops(1e9);
  add.bytes = Bytes(6e9);
  EXPECT_EQ(compute_time(add, with).value(), compute_time(add, without).value());
  EXPECT_DOUBLE_EQ(compute_time(add, with).value(), 6e9 / (3e12 * 0.9) + 5e-6);
}

}  // namespace
}  // namespace dtsim
