// Published kernel rates (core/hardware/kernel_rates.h, published_rates.cc): the interpolation
// reproduces every published row exactly and stays monotone between neighbouring rows, each row
// is cited, the cost model uses the curves per dtype, and a scenario's own efficiency replaces
// them.
#include <gtest/gtest.h>

#include <cmath>

#include "core/base/error.h"
#include "core/exec/compute_cost.h"
#include "core/hardware/catalog.h"
#include "core/hardware/kernel_rates.h"
#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

using namespace unit_literals;

const GpuSpec& gpu(const char* name) {
  const GpuSpec* g = find_gpu(name);
  EXPECT_NE(g, nullptr) << name;
  return *g;
}

TEST(KernelRates, A100H100AndH200HaveBf16AndHopperHasFp8GemmRows) {
  for (const char* name : {"A100-SXM-80GB", "A100-SXM-40GB", "H100-SXM", "H200-SXM"}) {
    const GpuSpec& g = gpu(name);
    ASSERT_TRUE(g.gemm_curve.count(DType::kBf16)) << name;
    EXPECT_GE(g.gemm_curve.at(DType::kBf16).rows().size(), 5u) << name;
    ASSERT_TRUE(g.attention_curve.count(DType::kBf16)) << name;
  }
  for (const char* name : {"H100-SXM", "H200-SXM"}) {
    ASSERT_TRUE(gpu(name).gemm_curve.count(DType::kFp8)) << name;
    EXPECT_GE(gpu(name).gemm_curve.at(DType::kFp8).rows().size(), 5u) << name;
  }
  // Ampere has no FP8 tensor cores: no FP8 rows to publish.
  EXPECT_FALSE(gpu("A100-SXM-80GB").gemm_curve.count(DType::kFp8));
}

TEST(KernelRates, EveryRowIsCitedAndReproducedExactlyAtItsShape) {
  int rows = 0;
  for (const GpuSpec& g : gpu_catalog()) {
    for (const auto& [dtype, curve] : g.gemm_curve) {
      for (const GemmRow& r : curve.rows()) {
        EXPECT_FALSE(r.source.empty()) << g.name;
        const GemmShape shape{1, r.m, r.n, r.k};
        const double rate = published_flop_rate(g, KernelKind::kGemm, dtype, shape)->value();
        EXPECT_NEAR(rate, r.rate.value(), 1e-12 * r.rate.value())
            << g.name << " " << to_string(dtype) << " " << r.m << "x" << r.n << "x" << r.k;
        ++rows;
      }
    }
    for (const auto& [dtype, curve] : g.attention_curve) {
      for (const AttentionRow& r : curve.rows()) {
        EXPECT_FALSE(r.source.empty()) << g.name;
        GemmShape shape{64, r.seq, r.seq, r.head_dim};
        shape.fused_attention = true;
        shape.causal = r.causal;
        const double rate = published_flop_rate(g, KernelKind::kAttention, dtype, shape)->value();
        // The op counts the whole square; the benchmark counts half of it under a causal mask.
        const double benchmark_rate = r.causal ? rate / 2 : rate;
        EXPECT_NEAR(benchmark_rate, r.rate.value(), 1e-12 * r.rate.value())
            << g.name << " d" << r.head_dim << " s" << r.seq << (r.causal ? " causal" : "");
        ++rows;
      }
    }
  }
  EXPECT_GT(rows, 100);
}

TEST(KernelRates, TheWaveFreeCurveIsMonotoneBetweenNeighbouringRows) {
  for (const GpuSpec& g : gpu_catalog()) {
    for (const auto& [dtype, curve] : g.gemm_curve) {
      const auto& rows = curve.rows();
      for (size_t i = 0; i + 1 < rows.size(); ++i) {
        const double x0 = std::log2(2 * rows[i].m * rows[i].n * rows[i].k);
        const double x1 = std::log2(2 * rows[i + 1].m * rows[i + 1].n * rows[i + 1].k);
        const double y0 = curve.wave_free(x0), y1 = curve.wave_free(x1);
        const double direction = y1 >= y0 ? 1 : -1;
        double previous = y0;
        for (int step = 1; step <= 64; ++step) {
          const double y = curve.wave_free(x0 + (x1 - x0) * step / 64);
          EXPECT_GE(direction * (y - previous), -1e-12) << g.name << " between rows " << i;
          EXPECT_GE(y, std::min(y0, y1) - 1e-12);
          EXPECT_LE(y, std::max(y0, y1) + 1e-12);
          previous = y;
        }
      }
      // Beyond the rows the curve is clamped: no extrapolation.
      const auto& first = rows.front();
      const double x_first = std::log2(2 * first.m * first.n * first.k);
      EXPECT_EQ(curve.wave_free(x_first - 10), curve.wave_free(x_first));
    }
  }
}

