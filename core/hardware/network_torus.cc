// A torus: each node cabled to its neighbours in every dimension at the NIC rate (TPU-style
// pods), routes dimension by dimension (core/hardware/torus.h), a hop latency per further cable.
// A single node has no network to route (Cluster::is_torus).
#include "core/hardware/network_topology.h"

#include <algorithm>

#include "core/hardware/torus.h"

namespace dtsim {
namespace {

class TorusNetwork final : public NetworkTopology {
 public:
  bool cabled_nodes(const Cluster& c) const override { return c.is_torus(); }
  Seconds extra_route_latency(const Cluster& c, int node_a, int node_b) const override {
    if (!c.is_torus()) return Seconds(0);
    const auto hops = torus_route(node_a, node_b, c.network.torus_dims);
    return c.network.torus_hop_latency *
           (static_cast<double>(std::max<size_t>(hops.size(), 1)) - 1.0);
  }
  bool shares_links_between_replicas() const override { return true; }
  bool has_nic_links() const override { return false; }
  bool fixes_node_count() const override { return true; }
  // Nodes cable to each other directly: no switches.
  double switch_ports(const Cluster&) const override { return 0; }
};

}  // namespace

const NetworkTopology& torus_network() {
  static const TorusNetwork network;
  return network;
}

}  // namespace dtsim
