// Torus networks (topology: torus): dimension-order routes on the SimGrid platform, contention on
// shared cables, and the torus all-reduce against its closed form at both fidelities.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <simgrid/s4u.hpp>

#include "core/collectives/cost_model.h"
#include "core/hardware/torus.h"
#include "route_probe.h"
#include "sim/platform.h"
#include "sim_fixtures.h"
#include "tests/sim/in_child.h"

namespace dtsim::testing {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kAlpha = 2e-6, kBeta = 25e9;  // 200 Gb/s cables at efficiency 1

// Single-GPU nodes on a torus; every cable 25 GB/s per direction, 2 us for a one-hop route.
Cluster torus(const std::string& dims, int nodes, int gpus_per_node = 1,
              const std::string& extra = "") {
  return cluster_from("cluster:\n  nodes: " + std::to_string(nodes) +
                      "\n  gpus_per_node: " + std::to_string(gpus_per_node) +
                      "\n  network: {topology: torus, torus_dims: " + dims +
                      ", nic_bandwidth: 200Gbps, latency: 2us, protocol_efficiency: 1" + extra +
                      "}\n");
}

Job all_reduce(const std::vector<Rank>& ranks, double bytes, int world,
               CollectiveAlgorithm algorithm) {
  return concurrent_collectives({ranks}, Bytes(bytes), world, CollectiveKind::kAllReduce,
                                algorithm);
}

// One flow from a to b: a two-rank broadcast (a chain of one link, no pipeline fill).
std::vector<Rank> pair(Rank a, Rank b) {
  return {a, b};
}
Job flows(const std::vector<std::vector<Rank>>& pairs, double bytes, int world) {
  return concurrent_collectives(pairs, Bytes(bytes), world, CollectiveKind::kBroadcast);
}

// The torus all-reduce by hand (docs/collectives.md): node phases, then D rotations each passing
// every dimension once on data S/(g D), S/(g D k0), ..., rings both ways round when k >= 3.
double torus_formula(const std::vector<int>& dims, double s, double g, double alpha_node,
                     double beta_node, double alpha, double beta) {
  double t = g > 1 ? 2 * ((g - 1) * alpha_node + (g - 1) / g * s / beta_node) : 0;
  double slowest = 0;
  const size_t d = dims.size();
  for (size_t r = 0; r < d; ++r) {
    double x = s / g / d, rotation = 0;
    for (size_t i = 0; i < d; ++i) {
      const double k = dims[(r + i) % d], ways = k >= 3 ? 2 : 1;
      rotation += 2 * ((k - 1) * alpha + (k - 1) / k * x / (ways * beta));
      x /= k;
    }
    slowest = std::max(slowest, rotation);
  }
  return t + slowest;
}

TEST(TorusRouting, RoutesAreDimensionOrderedTheShorterWayRound) {
  const std::vector<int> dims{4, 4};
  // (0,0) -> (2,2): two hops + in x (a tie goes +), then two + in y.
  const auto r = torus_route(0, torus_node({2, 2}, dims), dims);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].dim, 0);
  EXPECT_EQ(r[1].dim, 0);
  EXPECT_EQ(r[2].dim, 1);
  EXPECT_TRUE(r[0].positive && r[3].positive);
  // (0,0) -> (3,0): one hop the - way, over node 3's + cable.
  const auto back = torus_route(0, 3, dims);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].positive);
  EXPECT_EQ(back[0].cable_owner, 3);
}

TEST(TorusRouting, PlatformRoutesCrossTheExpectedCables) {
  in_child_process([&] {
    // 4 x 4 torus, 2 GPUs per node: rank 0 (node 0) to rank 20 (node 10 = (2, 2)) crosses 4 cables
    // and takes latency + 3 x hop latency; rank 1 to rank 6 (node 3, one hop the - way) one cable.
    const Cluster c = torus("[4, 4]", 16, 2, ", torus_hop_latency: 500ns");
    const RouteProbe probe(c);
    auto route = [&](Rank a, Rank b) { return probe.route(a, b); };
    const auto [far, far_latency] = route(0, 20);
    EXPECT_EQ(far, "torus-0-d0_UP torus-1-d0_UP torus-2-d1_UP torus-6-d1_UP ");
    EXPECT_NEAR(far_latency, 2e-6 + 3 * 0.5e-6, 1e-12);
    const auto [near, near_latency] = route(1, 6);
    EXPECT_EQ(near, "torus-3-d0_DOWN ");
    EXPECT_NEAR(near_latency, 2e-6, 1e-12);
    // Same node: the GPU fabric, not the torus.
    EXPECT_EQ(route(0, 1).first, "fabric-0_UP fabric-1_DOWN ");
  });
}