TEST(KernelRates, NoShapeRunsFasterThanTheBestPublishedRow) {
  for (const GpuSpec& g : gpu_catalog()) {
    for (const auto& [dtype, curve] : g.gemm_curve) {
      double best = 0;
      for (const GemmRow& r : curve.rows()) best = std::max(best, r.rate.value());
      const double peak = g.peak_for(dtype).value();
      // Small shapes whose 256 x 128 quantization overstates their waste, and large ones.
      for (double m : {576.0, 1024.0, 1728.0, 8192.0, 27648.0})
        for (double n : {640.0, 2304.0, 13824.0})
          for (double k : {512.0, 4096.0, 16384.0})
            EXPECT_LE(curve.efficiency(1, m, n, k, g.sm_count) * peak, best * (1 + 1e-12))
                << g.name << " " << m << "x" << n << "x" << k;
    }
  }
}

TEST(KernelRates, AttentionBetweenHeadDimensionsAndLengthsLiesBetweenTheRows) {
  const AttentionCurve& a = gpu("A100-SXM-80GB").attention_curve.at(DType::kBf16);
  const double peak = 312e12;
  // Causal, d = 64 and 128 at 2k tokens: 140 and 155 TFLOP/s (FlashAttention-2, A100).
  EXPECT_NEAR(a.efficiency(64, 2048, true) * peak, 140e12, 1e3);
  EXPECT_NEAR(a.efficiency(128, 2048, true) * peak, 155e12, 1e3);
  const double mid = a.efficiency(96, 2048, true) * peak;
  EXPECT_GT(mid, 140e12);
  EXPECT_LT(mid, 155e12);
  // Between 2k and 4k (155 and 173) at d = 128, and clamped beyond 16k.
  const double between = a.efficiency(128, 2896, true) * peak;
  EXPECT_GT(between, 155e12);
  EXPECT_LT(between, 173e12);
  EXPECT_EQ(a.efficiency(128, 65536, true), a.efficiency(128, 16384, true));
}

TEST(KernelRates, BadRowsAreInputErrorsNamingTheSource) {
  const std::vector<GemmRow> same_flops{{1024, 2048, 4096, 100_TFLOPS, "sweep A"},
                                        {2048, 1024, 4096, 120_TFLOPS, "sweep B"}};
  try {
    GemmCurve::from_rows(same_flops, 312_TFLOPS, 108);
    FAIL() << "two rows at one FLOP count were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep"), std::string::npos) << e.what();
  }
  EXPECT_THROW(GemmCurve::from_rows({{1024, 1024, 1024, 400_TFLOPS, "too fast"}}, 312_TFLOPS, 108),
               InputError);
  EXPECT_THROW(GemmCurve::from_rows({{0, 1024, 1024, 10_TFLOPS, "no m"}}, 312_TFLOPS, 108),
               InputError);
  EXPECT_THROW(AttentionCurve::from_rows({{128, true, 2048, 0_TFLOPS, "zero"}}, 312_TFLOPS),
               InputError);
}

TEST(KernelRates, Fp8AndBf16GemmsRunAtTheirOwnEfficiency) {
  const GpuSpec& h100 = gpu("H100-SXM");
  const GemmShape shape{1, 8192, 8192, 8192};
  const double bf16 = published_flop_rate(h100, KernelKind::kGemm, DType::kBf16, shape)->value();
  const double fp8 = published_flop_rate(h100, KernelKind::kGemm, DType::kFp8, shape)->value();
  // The sweeps: BF16 8192^3 at 797.5 TFLOP/s (0.81 of 989.5); FP8 best rows at 0.71-0.72 of 1979.
  EXPECT_NEAR(bf16, 797.51e12, 1e3);
  EXPECT_LT(fp8 / 1979e12, 0.75);
  EXPECT_GT(fp8 / 1979e12, 0.6);
  EXPECT_GT(fp8, 1.5 * bf16);
}

