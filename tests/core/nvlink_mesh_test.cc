// The DGX-1 hybrid cube-mesh as NVLink links, and NCCL's ring search over it
// (core/hardware/nvlink_mesh.h).
#include <gtest/gtest.h>

#include <map>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/hardware/catalog.h"
#include "core/hardware/nvlink_mesh.h"
#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

TEST(NvlinkMesh, Dgx1HasSixLinksPerGpuToFourPeers) {
  const NvlinkMesh m = dgx1_v100_links();
  int total = 0;
  for (const auto& p : m.pairs) total += p.links;
  EXPECT_EQ(total, 24);  // 8 GPUs x 6 NVLink2 links / 2
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(m.links_of(g), 6) << g;
    int peers = 0;
    for (int h = 0; h < 8; ++h) peers += h != g && m.links_between(g, h) > 0;
    EXPECT_EQ(peers, 4) << g;
  }
  // The quads are fully connected and GPU i links to GPU i + 4.
  for (int q : {0, 4})
    for (int a = q; a < q + 4; ++a)
      for (int b = a + 1; b < q + 4; ++b) EXPECT_GT(m.links_between(a, b), 0) << a << " " << b;
  for (int i = 0; i < 4; ++i) EXPECT_GT(m.links_between(i, i + 4), 0) << i;
}

TEST(NvlinkMesh, PairsWithoutALinkRelayThroughOneGpu) {
  const NvlinkMesh m = dgx1_v100_links();
  EXPECT_EQ(relay_route(m, 0, 3), (std::vector<int>{0, 3}));
  int relayed = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const auto r = relay_route(m, a, b);
      ASSERT_FALSE(r.empty()) << a << " " << b;
      for (size_t k = 0; k + 1 < r.size(); ++k) EXPECT_GT(m.links_between(r[k], r[k + 1]), 0);
      relayed += r.size() == 3;
    }
  EXPECT_EQ(relayed, 8 * 3);  // each GPU reaches 3 of its 7 peers through another GPU
}

TEST(NvlinkMesh, NcclsRingSearchFindsSixRingsAt20GBps) {
  // NCCL's search (src/graph/search.cc) at SM70_NVLINK_BW = 20 GB/s per link: 2 rings at 40 (the
  // doubled cycle, both ways: 80 GB/s), then 2 at 30, then 6 at 20 = 120 GB/s, a GPU's whole
  // NVLink bandwidth (6 x 20), so the search stops there. NCCL's model: busbw = 6 x 20 = 120 GB/s.
  const NvlinkMesh m = dgx1_v100_links();
  const NcclRings rings = nccl_rings(m, 20);
  EXPECT_EQ(rings.rings.size(), 6u);
  EXPECT_DOUBLE_EQ(rings.speed_GBps, 20);
  EXPECT_DOUBLE_EQ(rings.bus_bandwidth_GBps(), 120);
  // Every ring passes every GPU over linked pairs, and no link direction carries more than it has.
  std::map<std::pair<int, int>, double> use;
  for (const auto& ring : rings.rings) {
    ASSERT_EQ(ring.size(), 8u);
    for (size_t k = 0; k < ring.size(); ++k) {
      const int a = ring[k], b = ring[(k + 1) % ring.size()];
      EXPECT_GT(m.links_between(a, b), 0);
      use[{a, b}] += rings.speed_GBps;
    }
  }
  for (const auto& [pair, gbps] : use)
    EXPECT_LE(gbps, 20.0 * m.links_between(pair.first, pair.second) + 1e-9);
  // dtsim's per-GPU figure for the fabric (150 GB/s line rate x 0.8 = NCCL's 6 x 20 GB/s) gives a
  // ring all-reduce the same bus bandwidth: within 10% of NCCL's model (here equal).
  const double per_gpu = find_fabric("nvlink-hybrid-cube-mesh")->usable_bandwidth().value() / 1e9;
  EXPECT_NEAR(per_gpu, rings.bus_bandwidth_GBps(), 0.1 * rings.bus_bandwidth_GBps());
}

Cluster v100(const std::string& extra = "") {
  return Cluster(load_scenario_text("cluster: {gpu: V100-SXM2-32GB, gpus_per_node: 8" + extra +
                                        "}\ntraining: {precision: fp16}\nmodel: {preset: unused}\n",
                                    "mesh.yaml")
                     .cluster);
}

