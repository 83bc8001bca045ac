// Pipeline schedules on a compute-only, contention-free pipeline: the simulated bubble fraction
// t_pb / t_id equals (p - 1) / m for GPipe and 1F1B, and (p - 1) / (v m) for the interleaved
// schedule (Narayanan et al. 2021, section 2.2; docs/reference.md), within 1%, on both engines.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>

#include "core/exec/analytic_executor.h"
#include "core/report/metrics.h"
#include "core/strategy/strategy.h"
#include "models/scenario_model.h"
#include "sim/simgrid_executor.h"
#include "tests/support/uniform_layers.h"

namespace dtsim {
namespace {

// p GPUs on one node with a fast switch; each layer's forward is one 0.1 TFLOP GEMM (1 ms at
// 100 TFLOP/s), backward twice that. Activations between stages are 2 bytes (h = s = b = 1), so
// a send costs 1 us against 3 ms of compute per micro-batch and layer: the pipeline is
// compute-only to within 0.1%.
std::string scenario_yaml(int p, int m, const std::string& schedule, int v) {
  return "cluster:\n"
         "  gpu: {name: round-gpu, peak: {bf16: 100TFLOPS}, memory: 80GiB, "
         "memory_bandwidth: 1000GBps, gemm_efficiency: 1, memory_efficiency: 1, "
         "kernel_launch_overhead: 0us}\n"
         "  nodes: 1\n"
         "  gpus_per_node: " +
         std::to_string(p) +
         "\n"
         "  intra_node: {kind: switch, bandwidth: 100GBps, latency: 1us}\n"
         "model: {preset: unused-here}\n"
         "parallelism: {pipeline: " +
         std::to_string(p) + ", schedule: " + schedule + ", virtual_stages: " + std::to_string(v) +
         "}\n"
         "training: {global_batch_size: " +
         std::to_string(m) + ", micro_batch_size: 1, precision: bf16}\n";
}

ModelGraph uniform_layers(int n) {
  return testing::uniform_layers(
      {.count = n, .forward_flops = 1e11, .activation_bytes = 1e6, .blocks = true});
}

struct Bubble {
  double analytic = 0;
  double simgrid = 0;
  double first_stage_activations = 0;  // bytes at the first stage's peak (SimGrid)
};

double bubble_fraction(const Scenario& sc, const ModelGraph& g, const Job& job,
                       const Trace& trace) {
  const Results r = compute_results(sc, g, job, trace);
  return r.breakdown_s.pipeline_bubble / (r.step_time_s - r.breakdown_s.pipeline_bubble);
}

Bubble simulate(int p, int m, const std::string& schedule, int v) {
  const Scenario sc = load_scenario_text(scenario_yaml(p, m, schedule, v), "pipeline.yaml");
  const ModelGraph g = uniform_layers(2 * p * v);
  const Job job = build_job(g, sc);
  Bubble b;
  b.analytic =
      bubble_fraction(sc, g, job, AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{}));
  const Trace t = sim::SimGridExecutor(sim::SimGridOptions{FidelitySetting::kAuto, DType::kBf16})
                      .run(job, Cluster(sc.cluster), RunOptions{});
  b.simgrid = bubble_fraction(sc, g, job, t);
  for (const auto& mem : t.memory)
    if (mem.rank == 0)
      b.first_stage_activations =
          mem.at_peak[static_cast<size_t>(MemoryCategory::kActivations)].value();
  return b;
}

struct Case {
  std::string schedule;
  int v = 1;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.schedule << " v=" << c.v;
}

class BubbleTest : public ::testing::TestWithParam<Case> {};

TEST_P(BubbleTest, MatchesTheClosedForm) {
  const Case c = GetParam();
  std::printf("%-12s v  p    m   expected  analytic   simgrid\n", c.schedule.c_str());
  for (int p : {2, 4, 8})
    for (int k : {1, 4, 8}) {
      const int m = k * p;
      const double expected = static_cast<double>(p - 1) / (c.v * m);
      const Bubble b = simulate(p, m, c.schedule, c.v);
      std::printf("%-12s %d %2d %4d   %.5f   %.5f   %.5f\n", c.schedule.c_str(), c.v, p, m,
                  expected, b.analytic, b.simgrid);
      EXPECT_NEAR(b.analytic, expected, 0.01 * expected) << "p=" << p << " m=" << m;
      EXPECT_NEAR(b.simgrid, expected, 0.01 * expected) << "p=" << p << " m=" << m;
      // Stashed activations on the first stage (docs/reference.md; Korthikanti et al. 2022, 4.2.3):
      // GPipe holds all m micro-batches of its L/p layers, 1F1B p of them, and the interleaved
      // schedule L·(1 + (p - 1)/(p·v)) layers' worth once m > p (with m = p every forward is a
      // warm-up one, so it holds L).
      const double layers = 2.0 * p * c.v, per_layer = 1e6;
      double held = 0;
      if (c.schedule == "gpipe") held = m * (layers / p) * per_layer;
      if (c.schedule == "1f1b") held = p * (layers / p) * per_layer;
      if (c.schedule == "interleaved")
        held = (m == p ? 1.0 : 1.0 + (p - 1.0) / (p * c.v)) * layers * per_layer;
      EXPECT_DOUBLE_EQ(b.first_stage_activations, held) << "p=" << p << " m=" << m;
    }
}

INSTANTIATE_TEST_SUITE_P(Schedules, BubbleTest,
                         ::testing::Values(Case{"gpipe", 1}, Case{"1f1b", 1},
                                           Case{"interleaved", 2}, Case{"interleaved", 4}),
                         [](const auto& info) {
                           return info.param.schedule + "_v" + std::to_string(info.param.v);
                         });

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// Folding the tensor- and context-parallel ranks of a stage into one (strategy.h) must not
// change the prediction where it applies: the same step with every rank simulated agrees.
TEST(SymmetryFolding, OneRankPerStageStandsForItsTensorAndContextPeers) {
  const std::string yaml = R"(cluster: {gpu: H100-SXM, nodes: 4, gpus_per_node: 8,
          network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8}}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 4, context: 2, pipeline: 2, sequence_parallel: true}
training: {global_batch_size: 16, micro_batch_size: 1, precision: bf16}
)";
  auto run = [&](const std::string& folding) {
    const Scenario sc =
        load_scenario_text(yaml, "fold.yaml", {{"simulate.symmetry_folding=" + folding}});
    const ModelGraph g = models::shard_from_scenario(sc);
    const Job job = build_job(g, sc);
    const Trace t =
        sim::SimGridExecutor(sim::SimGridOptions{FidelitySetting::kCollective, DType::kBf16})
            .run(job, Cluster(sc.cluster), RunOptions{});
    return std::make_pair(job.programs.size(), compute_results(sc, g, job, t));
  };
  const auto [folded_programs, folded] = run("auto");
  const auto [all_programs, all] = run("off");
  EXPECT_EQ(folded_programs, 2u);  // one per stage
  EXPECT_EQ(all_programs, 16u);    // 4 x 2 x 2
  EXPECT_NEAR(folded.step_time_s, all.step_time_s, 1e-6 * all.step_time_s);
  EXPECT_DOUBLE_EQ(folded.peak_bytes_per_gpu, all.peak_bytes_per_gpu);
  EXPECT_NEAR(folded.hfu, all.hfu, 1e-9);
}

}  // namespace
}  // namespace dtsim