TEST(KernelRates, ComputeTimeUsesTheCurveAndASetEfficiencyReplacesIt) {
  const Scenario catalog = load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\nmodel: {preset: gpt3-2.7b}\n",
      "h100.yaml");
  ComputeOp op{KernelKind::kGemm, Flops(2.0 * 4096 * 4096 * 4096), Bytes(0), DType::kBf16,
               GemmShape{1, 4096, 4096, 4096}};
  const GpuSpec& g = catalog.cluster.gpu;
  // 4096^3 BF16 was published at 788.72 TFLOP/s: the kernel takes its FLOPs over that.
  EXPECT_NEAR(compute_time(op, g).value(),
              op.flops.value() / 788.72e12 + g.kernel_launch_overhead.value(), 1e-12);

  const Scenario set = load_scenario_text(
      "cluster:\n  gpu: {base: H100-SXM, gemm_efficiency: 0.5}\n  nodes: 1\n  gpus_per_node: 8\n"
      "model: {preset: gpt3-2.7b}\n",
      "h100-half.yaml");
  EXPECT_TRUE(set.cluster.gpu.gemm_curve.empty());
  EXPECT_FALSE(set.cluster.gpu.attention_curve.empty());
  const double quantization = wave_efficiency(op.shape, 132);
  EXPECT_NEAR(compute_time(op, set.cluster.gpu).value(),
              op.flops.value() / (989.5e12 * 0.5 * quantization) +
                  set.cluster.gpu.kernel_launch_overhead.value(),
              1e-12);
}

// Memory-bound kernels: time = launch overhead + bytes / (bandwidth x memory efficiency), the
// form te42kyfo/gpu-benches fits to its gpu-small-kernels sweep (10,000 back-to-back launches of a
// scale kernel per size, A100 80GB, a100_80.txt at 1c36d509ee; docs/evidence/
// kernel-benchmark-sources.md section 3.2). It follows the sweep where the launch dominates and
// where the data lives in HBM; in between, where the sweep's two buffers stay in the 40 MB L2,
// the sweep is up to 1.8x faster than the model, which has no cache.
TEST(KernelRates, MemoryBoundKernelsFollowTheSmallKernelSweepOutsideTheL2) {
  const GpuSpec& a100 = gpu("A100-SXM-80GB");
  struct Point {
    double bytes, measured_gbps;
  };
  // (bytes moved, achieved GB/s), read and write together.
  const Point launch_bound[] = {{65536, 25}, {262144, 98}, {1048576, 350}};
  const Point hbm_resident[] = {{57.7e6, 1521}, {195e6, 1676}, {362e6, 1711}};
  auto model_gbps = [&](double bytes) {
    const ComputeOp op{KernelKind::kElementwise, Flops(0), Bytes(bytes), DType::kBf16, {}};
    return bytes / compute_time(op, a100).value() / 1e9;
  };
  for (const Point& p : launch_bound)
    EXPECT_NEAR(model_gbps(p.bytes), p.measured_gbps, 0.10 * p.measured_gbps) << p.bytes;
  for (const Point& p : hbm_resident)
    EXPECT_NEAR(model_gbps(p.bytes), p.measured_gbps, 0.07 * p.measured_gbps) << p.bytes;
  // L2-resident (16-17 MiB moved): the sweep reached 2421 GB/s, the model about 1370.
  const double l2 = model_gbps(17.3e6);
  EXPECT_LT(l2, 0.7 * 2421);
  EXPECT_GT(l2, 0.4 * 2421);
}

// A kernel's load factor stretches its work, not its launch; an operation of several launches
// pays the overhead once per launch (core/exec/compute_cost.h).
TEST(KernelRates, LoadFactorStretchesTheWorkAndEachLaunchPaysTheOverhead) {
  const GpuSpec& h100 = gpu("H100-SXM");
  ComputeOp gemm{KernelKind::kGemm, Flops(2.0 * 4096 * 4096 * 4096), Bytes(0), DType::kBf16,
                 GemmShape{1, 4096, 4096, 4096}};
  const double launch = h100.kernel_launch_overhead.value();
  const double work = compute_time(gemm, h100).value() - launch;
  gemm.load_factor = 1.25;
  EXPECT_NEAR(compute_time(gemm, h100).value(), 1.25 * work + launch, 1e-15);
  ComputeOp small{KernelKind::kElementwise, Flops(0), Bytes(4096), DType::kBf16, {}};
  const double one = compute_time(small, h100).value();
  small.launches = 22;
  EXPECT_NEAR(compute_time(small, h100).value(), one + 21 * launch, 1e-15);
}

}  // namespace
}  // namespace dtsim