TEST(TorusRouting, HopsAddLatencyAndSharedCablesHalveBandwidth) {
  // 8 B: latency only. Node 0 to node 10 is 4 hops: 2 us + 3 x 2 us (hop latency = latency).
  const Cluster c = torus("[4, 4]", 16);
  for (const char* fidelity : {"chunk", "collective"}) {
    EXPECT_NEAR(simgrid_time(flows({pair(0, 10)}, 8, 16), c, fidelity), 8e-6, 1e-8) << fidelity;
    EXPECT_NEAR(simgrid_time(flows({pair(0, 1)}, 8, 16), c, fidelity), 2e-6, 1e-8) << fidelity;
    EXPECT_NEAR(simgrid_time(flows({pair(0, 3)}, 8, 16), c, fidelity), 2e-6, 1e-8) << fidelity;
  }
  EXPECT_NEAR(point_to_point_time(Bytes(8), Endpoint::gpu(0), Endpoint::gpu(10), c).value(), 8e-6,
              1e-8);  // the analytic view
  // 1 GiB: 0 -> 2 crosses cables 0+ and 1+, 1 -> 3 crosses 1+ and 2+. Together they share cable
  // 1+ and each takes twice as long; 0 -> 2 with 4 -> 6 (the next row) share nothing.
  const double alone = simgrid_time(flows({pair(0, 2)}, kGiB, 16), c, "collective");
  EXPECT_NEAR(alone, 4e-6 + kGiB / kBeta, 1e-3 * alone);
  const double shared = simgrid_time(flows({pair(0, 2), pair(1, 3)}, kGiB, 16), c, "collective");
  const double apart = simgrid_time(flows({pair(0, 2), pair(4, 6)}, kGiB, 16), c, "collective");
  EXPECT_NEAR(shared / alone, 2.0, 0.01);
  EXPECT_NEAR(apart / alone, 1.0, 0.01);
}

TEST(TorusAllReduce, MatchesItsClosedFormOn2DAnd3DTori) {
  struct Case {
    std::string dims;
    std::vector<int> sizes;
    int gpus_per_node;
  };
  for (const Case& k : {Case{"[4, 4]", {4, 4}, 1}, Case{"[4, 4, 4]", {4, 4, 4}, 1},
                        Case{"[3, 3]", {3, 3}, 4}, Case{"[2, 2, 2]", {2, 2, 2}, 1}}) {
    int nodes = 1;
    for (int d : k.sizes) nodes *= d;
    const int n = nodes * k.gpus_per_node;
    const Cluster c = torus(k.dims, nodes, k.gpus_per_node);
    // With g GPUs a node, each cable direction carries one ring per GPU: beta / g each. The
    // default GPU (H100 on NVSwitch): 0.6 us and 370.8 GB/s inside a node (450 GB/s at NCCL's
    // NVLink efficiency 0.824).
    const double g = k.gpus_per_node;
    for (double s : {8.0, 1048576.0, kGiB}) {
      const double expected = torus_formula(k.sizes, s, g, 0.6e-6, 370.8e9, kAlpha, kBeta / g);
      const Job job = all_reduce(first_ranks(n), s, n, CollectiveAlgorithm::kHierarchical);
      EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << k.dims << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << k.dims << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected)
          << k.dims << " " << s;
    }
  }
}