std::vector<Rank> ranks(std::initializer_list<Rank> r) {
  return r;
}

TEST(NvlinkMesh, OnlyTheCubeMeshOnEightGpuNodesHasLinks) {
  EXPECT_NE(cluster_mesh(v100()), nullptr);
  EXPECT_DOUBLE_EQ(mesh_link_bandwidth(v100()).value(), 20e9);  // 150 GB/s x 0.8 / 6 links
  EXPECT_EQ(cluster_mesh(v100(", intra_node: nvswitch-nvlink2")), nullptr);
  // A uniform mesh of another vendor stays one figure per GPU.
  EXPECT_EQ(cluster_mesh(Cluster(
                load_scenario_text(
                    "cluster: {gpu: MI300X, gpus_per_node: 8}\nmodel: {preset: unused}\n", "m.yaml")
                    .cluster)),
            nullptr);
}

TEST(NvlinkMesh, TheRingsClosedFormIsChannelsTimesSpeed) {
  // A whole node: NCCL's 6 rings at 20 GB/s, 120 GB/s, one hop of 0.6 us.
  const Cluster c = v100();
  const std::vector<Rank> node = ranks({0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(ring_channels(node, c).size(), 6u);
  EXPECT_NEAR(ring_link(node, c).beta.value(), 120e9, 1);
  EXPECT_NEAR(ring_link(node, c).alpha.value(), 0.6e-6, 1e-15);
  // A doubled pair: one ring both ways at 40 GB/s; a single pair, 20.
  EXPECT_NEAR(ring_link(ranks({0, 3}), c).beta.value(), 40e9, 1);
  EXPECT_NEAR(ring_link(ranks({0, 1}), c).beta.value(), 20e9, 1);
  // A pair with no link: one ring, relayed each way (0 1 5 and 5 1 0): 20 GB/s, two hops.
  EXPECT_EQ(ring_channels(ranks({0, 5}), c).size(), 1u);
  EXPECT_NEAR(ring_link(ranks({0, 5}), c).beta.value(), 20e9, 1);
  EXPECT_NEAR(ring_link(ranks({0, 5}), c).alpha.value(), 1.2e-6, 1e-15);
  // A quad (fully connected, 4 links a GPU among it: 0-3, 3-2, 2-1 doubled): NCCL's search finds
  // 80 GB/s of rings, a GPU's 4 links there.
  EXPECT_NEAR(ring_link(ranks({0, 1, 2, 3}), c).beta.value(), 80e9, 1);
  // Point to point: a pair's thinnest link on its route.
  const LinkCost relayed = point_to_point_link(Endpoint::gpu(0), Endpoint::gpu(5), c);
  EXPECT_NEAR(relayed.beta.value(), 20e9, 1);
  EXPECT_NEAR(relayed.alpha.value(), 1.2e-6, 1e-15);
  EXPECT_NEAR(point_to_point_link(Endpoint::gpu(0), Endpoint::gpu(3), c).beta.value(), 40e9, 1);
}

TEST(NvlinkMesh, MultiNodeChannelsSpreadOverTheNics) {
  // 2 nodes x 8 V100 with 4 NICs a node (GPUs 2j, 2j+1 on NIC j): the 6 channels leave each node
  // through GPUs on different NICs, at most 2 on one NIC in each direction (6 over 4 NICs), so 3
  // NICs' worth.
  const Cluster c = v100(", nodes: 2, network: {nics_per_node: 4}");
  std::vector<Rank> all;
  for (Rank r = 0; r < 16; ++r) all.push_back(r);
  const auto channels = ring_channels(all, c);
  ASSERT_EQ(channels.size(), 6u);
  EXPECT_DOUBLE_EQ(ring_nic_count(all, c), 3);
  const NvlinkMesh m = dgx1_v100_links();
  for (const auto& order : channels)
    for (size_t i = 0; i < order.size(); ++i) {
      const Rank a = order[i], b = order[(i + 1) % order.size()];
      if (c.node_of(a) == c.node_of(b)) {
        EXPECT_GT(m.links_between(c.local_index(a), c.local_index(b)), 0);
      }
    }
}

}  // namespace
}  // namespace dtsim
