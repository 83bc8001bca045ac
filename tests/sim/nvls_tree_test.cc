// NCCL's NVLS-tree all-reduce (core/collectives/collective_schedule.h, NvlsTreePlan): in-switch
// reduction inside each NVSwitch node beside one double binary tree per rail across the nodes,
// against its closed form at both SimGrid fidelities and against NCCL's own cost model.
#include <gtest/gtest.h>

#include <string>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

Job nvls_tree_job(int n, double s, int world) {
  return concurrent_collectives({first_ranks(n)}, Bytes(s), world, CollectiveKind::kAllReduce,
                                CollectiveAlgorithm::kNvlsTree);
}

class NvlsTreeOverNodes : public ::testing::TestWithParam<int> {};

// m nodes of 2 H100 (NVSwitch, 2 NDR NICs): the closed form against both fidelities, 8 B to 4 GiB.
TEST_P(NvlsTreeOverNodes, MatchesItsClosedForm) {
  const int m = GetParam();
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: " + std::to_string(m) +
                                 ", gpus_per_node: 2, network: {preset: ib-ndr, nics_per_node: "
                                 "2}}\n");
  const auto ranks = first_ranks(2 * m);
  CollectiveOp op{CollectiveKind::kAllReduce,     0, Bytes(8), DType::kBf16,
                  CollectiveAlgorithm::kNvlsTree, 0};
  ASSERT_EQ(resolve_algorithm(op, ranks, c), CollectiveAlgorithm::kNvlsTree);
  for (double s : {8.0, 1048576.0, 67108864.0, 4294967296.0}) {
    const Job job = nvls_tree_job(2 * m, s, 2 * m);
    op.bytes = Bytes(s);
    const double expected = collective_time(op, ranks, c).value();
    EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << m << " " << s;
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << m << " " << s;
    if (m <= 8 || s < 1e9) {
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << m << " " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, NvlsTreeOverNodes, ::testing::Values(2, 3, 8, 64));

TEST(NvlsTree, TwoNodesOfEightH100TakeNcclsTime) {
  // 2 x 8 H100 over NDR at 1 GiB: NCCL's NVLS-tree bus-bandwidth cap (8 channels x 57.7 GB/s,
  // algBw = bus x 16 / 30) binds the in-switch part, so dtsim's time is NCCL's: 25 us + 2 x 20.9 us
  // (one tree level) + S / algBw. Auto runs it, as NCCL picks it.
  const Cluster c = cluster_from(
      "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr}}\n");
  const auto ranks = first_ranks(16);
  const double s = 1073741824.0;
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(s), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  EXPECT_EQ(resolve_algorithm(op, ranks, c), CollectiveAlgorithm::kNvlsTree);
  const double expected = 25e-6 + 2 * 20.9e-6 + s / (8 * 57.7e9 * 16 / 30);
  EXPECT_NEAR(collective_time(op, ranks, c).value(), expected, 1e-9 * expected);
  const auto nccl = nccl_reference_choice(op, ranks, c);
  ASSERT_TRUE(nccl.has_value());
  EXPECT_EQ(nccl->algorithm, NcclAlgorithm::kNvlsTree);
  EXPECT_NEAR(nccl->time_us * 1e-6, expected, 1e-6 * expected);
  const Job job = concurrent_collectives({ranks}, Bytes(s), 16, CollectiveKind::kAllReduce,
                                         CollectiveAlgorithm::kAuto);
  EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected);
}

TEST(NvlsTree, NeedsNvSwitchMulticastAndSeveralNodes) {
  CollectiveOp op{CollectiveKind::kAllReduce,     0, Bytes(1e6), DType::kBf16,
                  CollectiveAlgorithm::kNvlsTree, 0};
  const Cluster a100 = cluster_from(
      "cluster: {gpu: A100-SXM-80GB, nodes: 2, gpus_per_node: 8, network: {preset: ib-hdr}}\n");
  EXPECT_EQ(resolve_algorithm(op, first_ranks(16), a100), CollectiveAlgorithm::kRing);
  const Cluster h100 = cluster_from(
      "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr}}\n");
  EXPECT_EQ(resolve_algorithm(op, first_ranks(16), h100), CollectiveAlgorithm::kNvlsTree);
  EXPECT_EQ(resolve_algorithm(op, first_ranks(8), h100), CollectiveAlgorithm::kRing);
  op.algorithm = CollectiveAlgorithm::kAuto;
  EXPECT_NE(resolve_algorithm(op, first_ranks(16), a100), CollectiveAlgorithm::kNvlsTree);
}

}  // namespace
}  // namespace dtsim::testing