TEST(TorusAllReduce, UsesEveryDimensionToBeatAFlatRing) {
  // 4 x 4, one GPU a node. A flat ring snaking along dimension 0 (0 1 2 3 7 6 5 4 8 ...) has only
  // one-hop edges on distinct cables, so it runs at its closed form: 30 alpha + 1.875 S/beta. The
  // torus all-reduce: 12 alpha + 2 x 3/4 x (S/2 + S/8) / (2 beta) = 12 alpha + 0.46875 S/beta.
  // Latency-bound it is 2.5x faster (fewer steps); bandwidth-bound 4x (both dimensions, both
  // directions: four cables a node busy instead of one).
  const Cluster c = torus("[4, 4]", 16);
  const std::vector<Rank> snake{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12};
  for (const char* fidelity : {"chunk", "collective"}) {
    for (double s : {8.0, kGiB}) {
      const double ring =
          simgrid_time(all_reduce(snake, s, 16, CollectiveAlgorithm::kRing), c, fidelity);
      const double tor = simgrid_time(
          all_reduce(first_ranks(16), s, 16, CollectiveAlgorithm::kHierarchical), c, fidelity);
      const double ring_formula = 30 * kAlpha + 1.875 * s / kBeta;
      const double torus_form = 12 * kAlpha + 0.46875 * s / kBeta;
      EXPECT_NEAR(ring, ring_formula, 0.01 * ring_formula) << fidelity << " " << s;
      EXPECT_NEAR(ring / tor, ring_formula / torus_form, 0.02 * ring_formula / torus_form)
          << fidelity << " " << s;
      EXPECT_GT(ring / tor, s > 1e6 ? 3.9 : 2.4) << fidelity << " " << s;
    }
  }
  // 4 x 4 x 4: 6x at 1 GiB against the ring's closed form (2 x 63/64 S against 0.328125 S).
  const Cluster cube = torus("[4, 4, 4]", 64);
  const double tor =
      simgrid_time(all_reduce(first_ranks(64), kGiB, 64, CollectiveAlgorithm::kHierarchical), cube,
                   "collective");
  EXPECT_NEAR((126 * kAlpha + 2.0 * 63 / 64 * kGiB / kBeta) / tor, 6.0, 0.05);
}

TEST(TorusAllReduce, AutoPicksItOnATorus) {
  const Cluster c = torus("[4, 4]", 16);
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(kGiB), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  EXPECT_EQ(resolve_collective(op, first_ranks(16), c).algorithm,
            CollectiveAlgorithm::kHierarchical);
  // A group spanning part of a dimension is not a sub-torus: the ring.
  EXPECT_FALSE(torus_all_reduce_plan({0, 1, 2}, c).has_value());
  EXPECT_EQ(resolve_collective(op, {0, 1, 2}, c).algorithm, CollectiveAlgorithm::kRing);
  // One row (a whole dimension) is: a ring both ways round.
  const auto row = torus_all_reduce_plan({0, 1, 2, 3}, c);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->sizes, std::vector<int>{4});
}

// Platform build time (docs/simgrid-platform.md records the figures); a generous bound only.
TEST(TorusPlatform, BuildsSixteenCubedNodesOfEightGpusInSeconds) {
  in_child_process([&] {
    const Cluster c = cluster_from(
        "cluster:\n  nodes: 4096\n  gpus_per_node: 8\n  network: {topology: torus, torus_dims: "
        "[16, 16, 16]}\n");
    int argc = 2;
    char arg0[] = "torus_test", arg1[] = "--log=root.thres:critical";
    char* argv[] = {arg0, arg1, nullptr};
    simgrid::s4u::Engine engine(&argc, argv);
    const auto start = std::chrono::steady_clock::now();
    const sim::Platform p = sim::build_platform(c, DType::kBf16);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("16 x 16 x 16 nodes x 8 GPUs: platform built in %.2f s\n", seconds);
    ASSERT_EQ(p.routed.size(), 32768u);
    std::vector<simgrid::s4u::Link*> links;
    double latency = 0;
    // Node 0 to node (8, 8, 8): 24 hops, 8 in each dimension.
    p.routed[0]->route_to(p.routed[static_cast<size_t>(8 * torus_node({8, 8, 8}, {16, 16, 16}))],
                          links, &latency);
    EXPECT_EQ(links.size(), 24u);
    EXPECT_LT(seconds, 60);
  });
}

}  // namespace
}  // namespace dtsim::testing
