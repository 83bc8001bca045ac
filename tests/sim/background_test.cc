// Background traffic (scenario key background.link_fraction): other jobs hold a share f of every
// network link, so this job's ring all-reduce across leaves has its bandwidth term scaled by
// 1 / (1 - f) (Patarasuk and Yuan 2009: 2 (n - 1) / n x bytes / beta), on both engines, because
// both read the one usable NIC rate the Cluster holds (core/hardware/cluster.h).
#include <gtest/gtest.h>

#include "core/collectives/cost_model.h"
#include "tests/sim/sim_fixtures.h"

namespace dtsim::testing {
namespace {

// 4 nodes x 8 GPUs, one node per leaf: every hop between nodes crosses two leaf uplinks as well as
// two NICs. 8 x 200 Gb/s NICs per node, efficiency 1.
Cluster four_leaves(const std::string& background) {
  return cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 4\n  gpus_per_node: 8\n  intra_node: nvswitch\n"
      "  network: {topology: fat-tree, nodes_per_leaf: 1, nics_per_node: 8, nic_bandwidth: "
      "200Gbps, latency: 2us, protocol_efficiency: 1}\n" +
      background);
}

TEST(Background, DataParallelAllReduceAcrossLeavesSlowsByTheClosedForm) {
  const Cluster alone = four_leaves("");
  const Cluster shared = four_leaves("background: {link_fraction: 0.3}\n");
  ASSERT_EQ(alone.network_groups(), 4);  // the ring's hops between nodes cross leaf uplinks
  const std::vector<Rank> ranks = first_ranks(32);
  const Bytes bytes(1024.0 * 1024 * 1024);  // 1 GiB of gradients
  const Job job = concurrent_collectives({ranks}, bytes, 32);
  // The ring's bandwidth term alone, from the closed form's slowest hop (the node's NICs).
  const double n = 32, f = 0.3;
  const double bandwidth_term_s =
      (bytes * (2 * (n - 1) / n) / ring_link(ranks, alone).beta).value();
  EXPECT_DOUBLE_EQ(ring_link(ranks, shared).beta.value(),
                   ring_link(ranks, alone).beta.value() * (1 - f));
  const double added_s = bandwidth_term_s * (1 / (1 - f) - 1);  // 42.9% more bandwidth time

  const double analytic_alone = analytic_time(job, alone);
  EXPECT_NEAR(analytic_time(job, shared) / (analytic_alone + added_s), 1.0, 0.01);
  for (const std::string fidelity : {"collective", "chunk"}) {
    const double sim_alone = simgrid_time(job, alone, fidelity);
    EXPECT_NEAR(simgrid_time(job, shared, fidelity) / (sim_alone + added_s), 1.0, 0.01) << fidelity;
    // And the two engines agree with each other under background traffic, as without it.
    EXPECT_NEAR(simgrid_time(job, shared, fidelity) / analytic_time(job, shared), 1.0, 0.01)
        << fidelity;
  }
}

TEST(Background, ZeroFractionLeavesEveryTimeUnchangedBitForBit) {
  const Cluster alone = four_leaves("");
  const Cluster zero = four_leaves("background: {link_fraction: 0}\n");
  EXPECT_EQ(zero.usable_nic_bandwidth().value(), alone.usable_nic_bandwidth().value());
  const Job job = concurrent_collectives({first_ranks(32)}, Bytes(64.0 * 1024 * 1024), 32);
  EXPECT_EQ(analytic_time(job, zero), analytic_time(job, alone));
  EXPECT_EQ(simgrid_time(job, zero, "chunk"), simgrid_time(job, alone, "chunk"));
}

TEST(Background, AJobInsideOneNodeIsNotSlowed) {
  // Links inside a node are the job's own: 8 GPUs on one node's NVSwitch.
  const Cluster alone = four_leaves("");
  const Cluster shared = four_leaves("background: {link_fraction: 0.5}\n");
  const Job job = concurrent_collectives({first_ranks(8)}, Bytes(256.0 * 1024 * 1024), 32);
  EXPECT_EQ(analytic_time(job, shared), analytic_time(job, alone));
  EXPECT_EQ(simgrid_time(job, shared, "collective"), simgrid_time(job, alone, "collective"));
}

}  // namespace
}  // namespace dtsim::testing
