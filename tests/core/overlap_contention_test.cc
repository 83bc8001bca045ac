// Compute kernels beside collectives (core/exec/overlap_contention.h): the SM count NCCL's
// channels take, and a GEMM's time beside a collective against the closed form of one window.
#include <gtest/gtest.h>

#include "core/collectives/cost_model.h"
#include "core/exec/analytic_executor.h"
#include "core/exec/compute_cost.h"
#include "core/exec/overlap_contention.h"
#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

Cluster cluster_of(const std::string& yaml) {
  return Cluster(load_scenario_text(yaml + "model: {preset: unused}\n", "c.yaml").cluster);
}

const std::string kOneH100Node = "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n";

// NCCL's ring channels (src/graph/search.cc, connect.cc): 12 inside one NVSwitch node; across
// nodes one per NIC, doubled on Hopper when a channel runs above 45 GB/s (NDR: 48), not on A100
// (HDR: 24 GB/s per channel).
TEST(OverlapContention, CollectiveBlocksAreNcclsChannels) {
  EXPECT_EQ(collective_sms(cluster_of(kOneH100Node), 8), 12);
  EXPECT_EQ(collective_sms(cluster_of(kOneH100Node), 2), 12);
  EXPECT_EQ(collective_sms(cluster_of(kOneH100Node), 1), 0);
  EXPECT_EQ(collective_sms(cluster_of("cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, "
                                      "network: {preset: ib-ndr, nics_per_node: 8}}\n"),
                           16),
            16);
  EXPECT_EQ(collective_sms(cluster_of("cluster: {gpu: A100-SXM-80GB, nodes: 2, gpus_per_node: 8, "
                                      "network: {preset: ib-hdr, nics_per_node: 8}}\n"),
                           16),
            8);
}

// Two H100 of one node: a large GEMM on the compute stream and an all-reduce of their pair,
// either on its own stream (both start at 0, so the GEMM runs on 132 - 12 SMs while the
// all-reduce lasts) or in line before the GEMM (no overlap: the GEMM keeps its full time).
struct Pair {
  double gemm_start = 0, gemm_end = 0;
  std::vector<std::string> notes;
};

Pair run_pair(bool beside) {
  const Cluster cluster = cluster_of(kOneH100Node);
  Job job;
  job.world_size = 2;
  job.groups.push_back(Group{0, "tp", {0, 1}});
  const ComputeOp gemm{KernelKind::kGemm, Flops(2.0 * 8192 * 8192 * 8192), Bytes(0), DType::kBf16,
                       GemmShape{1, 8192, 8192, 8192}};
  const CollectiveOp all_reduce{CollectiveKind::kAllReduce, 0, Bytes(256.0 * (1 << 20))};
  for (Rank r : {0, 1}) {
    Program p;
    p.rank = r;
    const StreamId compute = p.add_stream("compute");
    const StreamId comm = beside ? p.add_stream("comm") : compute;
    p.append(comm, all_reduce, Label{"all_reduce", 0, 0, Phase::kBackward});
    p.append(compute, gemm, Label{"gemm", 0, 0, Phase::kBackward});
    job.programs.push_back(std::move(p));
  }
  AnalyticExecutor exec;
  const Trace t = exec.run(job, cluster, RunOptions{});
  Pair out;
  out.notes = t.notes;
  for (const Span& s : t.spans)
    if (s.rank == 0 && s.kind == SpanKind::kCompute) {
      out.gemm_start = s.start.value();
      out.gemm_end = s.end.value();
    }
  return out;
}

TEST(OverlapContention, GemmBesideACollectiveRunsOnTheSmsLeft) {
  const Cluster cluster = cluster_of(kOneH100Node);
  const ComputeOp gemm{KernelKind::kGemm, Flops(2.0 * 8192 * 8192 * 8192), Bytes(0), DType::kBf16,
                       GemmShape{1, 8192, 8192, 8192}};
  const double full = compute_time(gemm, cluster.gpu).value();
  const double left = compute_time(gemm, cluster.gpu, 132 - 12).value();
  ASSERT_GT(left, full);
  const double collective =
      collective_time(CollectiveOp{CollectiveKind::kAllReduce, 0, Bytes(256.0 * (1 << 20))}, {0, 1},
                      cluster)
          .value();
  ASSERT_LT(collective, full);  // the window closes inside the GEMM
  // Closed form: the GEMM does collective x full/left of its work in the window, the rest at
  // its full rate.
  const double expected = collective + (full - collective * full / left);
  EXPECT_NEAR(time_beside_window(Seconds(full), Seconds(collective), full / left).value(), expected,
              1e-12);

  const Pair beside = run_pair(true);
  EXPECT_NEAR(beside.gemm_start, 0, 1e-12);
  EXPECT_NEAR(beside.gemm_end - beside.gemm_start, expected, 1e-9 * expected);
  ASSERT_EQ(beside.notes.size(), 1u);
  EXPECT_NE(beside.notes[0].find("NCCL thread blocks"), std::string::npos);

  const Pair in_line = run_pair(false);
  EXPECT_NEAR(in_line.gemm_start, collective, 1e-9 * collective);
  EXPECT_NEAR(in_line.gemm_end - in_line.gemm_start, full, 1e-9 * full);
  EXPECT_TRUE(in_line.notes.empty());
}

// Fewer SMs: the FLOP rate scales with their share, and the GEMM's tiles are quantized into
// waves of the SMs left (core/exec/compute_cost.h). A GPU of 132 SMs with no published curve
// (the roofline at efficiency 1) and no launch overhead, so the ratio is the closed form's.
TEST(OverlapContention, FewerSmsScaleTheRateAndTheWaves) {
  const Cluster cluster = cluster_of(
      "cluster:\n  gpu: {name: round-gpu, peak: {bf16: 1000TFLOPS, fp16: 1000TFLOPS, fp32: "
      "100TFLOPS, fp8: 2000TFLOPS}, memory: 80GiB, memory_bandwidth: 3000GBps, gemm_efficiency: "
      "1, memory_efficiency: 1, kernel_launch_overhead: 0us, sm_count: 132}\n  nodes: 1\n  "
      "gpus_per_node: 8\n  intra_node: nvswitch-nvlink4\n");
  // 132 tiles of 256 x 128: one full wave on 132 SMs, two waves (the second of 12 tiles) on 120.
  const ComputeOp gemm{KernelKind::kGemm, Flops(2.0 * 256 * 132 * 128 * 8192), Bytes(0),
                       DType::kBf16, GemmShape{1, 256, 132 * 128, 8192}};
  const double full = compute_time(gemm, cluster.gpu).value();
  const double left = compute_time(gemm, cluster.gpu, 120).value();
  EXPECT_NEAR(full, gemm.flops.value() / 1000e12, 1e-9 * full);
  // 132/120 for the share of SMs, times 2 waves of 120 for 132 tiles' work.
  EXPECT_NEAR(left / full, (132.0 / 120) * (2.0 * 120 / 132), 1e-9);
  EXPECT_EQ(compute_time(gemm, cluster.gpu, 132).value(), full);
  // The published case (NVIDIA developer forum, "Compute-Communication Overlap Causes Severe GEMM
  // Performance Degradation because of Tail Effect", 2025: an H100 GEMM of 132 blocks "nearly
  // doubles" beside an all-gather of 24 blocks): 132 tiles in two waves of 108 SMs.
  const double beside_all_gather = compute_time(gemm, cluster.gpu, 132 - 24).value();
  EXPECT_NEAR(beside_all_gather / full, 2.0, 1e-9);
}

}  // namespace
}  // namespace dtsim
