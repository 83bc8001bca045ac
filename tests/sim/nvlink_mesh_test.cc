// The DGX-1 hybrid cube-mesh on the SimGrid platform (sim/nvlink_mesh_zone.h): a link per linked
// GPU pair, relayed routes between the others, and NCCL's rings over those links.
//
// Figures (docs/hardware.md, nvlink-hybrid-cube-mesh): one NVLink2 gives 25 GB/s per direction x
// NCCL's 0.8 = 20 GB/s (src/graph/topo.h SM70_NVLINK_BW), a hop 0.6 us. NCCL's model for a ring
// all-reduce on this topology: 6 rings at 20 GB/s, busBw = nChannels x bw = 120 GB/s
// (src/graph/tuning.cc ncclTopoTuneModel; the rings: core/hardware/nvlink_mesh.h nccl_rings).
#include <gtest/gtest.h>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/exec/activity_graph.h"
#include "core/hardware/nvlink_mesh.h"
#include "route_probe.h"
#include "sim_fixtures.h"
#include "tests/sim/in_child.h"

namespace dtsim::testing {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kLink = 20e9;            // B/s, one NVLink2 per direction as NCCL counts it
constexpr double kHop = 0.6e-6;           // s, one NVLink hop
constexpr double kNcclBusBw = 6 * kLink;  // NCCL's model: 6 rings x 20 GB/s

Cluster dgx1(int nodes) {
  return cluster_from("cluster:\n  gpu: V100-SXM2-32GB\n  nodes: " + std::to_string(nodes) +
                      "\n  gpus_per_node: 8\n  intra_node: nvlink-hybrid-cube-mesh\n"
                      "  network: {topology: star, nic_bandwidth: 100Gbps, latency: 2us, "
                      "protocol_efficiency: 1, nics_per_node: 1}\ntraining: {precision: fp16}\n");
}

TEST(CubeMesh, LinkedPairsCrossTheirLinkAndTheOthersRelay) {
  in_child_process([&] {
    const Cluster c = dgx1(1);
    const RouteProbe probe(c);
    // 0-3 is a doubled pair: its link, both ways.
    EXPECT_EQ(probe.route(0, 3).first, "nvlink-0-0-3_UP ");
    EXPECT_EQ(probe.route(3, 0).first, "nvlink-0-0-3_DOWN ");
    EXPECT_NEAR(probe.route(0, 3).second, kHop, 1e-12);
    // 0 and 5 share no link: through GPU 1, the lowest-numbered GPU linked to both; two hops.
    const auto [relayed, latency] = probe.route(0, 5);
    EXPECT_EQ(relayed, "nvlink-0-0-1_UP nvlink-0-1-5_UP ");
    EXPECT_NEAR(latency, 2 * kHop, 1e-12);
    EXPECT_EQ(probe.route(5, 0).first, "nvlink-0-1-5_DOWN nvlink-0-0-1_DOWN ");
  });
}

Job pairs(const std::vector<std::vector<Rank>>& groups, double bytes) {
  return concurrent_collectives(groups, Bytes(bytes), 8, CollectiveKind::kBroadcast);
}

TEST(CubeMesh, AFlowRunsAtItsThinnestLinkAndARelayedFlowSharesTheRelaysLink) {
  const Cluster c = dgx1(1);
  // Alone: 0 -> 3 over a doubled link (40 GB/s), 0 -> 1 over a single one (20 GB/s), 0 -> 5
  // relayed over 0-1 (single) and 1-5 (doubled): 20 GB/s and two hops. Every engine agrees.
  expect_closed_form_on_every_engine(pairs({{0, 3}}, kGiB), c, kHop + kGiB / (2 * kLink), "0-3");
  expect_closed_form_on_every_engine(pairs({{0, 1}}, kGiB), c, kHop + kGiB / kLink, "0-1");
  expect_closed_form_on_every_engine(pairs({{0, 5}}, kGiB), c, 2 * kHop + kGiB / kLink, "0-5");
  // Together, 0 -> 1 and the relayed 0 -> 5 share link 0-1's 20 GB/s: 10 GB/s each. (Groups
  // listed from 1 and 5 so that two ranks issue them; the broadcasts' root is GPU 0.)
  for (const char* fidelity : {"chunk", "collective"}) {
    const double shared = simgrid_time(pairs({{1, 0}, {5, 0}}, kGiB), c, fidelity);
    const double expected = 2 * kHop + kGiB / (kLink / 2);
    EXPECT_NEAR(shared, expected, 0.01 * expected) << fidelity;
  }
}

double all_reduce_busbw(double seconds, double bytes, int n) {
  return 2.0 * (n - 1) / n * bytes / seconds;
}

TEST(CubeMesh, ARingAllReduceOnEightGpusGetsNcclsBusBandwidth) {
  // Acceptance (issue 18, point 3): NCCL's model for this topology, 120 GB/s, within 10%. The
  // closed form: 2(N-1) hops of 0.6 us + 2(N-1)/N S / (6 x 20 GB/s), NCCL's rings each at 20 GB/s.
  const Cluster c = dgx1(1);
  const Job job = concurrent_collectives({first_ranks(8)}, Bytes(kGiB), 8,
                                         CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing);
  const double expected = 14 * kHop + 1.75 * kGiB / kNcclBusBw;
  expect_closed_form_on_every_engine(job, c, expected, "8-GPU ring all-reduce");
  for (const char* fidelity : {"chunk", "collective"}) {
    const double busbw = all_reduce_busbw(simgrid_time(job, c, fidelity), kGiB, 8);
    EXPECT_NEAR(busbw, kNcclBusBw, 0.10 * kNcclBusBw) << fidelity;
  }
  EXPECT_NEAR(all_reduce_busbw(analytic_time(job, c), kGiB, 8), kNcclBusBw, 0.10 * kNcclBusBw);
  // Its channels are NCCL's six rings, every hop over a link.
  const auto channels = ring_channels(first_ranks(8), c);
  ASSERT_EQ(channels.size(), 6u);
  const NvlinkMesh m = dgx1_v100_links();
  for (const auto& order : channels)
    for (size_t i = 0; i < order.size(); ++i)
      EXPECT_GT(m.links_between(order[i], order[(i + 1) % order.size()]), 0);
}

TEST(CubeMesh, ABroadcastInsideANodeChainsAlongNcclsRings) {
  // Broadcast from GPU 0: one pipelined chain per ring from the root, a sixth of the bytes each;
  // every hop over a link at 20 GB/s per ring: (N-1) hops of 0.6 us + S / 120 GB/s, every engine.
  const Cluster c = dgx1(1);
  const Job job = concurrent_collectives({first_ranks(8)}, Bytes(kGiB), 8,
                                         CollectiveKind::kBroadcast, CollectiveAlgorithm::kRing);
  expect_closed_form_on_every_engine(job, c, 7 * kHop + kGiB / kNcclBusBw, "broadcast");
  EXPECT_EQ(chain_channels(first_ranks(8), 0, false, c).size(), 6u);
}

TEST(CubeMesh, TheAnalyticEngineStatesWhatItTimesAtTheRingsBandwidth) {
  // The all-to-all's pairs include GPUs with no link: its closed form is not the links' (noted);
  // the ring's is (no note).
  const Cluster c = dgx1(1);
  auto notes = [&](CollectiveKind kind) {
    std::string all;
    const Job job = concurrent_collectives({first_ranks(8)}, Bytes(kGiB), 8, kind);
    for (const auto& n : AnalyticExecutor().run(job, c, RunOptions{}).notes) all += n;
    return all;
  };
  EXPECT_NE(notes(CollectiveKind::kAllToAll).find("cube-mesh"), std::string::npos);
  EXPECT_EQ(notes(CollectiveKind::kAllReduce).find("cube-mesh"), std::string::npos);
}

// The time of a schedule alone on the platform (SimGrid).
double simulated(const CollectiveSchedule& s, const Cluster& c) {
  ActivityGraph g;
  const int32_t begin = g.add(GraphNode::delay(Seconds(0)));
  const int32_t end = g.add(GraphNode::delay(Seconds(0)));
  add_schedule(g, s, begin, end);
  return sim::simulate_graph(g, c, DType::kBf16)[static_cast<size_t>(end)];
}

TEST(CubeMesh, ANaiveRingInRankOrderRelaysAndRunsAtOneLink) {
  // One ring 0 1 ... 7: 3 -> 4 and 7 -> 0 have no link and relay (through 0 and 3), 0 -> 1 and
  // 4 -> 5 are single links, and 3 -> 0 carries both relays: every hop's bottleneck is 20 GB/s,
  // so its bus bandwidth is one link's, a sixth of NCCL's rings.
  const Cluster c = dgx1(1);
  const NvlinkMesh m = dgx1_v100_links();
  const std::vector<int> naive{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_DOUBLE_EQ(mesh_ring_bandwidth(m, {naive}, true, BytesPerSecond(kLink)).value(), kLink);
  // Its bulk flows (each hop moves 2(N-1)/N S), alone on the platform: the slowest is a relayed
  // hop at 20 GB/s, two hop latencies.
  CollectiveSchedule ring;
  for (int i = 0; i < 8; ++i)
    ring.flows.push_back(Flow::between(i, (i + 1) % 8, Bytes(1.75 * kGiB)));
  const double naive_time = simulated(ring, c);
  const double naive_expected = 2 * kHop + 1.75 * kGiB / kLink;
  EXPECT_NEAR(naive_time, naive_expected, 0.01 * naive_expected);
  // NCCL's rings, the same way (one bulk flow per hop of each ring, 1/6 of the data each).
  CollectiveSchedule rings;
  for (const auto& order : ring_channels(first_ranks(8), c))
    for (size_t i = 0; i < order.size(); ++i)
      rings.flows.push_back(
          Flow::between(order[i], order[(i + 1) % order.size()], Bytes(1.75 * kGiB / 6)));
  const double nccl_time = simulated(rings, c);
  const double nccl_expected = kHop + 1.75 * kGiB / kNcclBusBw;
  EXPECT_NEAR(nccl_time, nccl_expected, 0.01 * nccl_expected);
  EXPECT_NEAR(naive_time / nccl_time, 6, 0.05);
}

TEST(CubeMesh, MultiNodeRingsFollowTheMeshAndEnginesAgree) {
  // Two DGX-1 nodes: each channel walks one of NCCL's rings inside a node, every hop inside a node
  // over a link, and the engines agree on the ring all-reduce and the hierarchical one.
  const Cluster c = dgx1(2);
  const NvlinkMesh m = dgx1_v100_links();
  for (const auto& order : ring_channels(first_ranks(16), c))
    for (size_t i = 0; i < order.size(); ++i) {
      const Rank a = order[i], b = order[(i + 1) % order.size()];
      if (c.node_of(a) == c.node_of(b)) {
        EXPECT_GT(m.links_between(c.local_index(a), c.local_index(b)), 0) << a << " " << b;
      }
    }
  for (auto algorithm : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kHierarchical}) {
    const Job job = concurrent_collectives({first_ranks(16)}, Bytes(kGiB), 16,
                                           CollectiveKind::kAllReduce, algorithm);
    const double analytic = analytic_time(job, c);
    for (const char* fidelity : {"chunk", "collective"})
      EXPECT_NEAR(simgrid_time(job, c, fidelity), analytic, 0.01 * analytic)
          << to_string(algorithm) << " " << fidelity;
  }
}

}  // namespace
}  // namespace dtsim::testing
