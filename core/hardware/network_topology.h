// What the rest of dtsim asks of the network between nodes, answered by one implementation per
// topology: network_switched.cc (star, fat-tree, rail-optimized and rail-only), network_torus.cc
// and network_dragonfly.cc. network_topology() picks one from cluster.network.topology; it is the
// one place outside the binders and the SimGrid platform that switches on the Topology enum, so
// the cost model, the collectives, the engines, the step builder and the driver ask questions
// here instead (docs/architecture.md, "Adding a topology").
//
// Each answer takes the Cluster, so an implementation can say that a topology of one node has no
// network to route (Cluster::is_torus and Cluster::is_dragonfly need more than one node).
#pragma once

#include "core/base/units.h"
#include "core/hardware/cluster.h"

namespace dtsim {

class NetworkTopology {
 public:
  virtual ~NetworkTopology() = default;

  // Nodes cabled to their neighbours rather than GPUs reaching switches through their own NICs:
  // a ring leaves a node over one cable whatever its NICs, NCCL's channel search and its
  // NVLS/CollNet/PAT algorithms do not apply, and routes run over several cables.
  virtual bool cabled_nodes(const Cluster&) const { return false; }

  // The latency of a route between two different nodes beyond its first network hop: the further
  // cables of a torus route (core/hardware/torus.h). Zero on a switched network.
  virtual Seconds extra_route_latency(const Cluster&, int, int) const { return Seconds(0); }

  // Whether a flow between GPUs on different rails first crosses the node's fabric to the GPU on
  // the destination's rail (Cluster::rail_relay): rail-only networks, which have no spine.
  virtual bool relays_between_rails(const Cluster&) const { return false; }

  // The region of a node whose traffic to other regions shares links the closed forms do not
  // model (a dragonfly's group and its global links); -1 where the topology has none.
  virtual int shared_link_region(const Cluster&, int) const { return -1; }

  // Whether the topology itself makes the traffic of one data-parallel replica use links another
  // replica's uses (torus cables, dragonfly router links, rail-only relays), so that one
  // simulated rank cannot stand for the others; oversubscription is the configuration's, and the
  // step builder checks it beside this.
  virtual bool shares_links_between_replicas() const { return false; }

  // Whether GPUs reach the network through NIC links a perturbation can degrade (a torus has
  // cables instead).
  virtual bool has_nic_links() const { return true; }

  // Whether the topology's own dimensions fix the node count, so that a second job cannot take a
  // share of the nodes (a torus's dimensions, a dragonfly's groups).
  virtual bool fixes_node_count() const { return false; }

  // The switch ports the network's cables land on, for its power (core/report/energy.h). A
  // switched network: one leaf port per NIC, and above the leaves an uplink and a port on the next
  // level per NIC for each further level, thinned by the leaf oversubscription (a star has its
  // one switch, a rail-only network no spine). None on a single node.
  virtual double switch_ports(const Cluster& c) const;
};

// The implementation for this topology (static; never null).
const NetworkTopology& network_topology(Topology topology);
inline const NetworkTopology& network_topology(const ClusterConfig& cluster) {
  return network_topology(cluster.network.topology);
}

// The implementations, for network_topology() (each file defines one).
const NetworkTopology& switched_network();
const NetworkTopology& rail_only_network();
const NetworkTopology& torus_network();
const NetworkTopology& dragonfly_network();

}  // namespace dtsim
