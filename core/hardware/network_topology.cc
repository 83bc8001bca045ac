#include "core/hardware/network_topology.h"

#include <algorithm>

namespace dtsim {

// The one switch on the enum: a new topology adds its file and its case here.
const NetworkTopology& network_topology(Topology topology) {
  switch (topology) {
    case Topology::kStar:
    case Topology::kFatTree:
    case Topology::kRailOptimized:
      return switched_network();
    case Topology::kRailOnly:
      return rail_only_network();
    case Topology::kTorus:
      return torus_network();
    case Topology::kDragonfly:
      return dragonfly_network();
  }
  return switched_network();
}

double NetworkTopology::switch_ports(const Cluster& c) const {
  if (c.nodes <= 1) return 0;
  const double nics = static_cast<double>(c.nodes) * c.network.nics_per_node;
  if (c.network.topology == Topology::kStar) return nics;
  const double above = 2.0 * (c.network.levels - 1) / std::max(1.0, c.network.oversubscription);
  return nics * (1 + above);
}

}  // namespace dtsim
