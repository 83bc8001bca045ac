#include "sim/platform.h"

#include <algorithm>
#include <string>

#include "core/hardware/network_topology.h"
#include "core/hardware/nvlink_mesh.h"
#include "sim/internal/network_parts.h"
#include "sim/nvlink_mesh_zone.h"

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;

namespace platform_internal {

sg4::Link* duplex(sg4::NetZone* zone, const std::string& name, double bytes_per_s,
                  double latency_s) {
  return zone->create_split_duplex_link(name, bytes_per_s)->set_latency(latency_s)->seal();
}

std::vector<sg4::Link*> nic_links(const Cluster& c, const std::vector<DegradedNic>& degraded,
                                  sg4::NetZone* zone, int n) {
  const double nic_bw = c.usable_nic_bandwidth().value();
  const double nic_latency = c.network.latency.value() / 2;
  std::vector<sg4::Link*> links;
  for (int q = 0; q < c.nics(); ++q) {
    double bw = nic_bw;
    for (const DegradedNic& d : degraded)
      if (d.node == n && d.nic == q) bw *= d.fraction;
    links.push_back(
        duplex(zone, "nic-" + std::to_string(n) + "-" + std::to_string(q), bw, nic_latency));
  }
  return links;
}

}  // namespace platform_internal

namespace {

using platform_internal::build_dragonfly_network;
using platform_internal::build_torus_network;
using platform_internal::duplex;
using platform_internal::nic_links;
using platform_internal::NodeFabric;

using Direction = sg4::LinkInRoute::Direction;

// A star zone whose center is a router used as the zone's gateway.
sg4::NetZone* star_with_gateway(const std::string& name, sg4::NetZone* parent,
                                simgrid::kernel::routing::NetPoint** gateway) {
  auto* z = sg4::create_star_zone(name);
  z->set_parent(parent);
  *gateway = z->create_router(name + "-switch");
  z->add_route(*gateway, nullptr, nullptr, nullptr, {}, true);
  return z;
}

// The GPU hosts and their fabric links, and the NVLink mesh's zone where the nodes are meshes.
NodeFabric build_gpus(const Cluster& c, sg4::NetZone* root, Platform& p) {
  const int world = c.world_size();
  NodeFabric f;
  f.gpu_link.resize(static_cast<size_t>(world));
  // GPU hosts and their fabric links, all in one star zone. Flows between gpu hosts only ever
  // join GPUs of the same node, so one shared center is equivalent to one switch per node, and
  // SimGrid 3.32 builds child zones in time quadratic in their number (2048 node zones: minutes).
  // Usable bandwidth: line rate x the fabric's protocol efficiency (NCCL's NVLink/PCIe figure).
  const double fabric_bw = c.usable_fabric_bandwidth().value();
  const double hop_latency = c.intra_node.latency.value();
  const NvlinkMesh* mesh = cluster_mesh(c);
  if (mesh) {
    // NVLink meshes (the DGX-1 cube-mesh): a link per linked pair, routes relayed where a pair
    // has none (sim/nvlink_mesh_zone.h). No switch: NVLS needs NVSwitch.
    NvlinkMeshZone::Shape shape{*mesh, c.nodes, mesh_link_bandwidth(c).value(), hop_latency};
    f.mesh_zone = NvlinkMeshZone::create("gpus", root, shape, p.gpu_speed);
    for (int r = 0; r < world; ++r) p.gpu[static_cast<size_t>(r)] = f.mesh_zone->endpoint(r);
  } else {
    simgrid::kernel::routing::NetPoint* center = nullptr;
    auto* zone = star_with_gateway("gpus", root, &center);
    for (int r = 0; r < world; ++r) {
      auto* h = zone->create_host("gpu-" + std::to_string(r), p.gpu_speed);
      auto* link = duplex(zone, "fabric-" + std::to_string(r), fabric_bw, hop_latency / 2);
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                      {sg4::LinkInRoute(link, Direction::UP)}, true);
      h->seal();
      p.gpu[static_cast<size_t>(r)] = h;
      f.gpu_link[static_cast<size_t>(r)] = link;
    }
    // Each node's switch as a host on the star's center (no link of its own): a flow from a GPU
    // to it crosses exactly that GPU's link.
    for (int n = 0; n < c.nodes; ++n) {
      auto* sw = zone->create_host("nvswitch-" + std::to_string(n), p.gpu_speed);
      zone->add_route(sw->get_netpoint(), nullptr, nullptr, nullptr, {}, true);
      sw->seal();
      p.nvswitch.push_back(sw);
    }
    zone->seal();
  }

  return f;
}

