// Data-parallel strategy on the analytic executor against hand-computed schedules
// (acceptance: no overlap gives compute + all-reduce exactly; overlap follows the schedule).
#include <gtest/gtest.h>

#include "core/collectives/cost_model.h"
#include "core/exec/analytic_executor.h"
#include "core/report/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/support/uniform_layers.h"

namespace dtsim {
namespace {

// A 4-GPU node with round numbers: 100 TFLOP/s at efficiency 1, 1 TB/s memory, no launch
// overhead; NVSwitch-like fabric with 100 GB/s per GPU and 1 us per hop.
std::string scenario_yaml(const std::string& training_extra) {
  return R"(cluster:
  gpu: {name: round-gpu, peak: {bf16: 100TFLOPS}, memory: 80GiB, memory_bandwidth: 1000GBps,
        gemm_efficiency: 1, memory_efficiency: 1, kernel_launch_overhead: 0us}
  nodes: 1
  gpus_per_node: 4
  intra_node: {kind: switch, bandwidth: 100GBps, latency: 1us}
model: {preset: unused-here}
training:
  global_batch_size: 4
  micro_batch_size: 1
  precision: bf16
  optimizer: adam
)" + training_extra;
}

// Four layers; each forward is one 1 TFLOP GEMM (10 ms here), backward twice that (20 ms);
// 1e8 parameters each, so 2e8 bytes of bf16 gradients per layer.
ModelGraph four_layers() {
  return testing::uniform_layers(
      {.count = 4, .forward_flops = 1e12, .parameters = 1e8, .activation_bytes = 1e6});
}

double step_time(const std::string& training_extra, Job* job_out = nullptr) {
  Scenario sc = load_scenario_text(scenario_yaml(training_extra), "dp.yaml");
  Job job = build_job(four_layers(), sc);
  AnalyticExecutor exec;
  Trace t = exec.run(job, Cluster(sc.cluster), RunOptions{});
  if (job_out) *job_out = job;
  return t.makespan().value();
}

// Ring all-reduce over 4 ranks: 2(N-1) alpha + 2(N-1)/N S / beta.
double ring_all_reduce(double bytes) {
  return 6 * 1e-6 + 1.5 * bytes / 100e9;
}

// Adam in bf16 reads and writes weights and gradients (2 B each) and fp32 master, momentum and
// variance (12 B): 2 x (2 + 12) = 28 B per parameter at 1 TB/s.
constexpr double kOptimizerSeconds = 4e8 * 28 / 1e12;

TEST(DataParallel, OneBucketIsComputePlusAllReduce) {
  // Buckets large enough to hold every gradient: nothing can overlap.
  const double t = step_time("  gradient_bucket: 1GiB\n  first_gradient_bucket: 1GiB\n");
  const double compute = 4 * 0.010 + 4 * 0.020;
  EXPECT_DOUBLE_EQ(t, compute + ring_all_reduce(8e8) + kOptimizerSeconds);
}

TEST(DataParallel, OverlapFollowsTheHandSchedule) {
  // A 1-byte cap closes a bucket after every layer. Backward of layer 3..0 ends at 60, 80,
  // 100 and 120 ms; each bucket's all-reduce (3.006 ms) starts when its layer is done and the
  // previous one has finished, so only the last one is exposed.
  Job job;
  const double t = step_time("  gradient_bucket: 1B\n  first_gradient_bucket: 1B\n", &job);
  const double ar = ring_all_reduce(2e8);
  EXPECT_NEAR(ar, 3.006e-3, 1e-12);
  EXPECT_DOUBLE_EQ(t, 0.120 + ar + kOptimizerSeconds);
  EXPECT_EQ(job.programs[0].streams[1].ops.size(), 4u);
}

TEST(DataParallel, SlowCommunicationQueuesOnTheCommStream) {
  // With 4 buckets whose all-reduce (at 1 GB/s: 300 ms each) outlasts the 20 ms between
  // bucket-ready times, the comm stream is the bottleneck: start at 60 ms, then back to back.
  Scenario sc =
      load_scenario_text(scenario_yaml("  gradient_bucket: 1B\n  first_gradient_bucket: 1B\n"),
                         "slow.yaml", {{"cluster.intra_node.bandwidth=1GBps"}});
  Job job = build_job(four_layers(), sc);
  Trace t = AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{});
  const double ar = 6e-6 + 1.5 * 2e8 / 1e9;
  EXPECT_DOUBLE_EQ(t.makespan().value(), 0.060 + 4 * ar + kOptimizerSeconds);
}

