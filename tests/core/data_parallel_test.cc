// Data-parallel strategy on the analytic executor against hand-computed schedules
// (acceptance: no overlap gives compute + all-reduce exactly; overlap follows the schedule).
#include <gtest/gtest.h>

#include "core/collectives/cost_model.h"
#include "core/exec/analytic_executor.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/uniform_layers.h"

namespace dtsim {
namespace {

// A 4-GPU node with round numbers: 100 TFLOP/s at efficiency 1, 1 TB/s memory, no launch
// overhead; NVSwitch-like fabric with 100 GB/s per GPU and 1 us per hop. Gradients are bf16
// (2 B per parameter) unless a test says otherwise.
std::string scenario_yaml(const std::string& training_extra,
                          const std::string& grad_dtype = "bf16") {
  return R"(cluster:
  gpu: {name: round-gpu, peak: {bf16: 100TFLOPS, fp16: 100TFLOPS, fp32: 100TFLOPS, fp8: 100TFLOPS},
        memory: 80GiB, memory_bandwidth: 1000GBps,
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
  grad_dtype: )" +
         grad_dtype + "\n" + training_extra;
}

// Four layers; each forward is one 1 TFLOP GEMM (10 ms here), backward twice that (20 ms);
// 1e8 parameters each, so 2e8 bytes of bf16 gradients per layer.
ModelGraph four_layers() {
  return testing::uniform_layers(
      {.count = 4, .forward_flops = 1e12, .parameters = 1e8, .activation_bytes = 1e6});
}

double step_time(const std::string& training_extra, Job* job_out = nullptr,
                 const std::string& grad_dtype = "bf16") {
  Scenario sc = load_scenario_text(scenario_yaml(training_extra, grad_dtype), "dp.yaml");
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
  // A cap of one layer's gradients (2e8 B) closes a bucket after every layer. Backward of
  // layer 3..0 ends at 60, 80, 100 and 120 ms; each bucket's all-reduce (3.006 ms) starts when its
  // layer is done and the previous one has finished, so only the last one is exposed.
  Job job;
  const double t = step_time("  gradient_bucket: 200MB\n  first_gradient_bucket: 200MB\n", &job);
  const double ar = ring_all_reduce(2e8);
  EXPECT_NEAR(ar, 3.006e-3, 1e-12);
  EXPECT_DOUBLE_EQ(t, 0.120 + ar + kOptimizerSeconds);
  EXPECT_EQ(job.programs[0].streams[1].ops.size(), 4u);
}

TEST(DataParallel, SlowCommunicationQueuesOnTheCommStream) {
  // With 4 buckets whose all-reduce (at 1 GB/s: 300 ms each) outlasts the 20 ms between
  // bucket-ready times, the comm stream is the bottleneck: start at 60 ms, then back to back.
  Scenario sc = load_scenario_text(
      scenario_yaml("  gradient_bucket: 200MB\n  first_gradient_bucket: 200MB\n"), "slow.yaml",
      {{"cluster.intra_node.bandwidth=1GBps"}});
  Job job = build_job(four_layers(), sc);
  Trace t = AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{});
  const double ar = 6e-6 + 1.5 * 2e8 / 1e9;
  EXPECT_DOUBLE_EQ(t.makespan().value(), 0.060 + 4 * ar + kOptimizerSeconds);
}

TEST(DataParallel, NoOverlapWaitsForBackward) {
  const double t = step_time(
      "  gradient_bucket: 200MB\n  first_gradient_bucket: 200MB\n  overlap_grad_reduce: false\n");
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

constexpr double kMiB = 1024.0 * 1024;

ModelGraph layers_of(int count, double parameters) {
  ModelGraph g;
  for (int i = 0; i < count; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.parameters = parameters;
    g.layers.push_back(l);
  }
  return g;
}

TEST(DataParallel, BucketsFollowDdpOrderAndCaps) {
  // PyTorch DDP: reverse layer order, packed to the cap (first bucket 1 MiB, then 25 MiB),
  // layers split across buckets where they do not fit.
  const ModelGraph g = layers_of(6, 4e6);  // 8 MB of bf16 gradients each, 48 MB in all
  auto b = assign_gradient_buckets(g, 2.0, Bytes(kMiB), Bytes(25 * kMiB));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b[0].bytes.value(), kMiB);  // the first 1 MiB of layer 5
  EXPECT_EQ(b[0].last_layer, 5);
  EXPECT_EQ(b[0].first_layer, 5);
  // The rest of layer 5, layers 4 and 3, and the start of layer 2: 25 MiB.
  EXPECT_DOUBLE_EQ(b[1].bytes.value(), 25 * kMiB);
  EXPECT_EQ(b[1].last_layer, 5);
  EXPECT_EQ(b[1].first_layer, 2);
  EXPECT_DOUBLE_EQ(b[2].bytes.value(), 48e6 - 26 * kMiB);
  EXPECT_EQ(b[2].last_layer, 2);
  EXPECT_EQ(b[2].first_layer, 0);
}

TEST(DataParallel, LayerLargerThanTheCapIsSplit) {
  // One 96 MiB layer (as in the default scenario) gives 1 + 25 + 25 + 25 + 20 MiB buckets.
  const ModelGraph g = layers_of(1, 48 * kMiB);
  auto b = assign_gradient_buckets(g, 2.0, Bytes(kMiB), Bytes(25 * kMiB));
  ASSERT_EQ(b.size(), 5u);
  const double expected[] = {1, 25, 25, 25, 20};
  for (size_t k = 0; k < b.size(); ++k) {
    EXPECT_DOUBLE_EQ(b[k].bytes.value(), expected[k] * kMiB) << k;
    EXPECT_EQ(b[k].first_layer, 0);
  }
}

TEST(DataParallel, BucketWaitsForTheBackwardOfItsLowestLayer) {
  // Caps 100 MB then 300 MB over four 2e8 B layers: 100 MB of layer 3 (ready at 60 ms), the
  // rest of 3 with all of 2 (ready at 80 ms, when layer 2's backward ends), layer 1 with the
  // first half of layer 0, and the rest of layer 0 (both ready at 120 ms). So the last two
  // all-reduces run after backward, back to back.
  Job job;
  const double t = step_time("  gradient_bucket: 300MB\n  first_gradient_bucket: 100MB\n", &job);
  const auto& comm = job.programs[0].streams[1].ops;
  ASSERT_EQ(comm.size(), 4u);
  const double sizes[] = {1e8, 3e8, 3e8, 1e8};
  for (size_t k = 0; k < comm.size(); ++k)
    EXPECT_DOUBLE_EQ(std::get<CollectiveOp>(comm[k].body).bytes.value(), sizes[k]) << k;
  EXPECT_DOUBLE_EQ(t, 0.120 + ring_all_reduce(3e8) + ring_all_reduce(1e8) + kOptimizerSeconds);
}

TEST(DataParallel, TinyBucketsAreAnInputError) {
  EXPECT_THROW(step_time("  gradient_bucket: 1B\n  first_gradient_bucket: 1B\n"), InputError);
}

TEST(DataParallel, GradientDtypeAutoFollowsThePrecision) {
  // Megatron-LM: bf16 accumulates and reduces gradients in fp32, fp16 keeps fp16 ones.
  const std::pair<const char*, DType> cases[] = {{"bf16", DType::kFp32},
                                                 {"fp16", DType::kFp16},
                                                 {"fp32", DType::kFp32},
                                                 {"fp8", DType::kFp32}};
  for (const auto& [precision, grad] : cases) {
    const Scenario sc = load_scenario_text(scenario_yaml("", "auto"), "dp.yaml",
                                           {{std::string("training.precision=") + precision}});
    EXPECT_EQ(sc.training.grad_dtype, grad) << precision;
    EXPECT_TRUE(sc.training.grad_dtype_auto);
  }
  const Scenario fp16 = load_scenario_text(scenario_yaml("", "fp16"), "dp.yaml");
  EXPECT_EQ(fp16.training.grad_dtype, DType::kFp16);
  EXPECT_FALSE(fp16.training.grad_dtype_auto);
  EXPECT_THROW(load_scenario_text(scenario_yaml("", "fp64"), "dp.yaml"), InputError);
}

TEST(DataParallel, Fp32GradientsDoubleTheAllReduceAndTheGradientMemory) {
  // bf16 training, grad_dtype auto: 4 B gradients on the wire (8e8 x 2 B -> 16e8 B) and in
  // memory; the optimizer reads 4 B gradients instead of 2: 4 + 2 + 2 x 12 = 30 B per parameter.
  Job job;
  const double t =
      step_time("  gradient_bucket: 1GiB\n  first_gradient_bucket: 1GiB\n", &job, "auto");
  const auto& comm = job.programs[0].streams[1].ops;
  ASSERT_EQ(comm.size(), 2u);  // 1 GiB, then the remaining 16e8 - 1 GiB
  double bytes = 0;
  for (const auto& op : comm) {
    const auto& c = std::get<CollectiveOp>(op.body);
    EXPECT_EQ(c.dtype, DType::kFp32);
    bytes += c.bytes.value();
  }
  EXPECT_DOUBLE_EQ(bytes, 16e8);
  // The first 1 GiB is ready when layer 1's backward ends (100 ms) and done (16.1 ms) before
  // layer 0's, so only the second bucket's all-reduce is exposed.
  EXPECT_DOUBLE_EQ(t, 0.120 + ring_all_reduce(16e8 - 1024.0 * kMiB) + 4e8 * 30 / 1e12);
  Scenario sc = load_scenario_text(scenario_yaml("", "auto"), "dp.yaml");
  Trace tr =
      AnalyticExecutor().run(build_job(four_layers(), sc), Cluster(sc.cluster), RunOptions{});
  EXPECT_DOUBLE_EQ(tr.memory[0].at_peak[static_cast<size_t>(MemoryCategory::kGradients)].value(),
                   16e8);
  EXPECT_DOUBLE_EQ(tr.memory[0].at_peak[static_cast<size_t>(MemoryCategory::kOptimizer)].value(),
                   48e8);
}

TEST(DataParallel, MemoryPeakCountsModelStateAndActivations) {
  Scenario sc = load_scenario_text(scenario_yaml(""), "dp.yaml");
  Job job = build_job(four_layers(), sc);
  Trace t = AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{});
  ASSERT_EQ(t.memory.size(), 1u);
  const auto& m = t.memory[0];
  // 4e8 params: 2 B weights, 2 B gradients, 12 B Adam states (ZeRO paper's 16 B/param);
  // 4 layers' activations at the end of forward; the default 1 GiB runtime reserve plus NCCL
  // staging for the largest bucket (25 MiB: the 2e8 B layers are split into 25 MiB buckets).
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kWeights)].value(), 8e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kGradients)].value(), 8e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kOptimizer)].value(), 48e8);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kActivations)].value(), 4e6);
  const double reserve = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryCategory::kBuffers)].value(),
                   reserve + 25 * kMiB);
  EXPECT_DOUBLE_EQ(m.peak.value(), 8e8 + 8e8 + 48e8 + 4e6 + reserve + 25 * kMiB);
}

