// Contention that only the discrete-event engine sees. Each test states the slowdown expected
// from the topology and checks that the analytic engine, which ignores contention, cannot see it.
#include <gtest/gtest.h>

#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

constexpr double kGiB = 1073741824.0;

TEST(Contention, TwoAllReducesShareAnOversubscribedUplink) {
  // 4 single-GPU nodes, 2 per leaf, 2:1 oversubscribed: each leaf's uplink carries one NIC's worth.
  // Groups {0, 2} and {1, 3} both cross the leaves. Alone, one group fills the uplink exactly;
  // together they split it, so each takes twice as long.
  const Cluster c = cluster_from(
      "cluster:\n  nodes: 4\n  gpus_per_node: 1\n  network: {topology: fat-tree, nodes_per_leaf: "
      "2, "
      "oversubscription: 2, nics_per_node: 1, nic_bandwidth: 200Gbps, protocol_efficiency: 1}\n");
  const Job alone = concurrent_collectives({{0, 2}}, Bytes(kGiB), 4);
  const Job together = concurrent_collectives({{0, 2}, {1, 3}}, Bytes(kGiB), 4);
  for (const char* fidelity : {"chunk", "collective"}) {
    const double t_alone = simgrid_time(alone, c, fidelity);
    const double t_together = simgrid_time(together, c, fidelity);
    EXPECT_NEAR(t_together / t_alone, 2.0, 0.02) << fidelity;
  }
  EXPECT_DOUBLE_EQ(analytic_time(together, c), analytic_time(alone, c));
}

TEST(Contention, OversubscribedFatTreeAgainstNonBlocking) {
  // 8 single-GPU nodes, 4 per leaf. The ring 0,4,1,5,2,6,3,7 crosses between the leaves on every
  // hop, so each leaf uplink carries 4 flows. Non-blocking, the uplink has 4 NICs' worth; at 2:1
  // it has 2, and the bandwidth term doubles.
  const std::string base =
      "cluster:\n  nodes: 8\n  gpus_per_node: 1\n  network: {topology: fat-tree, nodes_per_leaf: "
      "4, "
      "nics_per_node: 1, nic_bandwidth: 200Gbps, protocol_efficiency: 1, oversubscription: ";
  const Cluster blocking = cluster_from(base + "2}\n");
  const Cluster nonblocking = cluster_from(base + "1}\n");
  const Job job = concurrent_collectives({{0, 4, 1, 5, 2, 6, 3, 7}}, Bytes(kGiB), 8);
  for (const char* fidelity : {"chunk", "collective"}) {
    const double ratio =
        simgrid_time(job, blocking, fidelity) / simgrid_time(job, nonblocking, fidelity);
    EXPECT_NEAR(ratio, 2.0, 0.03) << fidelity;
  }
  EXPECT_DOUBLE_EQ(analytic_time(job, blocking), analytic_time(job, nonblocking));
}

TEST(Contention, RailOptimizedPenalisesAllReducesThatCrossRails) {
  // 4 nodes x 8 GPUs with a 2:1 oversubscribed spine above the rails. Eight concurrent
  // all-reduces, one per local GPU index. Same-rail groups {GPU j of every node} stay on rail
  // switch j and run as fast as on a single non-blocking leaf. Cross-rail groups {node k's GPU
  // (j + k) mod 8} send every hop through a rail uplink that has 2 NICs' worth for 4 flows.
  const std::string base =
      "cluster:\n  gpu: H100-SXM\n  nodes: 4\n  gpus_per_node: 8\n  network: {preset: ib-ndr, "
      "protocol_efficiency: 1, oversubscription: 2, topology: ";
  const Cluster rails = cluster_from(base + "rail-optimized}\n");
  const Cluster leaf = cluster_from(base + "fat-tree, nodes_per_leaf: 4}\n");
  std::vector<std::vector<Rank>> same_rail, cross_rail;
  for (int j = 0; j < 8; ++j) {
    same_rail.push_back({}), cross_rail.push_back({});
    for (int k = 0; k < 4; ++k) {
      same_rail.back().push_back(k * 8 + j);
      cross_rail.back().push_back(k * 8 + (j + k) % 8);
    }
  }
  const Job same = concurrent_collectives(same_rail, Bytes(kGiB), 32);
  const Job cross = concurrent_collectives(cross_rail, Bytes(kGiB), 32);
  for (const char* fidelity : {"chunk", "collective"}) {
    const double leaf_time = simgrid_time(cross, leaf, fidelity);
    EXPECT_NEAR(simgrid_time(same, rails, fidelity) / leaf_time, 1.0, 0.01) << fidelity;
    EXPECT_NEAR(simgrid_time(cross, rails, fidelity) / leaf_time, 2.0, 0.03) << fidelity;
  }
  EXPECT_DOUBLE_EQ(analytic_time(cross, rails), analytic_time(same, rails));
}