// Switched networks: fat-trees (two or three levels), rail-optimized and rail-only.
void build_switched(const Cluster& c, const std::vector<DegradedNic>& degraded, sg4::NetZone* root,
                    const NodeFabric& f, Platform& p) {
  const int world = c.world_size();
  const bool pcie = c.gpus_on_pcie();
  const double nic_bw = c.usable_nic_bandwidth().value();
  // Network. A fat-tree groups nodes under leaf switches, and with three levels groups leaves into
  // pods; a rail-optimized network groups NIC k of every node under rail switch k. Flows inside a
  // group cross only the two NICs; flows between groups also cross both groups' aggregated
  // uplinks (the NIC bandwidth the group injects divided by the oversubscription), and flows
  // between pods also cross both pods' uplinks. Each GPU has one NIC host per case (`nic-local`,
  // `nic-pod`, `nic-global`) whose routes share the same link objects, in flat star zones:
  // SimGrid 3.32 creates links and hosts in time proportional to the number of zones, so a zone
  // per leaf would make large platforms quadratic (512 leaves: 2 minutes to build).
  const auto& net = c.network;
  const bool rails = c.has_rails();
  const bool pods = c.has_pods();
  const int groups = c.network_groups();
  const int pod_count = c.pods();
  simgrid::kernel::routing::NetPoint* center = nullptr;
  auto* local = star_with_gateway("network-local", root, &center);
  auto* pod_zone = star_with_gateway("network-pod", root, &center);
  auto* global = pods ? star_with_gateway("network-global", root, &center) : nullptr;
  std::vector<sg4::Link*> uplink(static_cast<size_t>(groups), nullptr);
  std::vector<double> pod_injection(static_cast<size_t>(pod_count), 0.0);
  const bool rail_only = network_topology(c).relays_between_rails(c);
  for (int k = 0; k < groups && ((rails && !rail_only) || c.has_leaves()); ++k) {
    const double bw = c.nics_in_group(k) * nic_bw / net.oversubscription;
    uplink[static_cast<size_t>(k)] = duplex(
        pod_zone, std::string(rails ? "rail-" : "leaf-") + std::to_string(k) + "-uplink", bw, 0);
    pod_injection[static_cast<size_t>(c.pod_of_group(k))] += bw;
  }
  std::vector<sg4::Link*> pod_uplink(static_cast<size_t>(pod_count), nullptr);
  for (int k = 0; k < pod_count && pods; ++k)
    pod_uplink[static_cast<size_t>(k)] =
        duplex(global, "pod-" + std::to_string(k) + "-uplink",
               pod_injection[static_cast<size_t>(k)] / net.pod_oversubscription, 0);
  auto endpoint = [&](sg4::NetZone* zone, const std::string& name,
                      const std::vector<sg4::LinkInRoute>& route) {
    auto* h = zone->create_host(name, p.gpu_speed);
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    h->seal();
    return h;
  };
  // Node by node (ranks fill nodes in order): the node's NIC links, then its GPUs' NIC hosts.
  std::vector<sg4::Link*> node_nics;
  for (Rank r = 0; r < world; ++r) {
    if (c.local_index(r) == 0) {
      const int n = c.node_of(r);
      node_nics = nic_links(c, degraded, local, n);
    }
    const auto ur = static_cast<size_t>(r);
    const auto k = static_cast<size_t>(c.network_group(r));
    std::vector<sg4::LinkInRoute> route;
    if (pcie) route.emplace_back(f.gpu_link[ur], Direction::UP);  // shared root complex
    route.emplace_back(node_nics[static_cast<size_t>(c.local_nic_of(r))], Direction::UP);
    const std::string id = std::to_string(r);
    p.nic_local[ur] = endpoint(local, "nic-local-" + id, route);
    for (int k = 0; k < c.nics() && rail_only; ++k) {
      const Rank relay = c.rail_relay(r, k);
      const auto ux = static_cast<size_t>(relay);
      std::vector<sg4::LinkInRoute> via{{f.gpu_link[ur], Direction::UP}};
      if (relay != r) via.emplace_back(f.gpu_link[ux], Direction::DOWN);
      if (relay != r && pcie) via.emplace_back(f.gpu_link[ux], Direction::UP);
      if (relay == r && !pcie) via.clear();
      if (f.mesh_zone)  // over the node's NVLinks to the relay GPU (none when it is r itself)
        via = f.mesh_zone->route_links(c.node_of(r), c.local_index(r), c.local_index(relay));
      via.emplace_back(node_nics[static_cast<size_t>(k)], Direction::UP);
      p.nic_relay.push_back(endpoint(local, "nic-relay-" + id + "-" + std::to_string(k), via));
    }
    if (uplink[k]) route.emplace_back(uplink[k], Direction::UP);
    p.nic_pod[ur] = endpoint(pod_zone, "nic-pod-" + id, route);
    if (pods) {
      route.emplace_back(pod_uplink[static_cast<size_t>(c.pod_of(r))], Direction::UP);
      p.nic_global[ur] = endpoint(global, "nic-global-" + id, route);
    }
  }
  local->seal();
  pod_zone->seal();
  if (global) global->seal();
}

}  // namespace

Platform build_platform(const Cluster& c, DType precision,
                        const std::vector<DegradedNic>& degraded) {
  Platform p;
  const int world = c.world_size();
  p.gpu.resize(static_cast<size_t>(world));
  p.nic_local.resize(static_cast<size_t>(world));
  p.nic_pod.resize(static_cast<size_t>(world));
  p.nic_global.resize(static_cast<size_t>(world));
  p.gpu_speed = c.gpu.peak_for(precision).value();

  auto* root = sg4::create_star_zone("cluster");
  // Timer host for joins and delays: enough cores that concurrent delays never share one.
  auto* timer_zone = sg4::create_star_zone("timers");
  timer_zone->set_parent(root);
  p.timer = timer_zone->create_host("timer", 1.0);
  p.timer->set_core_count(1 << 24);
  p.timer->seal();
  timer_zone->seal();

  const NodeFabric fabric = build_gpus(c, root, p);
  if (c.is_torus())
    build_torus_network(c, root, fabric, p);
  else if (c.is_dragonfly())
    build_dragonfly_network(c, degraded, root, fabric, p);
  else
    build_switched(c, degraded, root, fabric, p);
  root->seal();
  return p;
}

}  // namespace dtsim::sim
