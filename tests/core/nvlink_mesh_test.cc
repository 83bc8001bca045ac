// The DGX-1 hybrid cube-mesh as NVLink links, and NCCL's ring search over it
// (core/hardware/nvlink_mesh.h).
#include <gtest/gtest.h>

#include <map>

#include "core/hardware/catalog.h"
#include "core/hardware/nvlink_mesh.h"

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

}  // namespace
}  // namespace dtsim