// The closed forms have no contention, so an oversubscribed switch level is not in the analytic
// step time: the engine says so in the Trace's notes when the job's traffic crosses it.
std::vector<std::string> analytic_notes(double oversubscription, int nodes_per_leaf) {
  const std::string yaml = R"(cluster:
  gpu: {name: round-gpu, peak: {bf16: 100TFLOPS}, memory: 80GiB, memory_bandwidth: 1000GBps,
        gemm_efficiency: 1, memory_efficiency: 1, kernel_launch_overhead: 0us}
  nodes: 4
  gpus_per_node: 1
  intra_node: {kind: switch, bandwidth: 100GBps, latency: 1us}
  network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 1, nodes_per_leaf: )" +
                           std::to_string(nodes_per_leaf) +
                           ", oversubscription: " + format_number("%g", oversubscription) + R"(}
model: {preset: unused-here}
training: {global_batch_size: 4, micro_batch_size: 1, precision: bf16}
)";
  Scenario sc = load_scenario_text(yaml, "oversubscribed.yaml");
  return AnalyticExecutor()
      .run(build_job(four_layers(), sc), Cluster(sc.cluster), RunOptions{})
      .notes;
}

TEST(AnalyticExecutor, NotesOversubscriptionItDoesNotModel) {
  // Data parallelism over 4 nodes, 2 per leaf: the all-reduce crosses the 8:1 uplinks.
  const auto notes = analytic_notes(8, 2);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("8:1 oversubscription"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("simgrid"), std::string::npos) << notes[0];
  // Non-blocking, or every node under one leaf: nothing to note.
  EXPECT_TRUE(analytic_notes(1, 2).empty());
  EXPECT_TRUE(analytic_notes(8, 4).empty());
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
