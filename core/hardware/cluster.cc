#include "core/hardware/cluster.h"

#include <algorithm>

#include "core/hardware/torus.h"

namespace dtsim {

Cluster::Cluster(ClusterConfig config) : ClusterConfig(std::move(config)) {
  nics_ = std::max(1, network.nics_per_node);
  usable_nic_ =
      network.nic_bandwidth * network.protocol_efficiency * (1.0 - network.background_fraction);
  nodes_per_leaf_ = std::max(1, network.nodes_per_leaf);
  leaves_per_pod_ = std::max(1, network.leaves_per_pod);
  leaves_ = network.topology == Topology::kFatTree && nodes > nodes_per_leaf_;
  groups_ = has_rails() ? nics_ : leaves_ ? (nodes + nodes_per_leaf_ - 1) / nodes_per_leaf_ : 1;
  has_pods_ = leaves_ && network.levels >= 3 && groups_ > leaves_per_pod_;
  pods_ = has_pods_ ? (groups_ + leaves_per_pod_ - 1) / leaves_per_pod_ : 1;
}

Seconds Cluster::gpu_network_latency() const {
  return network.latency + (gpus_on_pcie() ? intra_node.latency : Seconds(0));
}

int Cluster::network_group(Rank r) const {
  if (has_rails()) return local_nic_of(r);
  return leaves_ ? node_of(r) / nodes_per_leaf_ : 0;
}

Rank Cluster::rail_relay(Rank r, int rail) const {
  if (local_nic_of(r) == rail) return r;
  // The first local index i with i x nics / gpus_per_node == rail.
  const int first = (rail * gpus_per_node + nics_ - 1) / nics_;
  return node_of(r) * gpus_per_node + first;
}

int Cluster::nics_in_group(int group) const {
  if (has_rails()) return nodes;  // NIC `group` of every node
  return std::min(nodes_per_leaf_, nodes - group * nodes_per_leaf_) * nics_;
}

std::vector<int> Cluster::torus_coordinates_of(int node) const {
  if (!is_torus()) return {};
  return torus_coordinates(node, network.torus_dims);
}

Cluster Cluster::with_speed_scale(std::vector<double> speed) const {
  Cluster c = *this;
  c.speed_ = std::move(speed);
  return c;
}

}  // namespace dtsim