TEST(Contention, ThreeLevelFatTreePodUplinks) {
  // 8 single-GPU nodes, 2 per leaf, 2 leaves per pod: two pods of 4 NICs. Leaves are
  // non-blocking; at 4:1 a pod's uplink carries one NIC's worth. Groups {0, 4} and {1, 5} cross
  // pods: one alone fills a pod uplink, two together take twice as long. Inside one pod
  // ({0, 2} and {1, 3}) the leaf uplinks have room for both.
  const Cluster c = cluster_from(
      "cluster:\n  nodes: 8\n  gpus_per_node: 1\n  network: {topology: fat-tree, levels: 3, "
      "nodes_per_leaf: 2, "
      "leaves_per_pod: 2, pod_oversubscription: 4, nics_per_node: 1, nic_bandwidth: 200Gbps, "
      "protocol_efficiency: 1}\n");
  const Job alone = concurrent_collectives({{0, 4}}, Bytes(kGiB), 8);
  const Job across = concurrent_collectives({{0, 4}, {1, 5}}, Bytes(kGiB), 8);
  const Job within = concurrent_collectives({{0, 2}, {1, 3}}, Bytes(kGiB), 8);
  const double t_alone = simgrid_time(alone, c, "collective");
  EXPECT_NEAR(simgrid_time(across, c, "collective") / t_alone, 2.0, 0.03);
  EXPECT_NEAR(simgrid_time(within, c, "collective") / t_alone, 1.0, 0.01);
  EXPECT_DOUBLE_EQ(analytic_time(across, c), analytic_time(within, c));
}

TEST(SimGridFailures, AFatalSimGridErrorIsAnErrorNotACrash) {
  // A deliberately broken platform: a negative link bandwidth, which the scenario loader would
  // reject but which reaches SimGrid here. SimGrid aborts its process; dtsim must survive it.
  ClusterConfig c = cluster_from("cluster: {nodes: 1, gpus_per_node: 2}\n");
  c.intra_node.per_gpu_bandwidth = BytesPerSecond(-1);
  const Job job = concurrent_collectives({{0, 1}}, Bytes(kGiB), 2);
  try {
    simgrid_time(job, Cluster(c), "chunk");
    FAIL() << "a broken platform must not simulate";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("SimGrid simulation failed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dtsim::testing

namespace dtsim::testing {
namespace {

TEST(Contention, PcieNodesShareTheGpuLinkAndTheNic) {
  // Two nodes of 4 A100 on PCIe Gen4. (1) Four cross-node pairs {i, 4 + i} at once: with one NIC
  // per node they share it and each takes 4x as long as with a NIC per GPU. (2) GPU 0's PCIe link
  // carries both its network traffic and its traffic to the other GPUs of the node, so an
  // intra-node all-reduce slows a concurrent cross-node one; on NVSwitch the two use different
  // links and do not interact. The NICs run at half the HDR line rate, 12.5 GB/s, below the PCIe
  // link's usable 24 GB/s (NCCL's Gen4 x16 figure), so that in (1) the NICs are what is shared.
  const std::string pcie =
      "cluster:\n  gpu: A100-SXM-80GB\n  nodes: 2\n  gpus_per_node: 4\n  intra_node: pcie\n  "
      "network: "
      "{preset: ib-hdr, protocol_efficiency: 0.5, topology: star, nics_per_node: ";
  const Cluster one_nic = cluster_from(pcie + "1}\n");
  const Cluster four_nics = cluster_from(pcie + "4}\n");
  const Job pairs = concurrent_collectives({{0, 4}, {1, 5}, {2, 6}, {3, 7}}, Bytes(kGiB), 8);
  EXPECT_NEAR(
      simgrid_time(pairs, one_nic, "collective") / simgrid_time(pairs, four_nics, "collective"),
      4.0, 0.05);
  // The analytic engine assumes groups of the same shape share the node's NICs, so it agrees.
  EXPECT_NEAR(analytic_time(pairs, one_nic) / analytic_time(pairs, four_nics), 4.0, 0.05);

  // Rank 0 runs the cross-node all-reduce on one stream and the intra-node one on another.
  auto two_streams = [](bool with_local) {
    Job job = concurrent_collectives({{0, 4}}, Bytes(kGiB), 8);
    if (with_local) {
      job.groups.push_back(Group{1, "local", {0, 1, 2, 3}});
      Program& p = job.programs[0];
      auto s = p.add_stream("local");
      p.append(s,
               CollectiveOp{CollectiveKind::kAllReduce, 1, Bytes(kGiB), DType::kBf16,
                            CollectiveAlgorithm::kRing, 0},
               Label{"local", -1, -1, Phase::kOther});
    }
    return job;
  };
  const Cluster nvswitch = cluster_from(
      "cluster:\n  gpu: A100-SXM-80GB\n  nodes: 2\n  gpus_per_node: 4\n  network: {preset: ib-hdr, "
      "protocol_efficiency: 1, topology: star, nics_per_node: 4}\n");
  auto cross_node_time = [](const Job& job, const Cluster& c) {
    // The span of the first group's collective (rank 0's program is group 0's).
    Trace t = sim::SimGridExecutor(sim::SimGridOptions{FidelitySetting::kCollective, DType::kBf16})
                  .run(job, c, RunOptions{});
    for (const auto& s : t.spans)
      if (s.rank == 0 && s.op_index == 0 && s.stream == 0) return (s.end - s.start).value();
    return 0.0;
  };
  const Job alone = two_streams(false), with_local = two_streams(true);
  EXPECT_GT(cross_node_time(with_local, four_nics) / cross_node_time(alone, four_nics), 1.2);
  EXPECT_NEAR(cross_node_time(with_local, nvswitch) / cross_node_time(alone, nvswitch), 1.0, 0.01);
}

}  // namespace
}  // namespace dtsim::testing
