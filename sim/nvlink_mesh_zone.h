// A SimGrid netzone for GPUs on nodes whose NVLinks form a mesh (core/hardware/nvlink_mesh.h, the
// DGX-1 hybrid cube-mesh), with one host per GPU. Internal to sim/.
//
// Why a zone of its own: a star zone gives each host one route to its centre, so a route cannot
// depend on both ends; a full zone per node would need a child zone per node (SimGrid 3.32 builds
// zones in time quadratic in their number). This zone computes each route on demand from
// relay_route(), so building it is linear in GPUs and it stores no route table.
//
// Contract:
// - endpoint(r) is rank r's host (`gpu-r`). Links: one split-duplex link per node and linked pair
//   (`nvlink-N-a-b`, a < b local indices), at its link count x one NVLink's usable rate per
//   direction (mesh_link_bandwidth), a hop's latency each; UP carries a -> b.
// - A route between two GPUs of one node crosses the links of relay_route(a, b) in their
//   directions: one link between linked GPUs, two through the relay GPU otherwise. Routes between
//   GPUs of different nodes are never asked for (flows between nodes leave from the NIC hosts,
//   sim/platform.h), and have no links.
// - route_links(): the same links for a route built outside the zone (a rail-only relay).
#pragma once

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <vector>

#include "core/hardware/nvlink_mesh.h"

namespace dtsim::sim {

class NvlinkMeshZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  struct Shape {
    NvlinkMesh mesh;
    int nodes = 0;
    double link_bytes_per_s = 1;  // one NVLink, per direction
    double latency_s = 0;         // one link
  };

  static NvlinkMeshZone* create(const std::string& name, simgrid::s4u::NetZone* parent,
                                const Shape& shape, double host_speed);

  simgrid::s4u::Host* endpoint(int rank) const { return endpoint_[static_cast<size_t>(rank)]; }

  // The links, in their directions, from GPU a to GPU b of `node` (local indices).
  std::vector<simgrid::s4u::LinkInRoute> route_links(int node, int a, int b) const;

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  NvlinkMeshZone(const std::string& name, Shape shape);
  // The links from GPU a to GPU b of `node`, each with whether it is crossed UP.
  std::vector<std::pair<simgrid::s4u::SplitDuplexLink*, bool>> hops(int node, int a, int b) const;

  Shape shape_;
  std::vector<simgrid::s4u::Host*> endpoint_;  // by rank
  std::vector<int> rank_of_vertex_;            // by netpoint id in this zone
  // By node x gpus x gpus + a x gpus + b (a < b): the pair's link, nullptr where none.
  std::vector<simgrid::s4u::SplitDuplexLink*> link_;
};

}  // namespace dtsim::sim
