// A dragonfly (Kim et al., ISCA 2008): nodes on routers, routers in groups joined all-to-all by
// local links, groups joined by global links (core/hardware/dragonfly.h). The closed forms run
// every flow at its NIC's rate; traffic between groups shares the global links, which only the
// SimGrid engine routes. A single node has no network to route (Cluster::is_dragonfly).
#include "core/hardware/network_topology.h"

namespace dtsim {
namespace {

class DragonflyNetwork final : public NetworkTopology {
 public:
  int shared_link_region(const Cluster& c, int node) const override {
    if (!c.is_dragonfly()) return -1;
    return node / c.network.dragonfly.nodes_per_group();
  }
  bool shares_links_between_replicas() const override { return true; }
  bool fixes_node_count() const override { return true; }
  // Every router: a port per NIC of its nodes, one per other router of its group (local links)
  // and its global links.
  double switch_ports(const Cluster& c) const override {
    if (!c.is_dragonfly()) return NetworkTopology::switch_ports(c);
    const DragonflyShape& d = c.network.dragonfly;
    const double routers = static_cast<double>(d.groups) * d.routers_per_group;
    return static_cast<double>(c.nodes) * c.network.nics_per_node +
           routers * (d.routers_per_group - 1 + d.global_links_per_router);
  }
};

}  // namespace

const NetworkTopology& dragonfly_network() {
  static const DragonflyNetwork network;
  return network;
}

}  // namespace dtsim
