// All-reduce algorithms beyond the ring against their closed forms, on both SimGrid fidelities.
#include <gtest/gtest.h>

#include <cmath>

#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

// Rabenseifner's all-reduce (Thakur, Rabenseifner and Gropp 2005): p = 2^k <= n ranks exchange
// in 2k steps moving 2(p-1)/p S; the n - p others fold in and out with S each.
double halving_doubling_formula(int n, double s, double alpha, double beta) {
  int p = 1, k = 0;
  while (p * 2 <= n) p *= 2, ++k;
  const double fold = n > p ? 2 * (alpha + s / beta) : 0;
  return fold + 2 * k * alpha + 2.0 * (p - 1) / p * s / beta;
}

class HalvingDoubling : public ::testing::TestWithParam<int> {};

TEST_P(HalvingDoubling, MatchesRabenseifnersFormula) {
  const int n = GetParam();
  const Cluster c = star_of(n);
  for (double bytes : {8.0, 1048576.0, 1073741824.0, 4294967296.0}) {
    const Job job =
        concurrent_collectives({first_ranks(n)}, Bytes(bytes), n, CollectiveKind::kAllReduce,
                               CollectiveAlgorithm::kHalvingDoubling);
    const double expected = halving_doubling_formula(n, bytes, 2e-6, 25e9);
    EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << bytes;
    EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << bytes;
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << bytes;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HalvingDoubling, ::testing::Values(2, 3, 6, 8, 12, 64));

// 4 nodes x 8 H100, 8 NDR NICs each, efficiency 1: alpha 0.6 us and 370.8 GB/s inside a node
// (450 GB/s at NCCL's NVLink efficiency 0.824),
// 2.7 us and one 50 GB/s NIC per local-index ring across nodes.
TEST(Hierarchical, MatchesThePhaseSum) {
  const Cluster c = cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 4\n  gpus_per_node: 8\n  network: {preset: ib-ndr, "
      "protocol_efficiency: 1}\n");
  const double g = 8, m = 4, ai = 0.6e-6, bi = 370.8e9, an = 2.7e-6, bn = 50e9;
  for (double s : {8.0, 1048576.0, 1073741824.0, 4294967296.0}) {
    const double local = (g - 1) * ai + (g - 1) / g * s / bi;
    const double expected = 2 * local + 2 * (m - 1) * an + 2 * (m - 1) / m * (s / g) / bn;
    const Job job =
        concurrent_collectives({first_ranks(32)}, Bytes(s), 32, CollectiveKind::kAllReduce,
                               CollectiveAlgorithm::kHierarchical);
    EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << s;
    EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << s;
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << s;
  }
}

TEST(Hierarchical, BeatsAFlatRingOverSlowInterNodeLinks) {
  // 8 nodes x 8 GPUs over 25 Gb/s Ethernet with 50 us latency. The flat ring is pipelined, so a
  // piece of data pays the network latency only on the network hops of its 2(N-1) = 126 hops
  // (2m = 16 of them: 0.8 ms, cost_model.h ring_path_latency), the hierarchical one on 2(m-1) = 14
  // (0.7 ms) but its phases do not overlap. The hierarchical ring moves 2(m-1)/m S through the
  // node's one NIC against the flat ring's 2(N-1)/N S: at 1 MiB 1.41 ms against 1.64 ms, at
  // 64 MiB 45.4 ms against 50.6 ms.
  const Cluster c = cluster_from(
      "cluster:\n  gpu: A100-SXM-80GB\n  nodes: 8\n  gpus_per_node: 8\n  network: {preset: "
      "eth-25g, latency: 50us, "
      "nics_per_node: 1}\n");
  for (double s : {1048576.0, 67108864.0}) {
    const Job ring = concurrent_collectives({first_ranks(64)}, Bytes(s), 64);
    const Job hier =
        concurrent_collectives({first_ranks(64)}, Bytes(s), 64, CollectiveKind::kAllReduce,
                               CollectiveAlgorithm::kHierarchical);
    const double t_ring = simgrid_time(ring, c, "collective"),
                 t_hier = simgrid_time(hier, c, "collective");
    EXPECT_LT(t_hier, (s < 2e6 ? 0.9 : 0.95) * t_ring)
        << s << ": hierarchical " << t_hier << " s, ring " << t_ring;
  }
}

}  // namespace
}  // namespace dtsim::testing

