// NCCL's CollNet-direct all-reduce on switches that reduce in the network (SHARP;
// core/collectives/collective_schedule.h, CollNetPlan): against its closed form at both SimGrid
// fidelities, the closed form against the bytes each link carries, and when auto runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

Cluster sharp_cluster(const std::string& gpu, int nodes, int gpus, const std::string& net,
                      bool sharp = true) {
  return cluster_from("cluster: {gpu: " + gpu + ", nodes: " + std::to_string(nodes) +
                      ", gpus_per_node: " + std::to_string(gpus) + ", network: {preset: " + net +
                      ", in_network_reduction: " + (sharp ? "true" : "false") + "}}\n");
}

class CollNetOverNodes : public ::testing::TestWithParam<int> {};

// m nodes of 2 H100 (NVSwitch, 2 NDR NICs): the closed form against both fidelities, 8 B to 4 GiB.
TEST_P(CollNetOverNodes, MatchesItsClosedForm) {
  const int m = GetParam();
  const Cluster c = sharp_cluster("H100-SXM", m, 2, "ib-ndr");
  const auto ranks = first_ranks(2 * m);
  CollectiveOp op{CollectiveKind::kAllReduce,    0, Bytes(8), DType::kBf16,
                  CollectiveAlgorithm::kCollNet, 0};
  ASSERT_EQ(resolve_algorithm(op, ranks, c), CollectiveAlgorithm::kCollNet);
  for (double s : {8.0, 1048576.0, 67108864.0, 4294967296.0}) {
    const Job job = concurrent_collectives({ranks}, Bytes(s), 2 * m, CollectiveKind::kAllReduce,
                                           CollectiveAlgorithm::kCollNet);
    op.bytes = Bytes(s);
    const double expected = collective_time(op, ranks, c).value();
    expect_closed_form_on_every_engine(job, c, expected,
                                       std::to_string(m) + " nodes, " + std::to_string(s) + " B");
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, CollNetOverNodes, ::testing::Values(2, 3, 8, 64));

// 2 x 8 A100 over HDR at 1 GiB, from the link figures: the NVLink part carries 2 (g - 1) / g S per
// GPU link, the NICs S per node (S / 8 each), and the call NCCL's CollNet latency, 2 (3.7 + 7 x
// 0.4) + 31 = 44 us. Both fidelities agree.
TEST(CollNet, EightGpuNodesTakeTheLinkBytesPlusNcclsLatency) {
  const Cluster c = sharp_cluster("A100-SXM-80GB", 2, 8, "ib-hdr");
  const auto ranks = first_ranks(16);
  const double s = 1073741824.0;
  CollectiveOp op{CollectiveKind::kAllReduce,    0, Bytes(s), DType::kBf16,
                  CollectiveAlgorithm::kCollNet, 0};
  EXPECT_NEAR(nccl_collnet_direct_latency_us(8), 44.0, 1e-9);
  const double a_f = c.intra_node.latency.value(), a_n = c.gpu_network_latency().value();
  const double intra = a_f + 2 * 7.0 / 8 * s / c.usable_fabric_bandwidth().value();
  const double net = a_n + s / (8 * c.usable_nic_bandwidth().value());
  const double expected = std::max(intra, net) + 44e-6 - a_n;
  EXPECT_NEAR(collective_time(op, ranks, c).value(), expected, 1e-9 * expected);
  const Job job = concurrent_collectives({ranks}, Bytes(s), 16, CollectiveKind::kAllReduce,
                                         CollectiveAlgorithm::kCollNet);
  EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected);
  EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected);
}

// Auto considers CollNet only where the switches reduce: on 2 x 8 A100 over HDR at 1 GiB it is the
// fastest way (the NICs carry half the ring's bytes), and without the key auto never runs it.
TEST(CollNet, AutoRunsItOnlyWhereTheSwitchesReduce) {
  const auto ranks = first_ranks(16);
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(1073741824.0), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  const Cluster sharp = sharp_cluster("A100-SXM-80GB", 2, 8, "ib-hdr");
  const Cluster plain = sharp_cluster("A100-SXM-80GB", 2, 8, "ib-hdr", false);
  EXPECT_EQ(resolve_algorithm(op, ranks, sharp), CollectiveAlgorithm::kCollNet);
  EXPECT_LT(collective_time(op, ranks, sharp), collective_time(op, ranks, plain));
  for (double s : {8.0, 65536.0, 1048576.0, 67108864.0, 1073741824.0, 4294967296.0}) {
    op.bytes = Bytes(s);
    EXPECT_NE(resolve_algorithm(op, ranks, plain), CollectiveAlgorithm::kCollNet) << s;
  }
  // An explicit collnet without the key, or inside one node, runs as the ring.
  op.algorithm = CollectiveAlgorithm::kCollNet;
  EXPECT_EQ(resolve_algorithm(op, ranks, plain), CollectiveAlgorithm::kRing);
  EXPECT_EQ(resolve_algorithm(op, first_ranks(8), sharp), CollectiveAlgorithm::kRing);
}

}  // namespace
}  // namespace dtsim::testing
