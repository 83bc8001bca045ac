// Rail-only networks (topology: rail-only; Wang et al. 2023, "How to build low-cost networks for
// large language models (without sacrificing performance)"): NIC k of every node on rail switch k
// and no spine, so a flow between rails relays over NVLink to the GPU on the destination's rail.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "core/collectives/cost_model.h"
#include "route_probe.h"
#include "sim/platform.h"
#include "sim_fixtures.h"
#include "tests/sim/in_child.h"

namespace dtsim::testing {
namespace {

constexpr double kGiB = 1073741824.0;
// 200 Gb/s NICs at efficiency 1, 2 us between nodes; inside an H100 node NVSwitch at NCCL's
// NVLink figure (450 GB/s x 0.824 = 370.8 GB/s, 0.6 us a hop: docs/hardware.md).
constexpr double kNetAlpha = 2e-6, kNicBeta = 25e9, kNvAlpha = 0.6e-6;

Cluster rails(const std::string& topology, int nodes) {
  return cluster_from("cluster:\n  gpu: H100-SXM\n  nodes: " + std::to_string(nodes) +
                      "\n  gpus_per_node: 8\n  network: {topology: " + topology +
                      ", nics_per_node: 8, nic_bandwidth: 200Gbps, latency: 2us, "
                      "protocol_efficiency: 1}\n");
}

Job flows(const std::vector<std::vector<Rank>>& pairs, double bytes, int world) {
  return concurrent_collectives(pairs, Bytes(bytes), world, CollectiveKind::kBroadcast);
}

TEST(RailOnly, AFlowBetweenRailsRelaysOverTheFabricToTheDestinationsRail) {
  in_child_process([&] {
    const Cluster c = rails("rail-only", 2);
    EXPECT_EQ(c.rail_relay(0, 1), 1);
    EXPECT_EQ(c.rail_relay(10, 5), 13);
    const RouteProbe probe(c);
    auto route = [&](Rank a, Rank b) { return probe.route(a, b); };
    // GPU 0 of node 0 to GPU 1 of node 1: over NVSwitch to GPU 1 of node 0, out of its NIC (rail
    // 1).
    const auto [cross, cross_latency] = route(0, 9);
    EXPECT_EQ(cross, "fabric-0_UP fabric-1_DOWN nic-0-1_UP nic-1-1_DOWN ");
    EXPECT_NEAR(cross_latency, kNvAlpha + kNetAlpha, 1e-12);
    // The same rail: straight through the rail switch.
    EXPECT_EQ(route(0, 8).first, "nic-0-0_UP nic-1-0_DOWN ");
  });
}

TEST(RailOnly, RelayedFlowsShareTheDestinationRailsNic) {
  // Three nodes. 0 -> 9 and 2 -> 17 both go to rail 1, so both relay through GPU 1 of node 0 and
  // leave by its NIC: each gets half of it, alpha + 2 S / beta. On a rail-optimized network the
  // spine carries them from NICs 0 and 2: alpha + S / beta each.
  const Cluster only = rails("rail-only", 3), optimized = rails("rail-optimized", 3);
  const std::vector<std::vector<Rank>> pairs{{0, 9}, {2, 17}};
  for (const char* fidelity : {"chunk", "collective"}) {
    const double relayed = simgrid_time(flows(pairs, kGiB, 24), only, fidelity);
    const double spine = simgrid_time(flows(pairs, kGiB, 24), optimized, fidelity);
    const double f_relayed = kNvAlpha + kNetAlpha + 2 * kGiB / kNicBeta;
    const double f_spine = kNetAlpha + kGiB / kNicBeta;
    EXPECT_NEAR(relayed, f_relayed, 0.01 * f_relayed) << fidelity;
    EXPECT_NEAR(spine, f_spine, 0.01 * f_spine) << fidelity;
    // One relayed flow alone: the closed form, on both engines, with the relay's NVLink hop.
    const double alone = simgrid_time(flows({pairs[0]}, kGiB, 24), only, fidelity);
    const double f_alone = kNvAlpha + kNetAlpha + kGiB / kNicBeta;
    EXPECT_NEAR(alone, f_alone, 0.01 * f_alone) << fidelity;
    EXPECT_NEAR(analytic_time(flows({pairs[0]}, kGiB, 24), only), f_alone, 0.01 * f_alone);
  }
  // 8 B: latency only, the NVLink hop included, on both engines.
  EXPECT_NEAR(simgrid_time(flows({pairs[0]}, 8, 24), only, "chunk"), kNvAlpha + kNetAlpha, 1e-8);
  EXPECT_NEAR(point_to_point_time(Bytes(8), Endpoint::gpu(0), Endpoint::gpu(9), only).value(),
              kNvAlpha + kNetAlpha, 1e-8);
}

}  // namespace
}  // namespace dtsim::testing