namespace dtsim::testing {
namespace {

TEST(Nvls, MatchesItsClosedFormOnHopperNodes) {
  // 8 H100 on NVSwitch: NCCL's NVLS latency 25 us per call (hwLat[NVLINK][NVLS], base 0;
  // docs/evidence/nccl-tuning-model.md 1.3), not one 0.6 us hop; beta 370.8 GB/s (NCCL's 18 x 20.6
  // GB/s), NVLS efficiency 0.85 on top of it (NCCL nvls.cc applies it to the NVLink bandwidth its
  // search counts).
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  ASSERT_TRUE(nvls_supported(c));
  for (int n : {2, 3, 6, 8}) {
    for (double s : {8.0, 131072.0, 1048576.0, 4294967296.0}) {
      const double expected = 25e-6 + s * (1 + 1.0 / n) / (0.85 * 370.8e9);
      const Job job = concurrent_collectives(
          {first_ranks(n)}, Bytes(s), 8, CollectiveKind::kAllReduce, CollectiveAlgorithm::kNvls);
      EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << n << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << n << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << n << " " << s;
    }
  }
  // NVLS beats the ring at large sizes on 8 GPUs: S(9/8)/0.85 = 1.32 S against 2(7/8) S = 1.75 S.
  const Job ring = concurrent_collectives({first_ranks(8)}, Bytes(1073741824.0), 8);
  const Job nvls = concurrent_collectives({first_ranks(8)}, Bytes(1073741824.0), 8,
                                          CollectiveKind::kAllReduce, CollectiveAlgorithm::kNvls);
  EXPECT_LT(simgrid_time(nvls, c, "collective"), 0.8 * simgrid_time(ring, c, "collective"));
  EXPECT_FALSE(
      nvls_supported(cluster_from("cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 8}\n")));
}

TEST(Nvls, FlowsGoToAndFromTheirNodesSwitch) {
  // The group on node 1: every GPU sends to node 1's switch and receives from it, then the rest of
  // NCCL's NVLS latency; the switch is a typed endpoint, never a rank.
  const Cluster c = cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  network: {preset: ib-ndr}\n");
  std::vector<Rank> ranks;
  for (Rank r = 8; r < 16; ++r) ranks.push_back(r);
  const CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(1048576.0), DType::kBf16,
                        CollectiveAlgorithm::kNvls, 0};
  const CollectiveSchedule s = decompose(op, ranks, c, Fidelity::kChunk);
  ASSERT_EQ(s.flows.size(), 2 * ranks.size() + 1);
  const Endpoint sw = Endpoint::node_switch(1);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Endpoint gpu = Endpoint::gpu(ranks[i]);
    EXPECT_EQ(s.flows[2 * i].transfer().src, gpu);
    EXPECT_EQ(s.flows[2 * i].transfer().dst, sw);
    EXPECT_EQ(s.flows[2 * i + 1].transfer().src, sw);
    EXPECT_EQ(s.flows[2 * i + 1].transfer().dst, gpu);
  }
  // The flows carry one GPU link's latency (half a hop); the delay brings the call to NCCL's 25 us.
  EXPECT_TRUE(s.flows.back().is_delay());
  EXPECT_DOUBLE_EQ(s.flows.back().delay().value(), 25e-6 - c.intra_node.latency.value() / 2);
}

}  // namespace
}  // namespace dtsim::testing

namespace dtsim::testing {
namespace {

TEST(Auto, PicksWhatNcclsCostModelPicksOnEightH100) {
  // docs/evidence/nccl-tuning-model.md section 4: Ring/LL at 1 KiB and 1 MiB, NVLS/Simple at 1 GiB.
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  struct Case {
    double bytes;
    CollectiveAlgorithm algorithm;
    CollectiveProtocol protocol;
  };
  for (const Case& k :
       {Case{1024, CollectiveAlgorithm::kRing, CollectiveProtocol::kLL},
        Case{1048576, CollectiveAlgorithm::kRing, CollectiveProtocol::kLL},
        Case{1073741824, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple}}) {
    CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(k.bytes), DType::kBf16,
                    CollectiveAlgorithm::kAuto, 0};
    const ResolvedCollective r = resolve_collective(op, first_ranks(8), c);
    EXPECT_EQ(r.algorithm, k.algorithm) << k.bytes;
    EXPECT_EQ(r.protocol, k.protocol) << k.bytes;
  }
  // Systems NCCL's model does not cover fall back to the plain ring.
  const Cluster v100 = cluster_from(
      "cluster: {gpu: V100-SXM2-32GB, nodes: 1, gpus_per_node: 8}\ntraining: {precision: fp16}\n");
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(1e9), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  EXPECT_EQ(resolve_collective(op, first_ranks(8), v100).algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(resolve_collective(op, first_ranks(8), v100).protocol, CollectiveProtocol::kAuto);
}

TEST(Protocols, RingClosedFormsScaleLatencyAndBandwidth) {
  // 8 H100 on NVSwitch: NCCL's base latency 6.6 / 14.0 / 8.4 us once, per-step latency 0.6 us x
  // (0.6, 1.9, 3.4) / 0.6 and bandwidth 370.8 GB/s (450 at NCCL's NVLink efficiency) x (0.5,
  // 0.92, 1) for LL, LL128, Simple (NCCL's ring constants), LL capped at 141 GB/s (llMaxBw on one
  // Hopper node; LL128's cap, 12 channels x 36.7 GB/s, is above 0.92 x 370.8).
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  struct Case {
    CollectiveProtocol protocol;
    double base_us;
    double latency_us;
    double bandwidth;
  };
  for (const Case& k : {Case{CollectiveProtocol::kLL, 6.6, 0.6, 141e9 / 370.8e9},
                        Case{CollectiveProtocol::kLL128, 14.0, 1.9, 0.92},
                        Case{CollectiveProtocol::kSimple, 8.4, 3.4, 1.0}}) {
    for (double s : {1024.0, 1073741824.0}) {
      const double expected =
          (k.base_us + 14 * k.latency_us) * 1e-6 + 14.0 / 8 * s / (370.8e9 * k.bandwidth);
      Job job = concurrent_collectives({first_ranks(8)}, Bytes(s), 8);
      std::get<CollectiveOp>(job.programs[0].streams[0].ops[0].body).protocol = k.protocol;
      EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected)
          << to_string(k.protocol) << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected)
          << to_string(k.protocol) << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected)
          << to_string(k.protocol) << " " << s;
    }
  }
}

}  // namespace
}  // namespace dtsim::testing

