// A SimGrid netzone for a torus between nodes, with one endpoint host per GPU. Internal to sim/.
//
// Why not SimGrid's own create_torus_zone: its elements are one netpoint per torus position, so
// the GPUs of a node would need a child zone per node (SimGrid 3.32 builds zones in time quadratic
// in their number: 2048 node zones took 114 s) or would share one host, which loses a PCIe GPU's
// own link in front of the network. Star zones cannot express routes that depend on both ends.
// This zone computes each route on demand from core/hardware/torus.h (dimension-order, the shorter
// way round), so building it is linear in nodes and GPUs and it stores no route table.
//
// Contract:
// - endpoint(r) is rank r's host (`torus-r`). A route from rank a to rank b (different nodes) is
//   [a's PCIe link UP] + the cables of torus_route(node a, node b) in their directions +
//   [b's PCIe link DOWN]; the PCIe links only on PCIe nodes, as on the other topologies.
// - Latency of a route of h hops: latency + (h - 1) x hop_latency (+ the PCIe links' latency).
// - Cables: one split-duplex link per node and dimension (`torus-N-dD`), at the given bandwidth
//   per direction, owned by the node on its - side (core/hardware/torus.h).
#pragma once

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <vector>

namespace dtsim::sim {

class TorusZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  struct Shape {
    std::vector<int> dims;          // nodes per dimension
    std::vector<int> node_of_rank;  // by rank: its node (Cluster::node_of); one host per rank
    double cable_bytes_per_s = 1;   // per direction
    double latency_s = 0;           // a one-hop route
    double hop_latency_s = 0;       // each further hop
  };

  // Creates the zone under `parent`, its hosts and its cables. `injection[r]` is rank r's link in
  // front of the network (a PCIe GPU link, UP out of the GPU) or nullptr.
  static TorusZone* create(const std::string& name, simgrid::s4u::NetZone* parent,
                           const Shape& shape, double host_speed,
                           const std::vector<simgrid::s4u::SplitDuplexLink*>& injection);

  simgrid::s4u::Host* endpoint(int rank) const { return endpoint_[static_cast<size_t>(rank)]; }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  TorusZone(const std::string& name, Shape shape);

  Shape shape_;
  std::vector<simgrid::s4u::Host*> endpoint_;              // by rank
  std::vector<int> rank_of_vertex_;                        // by netpoint id in this zone
  std::vector<simgrid::s4u::SplitDuplexLink*> cable_;      // by node x dims + dim
  std::vector<simgrid::s4u::SplitDuplexLink*> injection_;  // by rank, may hold nullptr
};

}  // namespace dtsim::sim
