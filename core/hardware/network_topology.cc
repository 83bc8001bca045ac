#include "core/hardware/network_topology.h"

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

}  // namespace dtsim