namespace dtsim::testing {
namespace {

TEST(Auto, PaysNcclsBaseLatencyPerCall) {
  // 8 H100, 1 KiB: NCCL's model picks Ring/LL, 6.6 us base + 14 steps x 0.6 us = 15.0 us
  // (docs/evidence/nccl-tuning-model.md section 4); at 1 MiB Ring/LL again, 28.0 us with LL's
  // 141 GB/s cap. dtsim runs the same ring with the same constants, in the closed form and on
  // SimGrid at both fidelities.
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  const NcclSystem system = nccl_system(c, 8);
  for (double s : {1024.0, 1048576.0}) {
    const NcclEstimate nccl = nccl_all_reduce_choice(system, s);
    ASSERT_EQ(nccl.algorithm, NcclAlgorithm::kRing);
    ASSERT_EQ(nccl.protocol, NcclProtocol::kLL);
    const double expected = nccl.time_us * 1e-6;
    if (s == 1024.0) {
      EXPECT_NEAR(expected, 15.0e-6, 0.02e-6);
    }
    const Job job = concurrent_collectives({first_ranks(8)}, Bytes(s), 8,
                                           CollectiveKind::kAllReduce, CollectiveAlgorithm::kAuto);
    EXPECT_NEAR(analytic_time(job, c), expected, 0.01 * expected) << s;
    EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << s;
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << s;
  }
  // An explicit algorithm without a protocol stays pure alpha-beta: 14 x 0.6 us + S / beta.
  const Job ring = concurrent_collectives({first_ranks(8)}, Bytes(1024), 8);
  const double alpha_beta = 14 * 0.6e-6 + 14.0 / 8 * 1024 / 370.8e9;
  EXPECT_NEAR(analytic_time(ring, c), alpha_beta, 1e-9 * alpha_beta);
}

TEST(Auto, TreePaysNcclsTreeBaseLatency) {
  // 16 nodes x 8 H100 over NDR at 1 KiB: NCCL's model runs Tree/LL, base 6.8 us; dtsim's tree under
  // LL pays the same base once on top of its own pipeline, whose hops cost NCCL's Tree/LL latencies
  // (0.6 us on NVLink, 5.0 us on the network: 2 (7 x 0.6 + 4 x 5.0) = 48.4 us over 22 stages), so
  // it agrees with NCCL's 55.2 us within 2% (the rest: the bytes).
  const Cluster c = cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 16\n  gpus_per_node: 8\n  network: {preset: ib-ndr}\n");
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(1024), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  const ResolvedCollective r = resolve_collective(op, first_ranks(128), c);
  ASSERT_EQ(r.algorithm, CollectiveAlgorithm::kTree);
  ASSERT_EQ(r.protocol, CollectiveProtocol::kLL);
  EXPECT_NEAR(r.call_latency.value(), 6.8e-6, 1e-12);
  CollectiveOp tree = op;
  tree.algorithm = CollectiveAlgorithm::kTree;
  tree.protocol = CollectiveProtocol::kLL;
  const double t = collective_time(op, first_ranks(128), c).value();
  EXPECT_NEAR(t, collective_time(tree, first_ranks(128), c).value(), 1e-12);
  const double nccl = nccl_reference_choice(op, first_ranks(128), c)->time_us * 1e-6;
  EXPECT_NEAR(t, nccl, 0.02 * nccl);
  EXPECT_GT(t, 6.8e-6 + 48.4e-6);
}

}  // namespace
}  // namespace dtsim::testing
