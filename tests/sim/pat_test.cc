// NCCL's PAT all-gather and reduce-scatter at one GPU per node (core/collectives/
// collective_schedule.h, PatPlan): against its closed form at both SimGrid fidelities, and the
// closed form against NCCL's terms and the link figures.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

Cluster single_gpu_nodes(int m) {
  return cluster_from("cluster: {gpu: H100-SXM, nodes: " + std::to_string(m) +
                      ", gpus_per_node: 1, network: {preset: ib-ndr, nics_per_node: 1}}\n");
}

class PatOverNodes : public ::testing::TestWithParam<int> {};

// m single-H100 nodes over NDR: all-gather and reduce-scatter, 8 B to 4 GiB, both fidelities.
TEST_P(PatOverNodes, MatchesItsClosedForm) {
  const int m = GetParam();
  const Cluster c = single_gpu_nodes(m);
  const auto ranks = first_ranks(m);
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    CollectiveOp op{kind, 0, Bytes(8), DType::kBf16, CollectiveAlgorithm::kPat, 0};
    ASSERT_EQ(resolve_algorithm(op, ranks, c), CollectiveAlgorithm::kPat);
    for (double s : {8.0, 1048576.0, 67108864.0, 4294967296.0}) {
      const Job job = concurrent_collectives({ranks}, Bytes(s), m, kind, CollectiveAlgorithm::kPat);
      op.bytes = Bytes(s);
      const double expected = collective_time(op, ranks, c).value();
      expect_closed_form_on_every_engine(job, c, expected,
                                         std::to_string(m) + " nodes, " + std::to_string(s) + " B");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, PatOverNodes, ::testing::Values(2, 3, 8, 64));

// 16 single-GPU nodes at 1 MiB: NCCL's call latency 8 + 2.8 x 16 us, 4 steps of the route's latency
// x 14 / 3.5 / 2.7, and 15/16 S at 0.75 of one NIC's usable rate.
TEST(Pat, SixteenNodesTakeNcclsTermsOverTheLinks) {
  const Cluster c = single_gpu_nodes(16);
  const auto ranks = first_ranks(16);
  const double s = 1048576.0;
  const double expected = (8 + 2.8 * 16) * 1e-6 +
                          4 * c.gpu_network_latency().value() * 14 / 3.5 / 2.7 +
                          15.0 / 16 * s / (0.75 * c.usable_nic_bandwidth().value());
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    const CollectiveOp op{kind, 0, Bytes(s), DType::kBf16, CollectiveAlgorithm::kPat, 0};
    EXPECT_NEAR(collective_time(op, ranks, c).value(), expected, 1e-9 * expected);
  }
}

// Auto runs PAT exactly where NCCL's own model picks it (nccl_reference_choice, PAT row from
// src/graph/tuning.cc): 8 to 64 single-H100 nodes, 1 KiB to 1 GiB, all-gather and reduce-scatter;
// on 16 nodes that is up to 4 MiB. (On 4 nodes they differ at 512 KiB and 4 MiB, near the
// crossover: dtsim's PAT 38.6 us against NCCL's ring/LL 40.9 us at 512 KiB; docs/collectives.md.)
TEST(Pat, AutoRunsItWhereNcclsModelPicksIt) {
  int pat_rows = 0;
  for (int m : {8, 16, 64}) {
    const Cluster c = single_gpu_nodes(m);
    const auto ranks = first_ranks(m);
    for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter})
      for (double s = 1024; s <= 1073741824.0; s *= 8) {
        const CollectiveOp op{kind, 0, Bytes(s), DType::kBf16, CollectiveAlgorithm::kAuto, 0};
        const auto nccl = nccl_reference_choice(op, ranks, c);
        ASSERT_TRUE(nccl.has_value()) << m;
        const bool nccl_pat = nccl->algorithm == NcclAlgorithm::kPat;
        pat_rows += nccl_pat;
        EXPECT_EQ(resolve_algorithm(op, ranks, c) == CollectiveAlgorithm::kPat, nccl_pat)
            << m << " nodes, " << s << " B";
      }
  }
  EXPECT_GT(pat_rows, 10);
  const Cluster c = single_gpu_nodes(16);
  const CollectiveOp op{CollectiveKind::kAllGather, 0, Bytes(4194304.0), DType::kBf16,
                        CollectiveAlgorithm::kAuto, 0};
  EXPECT_EQ(resolve_algorithm(op, first_ranks(16), c), CollectiveAlgorithm::kPat);
}

// On nodes with fewer NICs than GPUs every GPU's group runs at once, so a PAT flow gets the GPU's
// share of the node's NICs (4 NICs for 8 GPUs: half a NIC), as the ring's closed form assumes.
TEST(Pat, TakesItsShareOfNicsTheNodesGpusShare) {
  const Cluster c = cluster_from(
      "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr, "
      "nics_per_node: 4}}\n");
  const std::vector<Rank> ranks = {0, 8};
  const double s = 67108864.0;
  const double expected = (8 + 2.8 * 2) * 1e-6 + c.gpu_network_latency().value() * 14 / 3.5 / 2.7 +
                          0.5 * s / (0.75 * 0.5 * c.usable_nic_bandwidth().value());
  const CollectiveOp op{CollectiveKind::kReduceScatter, 0, Bytes(s), DType::kBf16,
                        CollectiveAlgorithm::kPat, 0};
  EXPECT_NEAR(collective_time(op, ranks, c).value(), expected, 1e-9 * expected);
}

TEST(Pat, RunsAtOneGpuPerNodeForAllGatherAndReduceScatterOnly) {
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(1e6), DType::kBf16,
                  CollectiveAlgorithm::kPat,  0};
  EXPECT_EQ(resolve_algorithm(op, first_ranks(8), single_gpu_nodes(8)), CollectiveAlgorithm::kRing);
  op.kind = CollectiveKind::kAllGather;
  const Cluster eight = cluster_from(
      "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr}}\n");
  EXPECT_EQ(resolve_algorithm(op, first_ranks(16), eight), CollectiveAlgorithm::kRing);
}

}  // namespace
}  // namespace dtsim::testing
