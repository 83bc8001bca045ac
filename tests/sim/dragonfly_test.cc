// Dragonfly networks (topology: dragonfly; Kim et al., ISCA 2008): routes, and adversarial traffic
// under minimal and Valiant routing against the closed form of max-min fair sharing.
#include <gtest/gtest.h>

#include <map>
#include <simgrid/s4u.hpp>

#include "core/hardware/dragonfly.h"
#include "route_probe.h"
#include "sim/platform.h"
#include "sim_fixtures.h"
#include "tests/sim/in_child.h"

namespace dtsim::testing {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kAlpha = 2e-6, kBeta = 25e9;  // 200 Gb/s links at efficiency 1, 2 us a route

// g = 5 groups of a = 2 routers, p = 3 nodes a router (two GPUs each, sharing one NIC), h = 2
// global links a router: a h = 4 = g - 1, so one global link joins each pair of groups (Kim et
// al.'s largest g).
Cluster dragonfly(const std::string& routing) {
  return cluster_from(
      "cluster:\n  nodes: 60\n  gpus_per_node: 2\n  network: {topology: dragonfly, nic_bandwidth: "
      "200Gbps, latency: 2us, protocol_efficiency: 1, nics_per_node: 2, dragonfly: {groups: 5, "
      "routers_per_group: 4, nodes_per_router: 3, global_links_per_router: 1, routing: " +
      routing + "}}\n");
}

// Adversarial traffic (Kim et al. §4.2): node j of every group i sends to node j of group i + 1,
// from its GPU 0 to that node's GPU 1 (so that no rank is in two flows).
std::vector<std::vector<Rank>> adversarial(const DragonflyShape& s) {
  std::vector<std::vector<Rank>> pairs;
  const int per_group = s.nodes_per_group();
  for (int n = 0; n < s.nodes(); ++n)
    pairs.push_back({2 * n, 2 * ((n + per_group) % s.nodes()) + 1});
  return pairs;
}

// Max-min fair sharing of equal flows: the flows crossing the busiest link (one direction) each
// get 1/k of it and finish last, at k S / beta. The closed form counts the flows on every link
// from the routes.
int busiest_link(const std::vector<std::vector<Rank>>& pairs, const DragonflyShape& s) {
  std::map<std::tuple<bool, int, bool>, int> load;
  int busiest = 1;  // a node's own NIC carries its one flow
  for (const auto& p : pairs)
    for (const DragonflyHop& h : dragonfly_route(p[0] / 2, p[1] / 2, s, p[0]))
      busiest = std::max(busiest, ++load[{h.global, h.link, h.up}]);
  return busiest;
}

Job flows(const std::vector<std::vector<Rank>>& pairs, double bytes, int world) {
  return concurrent_collectives(pairs, Bytes(bytes), world, CollectiveKind::kBroadcast);
}

TEST(DragonflyRouting, MinimalAndValiantRoutesHaveTheExpectedHops) {
  DragonflyShape s{5, 2, 3, 2, DragonflyRouting::kMinimal};
  EXPECT_EQ(s.links_per_group_pair(), 1);
  EXPECT_EQ(s.global_links(), 10);
  EXPECT_EQ(s.local_links(), 5);
  EXPECT_TRUE(dragonfly_route(0, 2, s, 0).empty());   // same router
  EXPECT_EQ(dragonfly_route(0, 3, s, 0).size(), 1u);  // same group: one local link
  for (int to = 6; to < 30; ++to) {                   // another group: at most l, g, l
    const auto r = dragonfly_route(0, to, s, 0);
    int globals = 0;
    for (const auto& h : r) globals += h.global;
    EXPECT_EQ(globals, 1) << to;
    EXPECT_LE(r.size(), 3u) << to;
  }
  s.routing = DragonflyRouting::kValiant;
  for (int to = 6; to < 30; ++to) {  // through an intermediate group: two global links
    const auto r = dragonfly_route(0, to, s, 0);
    int globals = 0;
    for (const auto& h : r) globals += h.global;
    EXPECT_EQ(globals, 2) << to;
    EXPECT_LE(r.size(), 5u) << to;
  }
}

TEST(DragonflyRouting, PlatformRoutesCrossTheNicsAndRouterLinks) {
  in_child_process([&] {
    const Cluster c = dragonfly("minimal");
    const RouteProbe probe(c);
    auto route = [&](Rank a, Rank b) { return probe.route(a, b); };
    // Node 0 (group 0, router 0) to node 12 (group 1, router 0): group 0's port 0 (router 0) leads
    // to group 1, whose port 3 (router 3) leads back, so: NIC, global link 0 up, then group 1's
    // local link between routers 0 and 3 (its third, index 6 + 2) down.
    const auto [names, latency] = route(0, 24);
    EXPECT_EQ(names, "nic-0-0_UP dragonfly-global-0_UP dragonfly-local-8_DOWN nic-12-0_DOWN ");
    EXPECT_NEAR(latency, 2e-6, 1e-12);
    EXPECT_EQ(route(0, 2).first, "nic-0-0_UP nic-1-0_DOWN ");
    EXPECT_EQ(route(0, 1).first, "fabric-0_UP fabric-1_DOWN ");  // inside a node
  });
}

TEST(DragonflyContention, ValiantRelievesTheGlobalLinkThatMinimalRoutingSaturates) {
  // Adversarial traffic: the 12 nodes of group i all send to group i + 1. Minimal routing puts all
  // 12 flows on the one global link between the two groups: 12 S / beta. Valiant routing spreads
  // each group's sources over the g - 2 = 3 other groups, 4 each; a global link then carries 4
  // first legs and 4 second legs (of the group before it): 8 S / beta, and the link between
  // neighbours none. Relief (g - 2) / 2 = 1.5: Valiant doubles every flow's global hops but spreads
  // them over every pair of groups (Kim et al. §4.2). Local links carry at most 6 here.
  const Cluster minimal = dragonfly("minimal"), valiant = dragonfly("valiant");
  const auto pairs = adversarial(minimal.network.dragonfly);
  ASSERT_EQ(pairs.size(), 60u);
  const int k_min = busiest_link(pairs, minimal.network.dragonfly);
  const int k_val = busiest_link(pairs, valiant.network.dragonfly);
  EXPECT_EQ(k_min, 12);  // the group's nodes on one global link
  EXPECT_EQ(k_val, 8);   // by hand above
  for (const char* fidelity : {"chunk", "collective"}) {
    const double t_min = simgrid_time(flows(pairs, kGiB, 120), minimal, fidelity);
    const double t_val = simgrid_time(flows(pairs, kGiB, 120), valiant, fidelity);
    const double f_min = kAlpha + k_min * kGiB / kBeta, f_val = kAlpha + k_val * kGiB / kBeta;
    EXPECT_NEAR(t_min, f_min, 0.01 * f_min) << fidelity;
    EXPECT_NEAR(t_val, f_val, 0.01 * f_val) << fidelity;
    EXPECT_NEAR(t_min / t_val, f_min / f_val, 0.01 * f_min / f_val) << fidelity;
    // One flow alone runs at its NIC rate under either routing, as the analytic engine says.
    const double alone = simgrid_time(flows({pairs[0]}, kGiB, 120), valiant, fidelity);
    EXPECT_NEAR(alone, kAlpha + kGiB / kBeta, 0.01 * alone) << fidelity;
    EXPECT_NEAR(analytic_time(flows({pairs[0]}, kGiB, 120), valiant), alone, 0.01 * alone);
  }
}

TEST(DragonflyContention, TheAnalyticEngineSaysItDoesNotModelTheGlobalLinks) {
  const Cluster c = dragonfly("minimal");
  const auto pairs = adversarial(c.network.dragonfly);
  const Trace t = AnalyticExecutor().run(flows(pairs, kGiB, 120), c, RunOptions{});
  bool noted = false;
  for (const auto& n : t.notes) noted = noted || n.find("dragonfly") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace dtsim::testing
