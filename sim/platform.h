// The cluster as a SimGrid platform, built in C++ (no XML). Internal to sim/.
//
// Contract:
// - Every GPU (global rank r) is a SimGrid host `gpu-r`, which runs its kernels and owns its
//   intra-node link, plus one endpoint on the inter-node network per distance: `nic-local-r` for
//   flows within its leaf (or rail), `nic-pod-r` to other leaves (or rails) of its pod, and, on a
//   three-level fat-tree, `nic-global-r` to other pods. The executor picks the pair by where the
//   two endpoints are (hosts_for, from the Cluster's node, leaf or rail and pod), so each route is
//   exactly the links the traffic crosses; links that several routes really share (a NIC, an
//   uplink, a PCIe GPU link in front of the NIC) are the same link objects in all of them.
// - Nodes: each GPU has a split-duplex link to its node's switch at the fabric's per-GPU
//   bandwidth (NVSwitch: full bisection), half the hop latency in each direction. All GPU hosts
//   share one star zone, which is equivalent because gpu-to-gpu flows never leave a node.
//   Nodes whose NVLinks form a mesh (core/hardware/nvlink_mesh.h cluster_mesh: the DGX-1
//   cube-mesh) instead have a link per linked GPU pair and routes relayed through a third GPU where
//   a pair has none (sim/nvlink_mesh_zone.h); they have no switch host.
// - NICs: nics_per_node split-duplex links per node at Cluster::usable_nic_bandwidth; each GPU
//   uses its NIC by the Cluster's GPU-NIC affinity (local_nic_of). Half the network latency on
//   each side.
// - Topology: star (one non-blocking switch); fat-tree (leaf zones of nodes_per_leaf nodes whose
//   aggregated uplink carries their NIC bandwidth / oversubscription;
//   cluster.network.nodes_per_leaf, by default 32 NICs per leaf as on 64-port NDR switches with
//   half their ports down; with levels: 3, leaves_per_pod leaves share a pod whose uplink carries
//   their uplinks' bandwidth / pod_oversubscription); rail-optimized (rail zone k holds NIC k of
//   every node; rails meet at a spine through uplinks / oversubscription); rail-only (the rails
//   without a spine: a flow to another rail leaves from the `nic-relay-r-k` endpoint, whose route
//   crosses r's fabric link UP, the relay GPU's (Cluster::rail_relay) DOWN, on PCIe nodes that
//   GPU's link UP again, and the NIC on rail k). The grouping is the
//   Cluster's (network_group, pod_of: core/hardware/cluster.h). Torus (sim/torus_zone.h:
//   one endpoint `torus-r` per rank, cables between neighbouring nodes, dimension-order routes
//   computed on demand; the NIC endpoints above are not built). Dragonfly (sim/dragonfly_zone.h:
//   one endpoint `dragonfly-r` per rank, the node's NIC links to its router, local and global
//   router links at the NIC rate, minimal or Valiant routes computed on demand).
// - Compute hosts run at the GPU's dense peak for the training precision; a kernel is an Exec of
//   (roofline seconds x peak) FLOPs, so its duration is exactly the roofline time.
// - One `timer` host with a million cores times delays and zero-time joins without sharing.
// - Which GPU links a flow crosses (both GPUs' own links inside a node, and on a mesh the
//   relay's; between nodes only NIC and uplink links, plus the GPU's own link on PCIe nodes) is
//   also stated by
//   fabric_link_users() in core/exec/activity_graph.h, whose proof that a collective is alone on
//   its links relies on it: change both together.
#pragma once

#include <simgrid/s4u.hpp>

#include <vector>

#include "core/hardware/cluster.h"

namespace dtsim::sim {

struct Platform {
  std::vector<simgrid::s4u::Host*> gpu;         // by global rank
  std::vector<simgrid::s4u::Host*> nic_local;   // by global rank: flows within its leaf or rail
  std::vector<simgrid::s4u::Host*> nic_pod;     // by global rank: flows to other leaves of its pod
  std::vector<simgrid::s4u::Host*> nic_global;  // by global rank: flows to other pods (3 levels)
  std::vector<simgrid::s4u::Host*> nvswitch;    // by node: the switch as an NVLS endpoint
  // By global rank x NICs per node + rail (topology: rail-only), else empty: rank r's flows to
  // another rail, relayed over its node's fabric to the GPU on that rail and out of its NIC.
  std::vector<simgrid::s4u::Host*> nic_relay;
  // By global rank: the endpoints of a network zone that computes its routes per flow (topology:
  // torus or dragonfly), else empty.
  std::vector<simgrid::s4u::Host*> routed;
  simgrid::s4u::Host* timer = nullptr;
  double gpu_speed = 1;  // FLOP/s of every gpu host
};

// The hosts a flow from endpoint a to endpoint b uses: the GPU hosts inside a node (a switch is
// its node's nvswitch host, reached over the GPU's own link), else the NIC hosts for the
// distance between the two GPUs' leaves (or rails) and pods, or their torus or dragonfly hosts.
inline std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*> hosts_for(const Platform& p, Endpoint a,
                                                                     Endpoint b,
                                                                     const Cluster& cluster) {
  auto inside = [&](Endpoint e) {
    return e.is_switch() ? p.nvswitch[static_cast<size_t>(e.node())]
                         : p.gpu[static_cast<size_t>(e.rank())];
  };
  if (a.is_switch() || b.is_switch() || cluster.node_of(a) == cluster.node_of(b))
    return {inside(a), inside(b)};
  const Rank ra = a.rank(), rb = b.rank();
  const auto ua = static_cast<size_t>(ra), ub = static_cast<size_t>(rb);
  if (!p.routed.empty()) return {p.routed[ua], p.routed[ub]};
  if (!p.nic_relay.empty() && cluster.network_group(ra) != cluster.network_group(rb))
    return {p.nic_relay[ua * static_cast<size_t>(cluster.nics()) +
                        static_cast<size_t>(cluster.network_group(rb))],
            p.nic_local[ub]};
  if (cluster.network_group(ra) == cluster.network_group(rb))
    return {p.nic_local[ua], p.nic_local[ub]};
  if (cluster.pod_of(ra) == cluster.pod_of(rb)) return {p.nic_pod[ua], p.nic_pod[ub]};
  return {p.nic_global[ua], p.nic_global[ub]};
}

// A NIC link at a fraction of its rate (a degraded link, core/exec/executor.h kDegradedLink).
struct DegradedNic {
  int node = 0;
  int nic = 0;  // the node's NIC index
  double fraction = 1;
};

// Builds the platform into the current Engine (which must exist and have no platform yet).
// `degraded` NICs get their fraction of the usable NIC bandwidth, in both directions.
Platform build_platform(const Cluster& cluster, DType precision,
                        const std::vector<DegradedNic>& degraded = {});

}  // namespace dtsim::sim
