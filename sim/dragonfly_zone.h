// A SimGrid netzone for a dragonfly between nodes (core/hardware/dragonfly.h), with one endpoint
// host per GPU. Internal to sim/.
//
// Why not SimGrid's own create_dragonfly_zone: it builds Cray Cascade's shape (groups, chassis,
// routers, with a fixed blue/black/green link arrangement) rather than Kim et al.'s (a, p, h), it
// routes minimally only, and its elements are one netpoint per node, so the GPUs of a node would
// need a child zone per node (quadratic build time in SimGrid 3.32, as sim/torus_zone.h measured)
// or would share one host. This zone, like the torus one, computes each route on demand from
// dragonfly_route(), minimal or Valiant, and stores no route table.
//
// Contract:
// - endpoint(r) is rank r's host (`dragonfly-r`). A route from rank a to rank b (different nodes)
//   is a's links towards its router UP (its PCIe link on PCIe nodes, then its NIC), the router
//   links of dragonfly_route(node a, node b, flow key a) in their directions, then b's links DOWN
//   in reverse.
// - Router links (`dragonfly-local-i`, `dragonfly-global-i`) are split-duplex at the given
//   bandwidth per direction with no latency of their own: a route's latency is that of the
//   links in front of the routers (the NICs carry half the network latency each).
#pragma once

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <vector>

#include "core/hardware/dragonfly.h"

namespace dtsim::sim {

class DragonflyZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  struct Shape {
    DragonflyShape network;
    std::vector<int> node_of_rank;  // by rank: its node (Cluster::node_of); one host per rank
    double link_bytes_per_s = 1;    // every local and global link, per direction
  };

  // Creates the zone under `parent`, its hosts and its router links. `injection[r]` lists rank
  // r's links from its GPU to its router, in order (UP leaves the GPU).
  static DragonflyZone* create(
      const std::string& name, simgrid::s4u::NetZone* parent, const Shape& shape, double host_speed,
      const std::vector<std::vector<simgrid::s4u::SplitDuplexLink*>>& injection);

  simgrid::s4u::Host* endpoint(int rank) const { return endpoint_[static_cast<size_t>(rank)]; }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  DragonflyZone(const std::string& name, Shape shape);

  Shape shape_;
  std::vector<simgrid::s4u::Host*> endpoint_;                           // by rank
  std::vector<int> rank_of_vertex_;                                     // by netpoint id
  std::vector<simgrid::s4u::SplitDuplexLink*> local_, global_;          // by link index
  std::vector<std::vector<simgrid::s4u::SplitDuplexLink*>> injection_;  // by rank
};

}  // namespace dtsim::sim
