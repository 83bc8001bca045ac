#include "sim/platform.h"

#include <algorithm>
#include <string>

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;

namespace {

using Direction = sg4::LinkInRoute::Direction;

sg4::Link* duplex(sg4::NetZone* zone, const std::string& name, double bytes_per_s, double latency_s) {
  return zone->create_split_duplex_link(name, bytes_per_s)->set_latency(latency_s)->seal();
}

// A star zone whose center is a router used as the zone's gateway.
sg4::NetZone* star_with_gateway(const std::string& name, sg4::NetZone* parent, simgrid::kernel::routing::NetPoint** gateway) {
  auto* z = sg4::create_star_zone(name);
  z->set_parent(parent);
  *gateway = z->create_router(name + "-switch");
  z->add_route(*gateway, nullptr, nullptr, nullptr, {}, true);
  return z;
}

}  // namespace

Platform build_platform(const ClusterConfig& c, DType precision) {
  Platform p;
  const int world = c.total_gpus();
  const int gpn = c.gpus_per_node;
  const int nics = std::max(1, c.network.nics_per_node);
  p.gpu.resize(static_cast<size_t>(world));
  p.nic_local.resize(static_cast<size_t>(world));
  p.nic_global.resize(static_cast<size_t>(world));
  p.gpu_speed = c.gpu.peak_for(precision).value();
  p.nodes_per_leaf = std::max(1, c.network.nodes_per_leaf);

  auto* root = sg4::create_star_zone("cluster");
  // Timer host for joins and delays: enough cores that concurrent delays never share one.
  auto* timer_zone = sg4::create_star_zone("timers");
  timer_zone->set_parent(root);
  p.timer = timer_zone->create_host("timer", 1.0);
  p.timer->set_core_count(1 << 24);
  p.timer->seal();
  timer_zone->seal();

  // GPU hosts and their fabric links, all in one star zone. Flows between gpu hosts only ever
  // join GPUs of the same node, so one shared center is equivalent to one switch per node, and
  // SimGrid 3.32 builds child zones in time quadratic in their number (2048 node zones: minutes).
  const double fabric_bw = c.intra_node.per_gpu_bandwidth.value();
  const double hop_latency = c.intra_node.latency.value();
  const bool pcie = c.intra_node.kind == FabricKind::kPcie;
  std::vector<sg4::Link*> gpu_link(static_cast<size_t>(world));
  {
    simgrid::kernel::routing::NetPoint* center = nullptr;
    auto* zone = star_with_gateway("gpus", root, &center);
    for (int r = 0; r < world; ++r) {
      auto* h = zone->create_host("gpu-" + std::to_string(r), p.gpu_speed);
      auto* link = duplex(zone, "fabric-" + std::to_string(r), fabric_bw, hop_latency / 2);
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link, Direction::UP)}, true);
      h->seal();
      p.gpu[static_cast<size_t>(r)] = h;
      gpu_link[static_cast<size_t>(r)] = link;
    }
    zone->seal();
  }

  // Network. A fat-tree groups nodes under leaf switches; a rail-optimized network groups NIC k of
  // every node under rail switch k. Flows inside a group cross only the two NICs; flows between
  // groups also cross both groups' aggregated uplinks (the NIC bandwidth the group injects divided
  // by the oversubscription). Each GPU has one NIC host per case, `nic-local` and `nic-global`,
  // whose routes share the same NIC link objects, in two flat star zones: SimGrid 3.32 creates
  // links and hosts in time proportional to the number of zones, so a zone per leaf would make
  // large platforms quadratic (512 leaves: 2 minutes to build).
  const auto& net = c.network;
  const double nic_bw = net.nic_bandwidth.value() * net.protocol_efficiency;
  const double nic_latency = net.latency.value() / 2;
  const bool rails = net.topology == Topology::kRailOptimized;
  const bool leaves = net.topology == Topology::kFatTree && c.nodes > p.nodes_per_leaf;
  const int groups = rails ? nics : leaves ? (c.nodes + p.nodes_per_leaf - 1) / p.nodes_per_leaf : 1;
  p.group.resize(static_cast<size_t>(world));
  simgrid::kernel::routing::NetPoint* center = nullptr;
  auto* local = star_with_gateway("network-local", root, &center);
  auto* global = star_with_gateway("network-global", root, &center);
  std::vector<sg4::Link*> uplink(static_cast<size_t>(groups), nullptr);
  for (int k = 0; k < groups && (rails || leaves); ++k) {
    const int nodes_in_group = rails ? c.nodes : std::min(p.nodes_per_leaf, c.nodes - k * p.nodes_per_leaf);
    const int nics_in_group = rails ? nodes_in_group : nodes_in_group * nics;
    uplink[static_cast<size_t>(k)] = duplex(global, std::string(rails ? "rail-" : "leaf-") + std::to_string(k) + "-uplink",
                                            nics_in_group * nic_bw / net.oversubscription, 0);
  }
  for (int n = 0; n < c.nodes; ++n) {
    std::vector<sg4::Link*> nic_links;
    for (int q = 0; q < nics; ++q)
      nic_links.push_back(duplex(local, "nic-" + std::to_string(n) + "-" + std::to_string(q), nic_bw, nic_latency));
    for (int i = 0; i < gpn; ++i) {
      const int r = n * gpn + i;
      const int q = i * nics / gpn;  // GPU-NIC affinity
      const int k = rails ? q : leaves ? n / p.nodes_per_leaf : 0;
      p.group[static_cast<size_t>(r)] = k;
      std::vector<sg4::LinkInRoute> route;
      if (pcie) route.emplace_back(gpu_link[static_cast<size_t>(r)], Direction::UP);  // shared root complex
      route.emplace_back(nic_links[static_cast<size_t>(q)], Direction::UP);
      auto* hl = local->create_host("nic-local-" + std::to_string(r), p.gpu_speed);
      local->add_route(hl->get_netpoint(), nullptr, nullptr, nullptr, route, true);
      hl->seal();
      p.nic_local[static_cast<size_t>(r)] = hl;
      if (uplink[static_cast<size_t>(k)]) route.emplace_back(uplink[static_cast<size_t>(k)], Direction::UP);
      auto* hg = global->create_host("nic-global-" + std::to_string(r), p.gpu_speed);
      global->add_route(hg->get_netpoint(), nullptr, nullptr, nullptr, route, true);
      hg->seal();
      p.nic_global[static_cast<size_t>(r)] = hg;
    }
  }
  local->seal();
  global->seal();
  root->seal();
  return p;
}

}  // namespace dtsim::sim
