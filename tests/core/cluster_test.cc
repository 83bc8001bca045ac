// The resolved Cluster (core/hardware/cluster.h): the one definition of node-of-rank, GPU-NIC
// affinity, usable rates and the leaf, rail and pod grouping; and typed flow endpoints
// (core/hardware/endpoint.h).
#include "core/hardware/cluster.h"

#include <gtest/gtest.h>

#include <string>

#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

Cluster cluster(const std::string& yaml) {
  return Cluster(load_scenario_text(yaml + "model: {preset: unused}\n", "cluster.yaml").cluster);
}

TEST(Cluster, RanksFillNodesAndPairWithTheirNearestNic) {
  // 8 GPUs and 4 NICs a node: GPUs 2k and 2k + 1 share NIC k.
  const Cluster c = cluster(
      "cluster:\n  nodes: 3\n  gpus_per_node: 8\n  network: {topology: star, nics_per_node: 4, "
      "nic_bandwidth: 200Gbps, protocol_efficiency: 0.5}\n");
  EXPECT_EQ(c.world_size(), 24);
  EXPECT_EQ(c.node_of(13), 1);
  EXPECT_EQ(c.local_index(13), 5);
  EXPECT_EQ(c.nics(), 4);
  EXPECT_EQ(c.local_nic_of(13), 2);
  EXPECT_EQ(c.nic_of(13), 6);
  EXPECT_EQ(c.nic_of(16), 8);
  // 200 Gb/s at efficiency 0.5: 12.5 GB/s per direction.
  EXPECT_DOUBLE_EQ(c.usable_nic_bandwidth().value(), 12.5e9);
  EXPECT_DOUBLE_EQ(c.usable_fabric_bandwidth().value(), c.intra_node.usable_bandwidth().value());
  // A star has one group and one pod.
  EXPECT_EQ(c.network_groups(), 1);
  EXPECT_EQ(c.network_group(23), 0);
  EXPECT_EQ(c.pod_of(23), 0);
}

TEST(Cluster, EndpointsAreOnTheirGpusNodeOrTheSwitchsOwn) {
  const Cluster c = cluster("cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8}\n");
  EXPECT_EQ(c.node_of(Endpoint::gpu(9)), 1);
  EXPECT_EQ(c.node_of(Endpoint::node_switch(1)), 1);
  EXPECT_TRUE(Endpoint::node_switch(0).is_switch());
  EXPECT_EQ(Endpoint::node_switch(1).node(), 1);
  EXPECT_EQ(Endpoint::gpu(3).rank(), 3);
  // A switch is not the GPU with the same index.
  EXPECT_NE(Endpoint::gpu(1), Endpoint::node_switch(1));
  EXPECT_EQ(Endpoint::gpu(1), Endpoint::gpu(1));
}

TEST(Cluster, FatTreeLeavesAndPods) {
  // 10 nodes, 4 per leaf: leaves of 4, 4 and 2 nodes; with 2 leaves a pod, pods {0, 1} and {2}.
  const Cluster c = cluster(
      "cluster:\n  nodes: 10\n  gpus_per_node: 2\n  network: {topology: fat-tree, levels: 3, "
      "nodes_per_leaf: 4, leaves_per_pod: 2, nics_per_node: 2}\n");
  EXPECT_TRUE(c.has_leaves());
  EXPECT_FALSE(c.has_rails());
  EXPECT_TRUE(c.has_pods());
  EXPECT_EQ(c.network_groups(), 3);
  EXPECT_EQ(c.pods(), 2);
  EXPECT_EQ(c.network_group(7), 0);   // node 3
  EXPECT_EQ(c.network_group(8), 1);   // node 4
  EXPECT_EQ(c.network_group(19), 2);  // node 9
  EXPECT_EQ(c.pod_of(8), 0);
  EXPECT_EQ(c.pod_of(19), 1);
  EXPECT_EQ(c.pod_of_group(2), 1);
  EXPECT_EQ(c.nics_in_group(0), 8);
  EXPECT_EQ(c.nics_in_group(2), 4);
}

TEST(Cluster, RailsGroupTheNicsOfOneIndex) {
  const Cluster c = cluster(
      "cluster:\n  nodes: 4\n  gpus_per_node: 8\n  network: {topology: rail-optimized, "
      "nics_per_node: 4}\n");
  EXPECT_TRUE(c.has_rails());
  EXPECT_FALSE(c.has_leaves());
  EXPECT_EQ(c.network_groups(), 4);
  EXPECT_EQ(c.network_group(8 + 5), 2);  // GPU 5 of node 1 uses NIC 2
  EXPECT_EQ(c.nics_in_group(2), 4);      // NIC 2 of every node
}

TEST(Cluster, PcieGpusReachTheNetworkThroughTheirLink) {
  const Cluster pcie = cluster(
      "cluster:\n  gpu: A100-SXM-80GB\n  nodes: 2\n  gpus_per_node: 4\n  intra_node: pcie\n  "
      "network: {topology: star, latency: 2us}\n");
  EXPECT_TRUE(pcie.gpus_on_pcie());
  EXPECT_DOUBLE_EQ(pcie.gpu_network_latency().value(),
                   (pcie.network.latency + pcie.intra_node.latency).value());
  const Cluster nvswitch = cluster(
      "cluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  network: {latency: 2us}\n");
  EXPECT_FALSE(nvswitch.gpus_on_pcie());
  EXPECT_DOUBLE_EQ(nvswitch.gpu_network_latency().value(), 2e-6);
}

TEST(Cluster, ATorusOfOneNodeHasNoDimensions) {
  EXPECT_TRUE(
      cluster("cluster: {nodes: 16, gpus_per_node: 1, network: {topology: torus}}\n").is_torus());
  EXPECT_FALSE(
      cluster("cluster: {nodes: 1, gpus_per_node: 8, network: {topology: torus}}\n").is_torus());
  EXPECT_FALSE(cluster("cluster: {nodes: 4, gpus_per_node: 8}\n").is_torus());
}

}  // namespace
}  // namespace dtsim
