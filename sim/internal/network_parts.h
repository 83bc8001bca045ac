// Internal to sim/: what the platform builder (sim/platform.cc) shares with the network builders
// of the topologies that have a zone of their own (sim/torus_zone.cc, sim/dragonfly_zone.cc).
// build_platform makes the GPU hosts and their fabric links, then hands the cluster's network to
// its topology's builder: the one place in sim/ that chooses by topology.
#pragma once

#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

#include "core/hardware/cluster.h"
#include "sim/nvlink_mesh_zone.h"
#include "sim/platform.h"

namespace dtsim::sim::platform_internal {

// The GPU hosts' fabric links, and the NVLink mesh's zone where the nodes are meshes.
struct NodeFabric {
  std::vector<simgrid::s4u::Link*> gpu_link;  // by rank: its link to the node's switch
  const NvlinkMeshZone* mesh_zone = nullptr;
};

// A split-duplex link of `bytes_per_s` each way, sealed.
simgrid::s4u::Link* duplex(simgrid::s4u::NetZone* zone, const std::string& name, double bytes_per_s,
                           double latency_s);

// Node n's NIC links, at their degraded fraction where one is.
std::vector<simgrid::s4u::Link*> nic_links(const Cluster& c,
                                           const std::vector<DegradedNic>& degraded,
                                           simgrid::s4u::NetZone* zone, int n);

// The networks with a zone of their own: each routes its flows and fills p.routed.
void build_torus_network(const Cluster& c, simgrid::s4u::NetZone* root, const NodeFabric& f,
                         Platform& p);
void build_dragonfly_network(const Cluster& c, const std::vector<DegradedNic>& degraded,
                             simgrid::s4u::NetZone* root, const NodeFabric& f, Platform& p);

}  // namespace dtsim::sim::platform_internal