TEST(DataParallel, NoOverlapWaitsForBackward) {
  const double t = step_time(
      "  gradient_bucket: 1B\n  first_gradient_bucket: 1B\n  overlap_grad_reduce: false\n");
  EXPECT_DOUBLE_EQ(t, 0.120 + 4 * ring_all_reduce(2e8) + kOptimizerSeconds);
}

TEST(DataParallel, GradientAccumulationCommunicatesOnlyOnTheLastMicroBatch) {
  // global 16 = micro-batch 1 x 4 replicas x 4 micro-batches.
  Job acc;
  const double t4 = [&] {
    Scenario sc = load_scenario_text(
        scenario_yaml("  gradient_bucket: 1GiB\n  first_gradient_bucket: 1GiB\n"), "dp.yaml",
        {{"training.global_batch_size=16"}});
    acc = build_job(four_layers(), sc);
    return AnalyticExecutor().run(acc, Cluster(sc.cluster), RunOptions{}).makespan().value();
  }();
  EXPECT_EQ(acc.programs[0].streams[1].ops.size(), 1u);
  EXPECT_DOUBLE_EQ(t4, 4 * 0.120 + ring_all_reduce(8e8) + kOptimizerSeconds);
}

TEST(DataParallel, BucketsFollowDdpOrderAndCaps) {
  // Reverse layer order; the first bucket closes at 1 MiB, later ones at 25 MiB.
  ModelGraph g;
  for (int i = 0; i < 6; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.parameters = 4e6;  // 8 MB of bf16 gradients
    g.layers.push_back(l);
  }
  auto b = assign_gradient_buckets(g, 2.0, Bytes(1024.0 * 1024), Bytes(25.0 * 1024 * 1024));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].last_layer, 5);
  EXPECT_EQ(b[0].first_layer, 5);  // one 8 MB layer already exceeds 1 MiB
  EXPECT_EQ(b[1].last_layer, 4);
  EXPECT_EQ(b[1].first_layer, 1);  // 4 x 8 MB = 32 MB >= 25 MiB
  EXPECT_EQ(b[2].first_layer, 0);
  EXPECT_DOUBLE_EQ(b[1].bytes.value(), 32e6);
}

TEST(DataParallel, MemoryPeakCountsModelStateAndActivations) {
  Scenario sc = load_scenario_text(scenario_yaml(""), "dp.yaml");
  Job job = build_job(four_layers(), sc);
  Trace t = AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{});
  ASSERT_EQ(t.memory.size(), 1u);
  const auto& m = t.memory[0];
  // 4e8 params: 2 B weights, 2 B gradients, 12 B Adam states (ZeRO paper's 16 B/param);
  // 4 layers' activations at the end of forward; the default 1 GiB runtime reserve plus NCCL
  // staging for the largest bucket (each 2e8 B layer exceeds the 25 MiB cap, so each is its own
  // bucket).
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kWeights)].value(), 8e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kGradients)].value(), 8e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kOptimizer)].value(), 48e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kActivations)].value(), 4e6);
  const double reserve = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kBuffers)].value(), reserve + 2e8);
  EXPECT_DOUBLE_EQ(m.peak.value(), 8e8 + 8e8 + 48e8 + 4e6 + reserve + 2e8);
}

TEST(AnalyticExecutor, UnsatisfiableWaitIsAnErrorNotAHang) {
  Job job;
  job.groups.push_back(Group{0, "world", {0}});
  Program p;
  auto s = p.add_stream("compute");
  EventId never = p.new_event();
  p.append(s, ComputeOp{}, Label{"stuck", -1, -1, Phase::kOther}).waits.push_back(never);
  job.programs.push_back(p);
  Scenario sc = load_scenario_text(scenario_yaml(""), "dp.yaml");
  EXPECT_THROW(AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{}), RuntimeError);
}

}  // namespace
}  // namespace dtsim
