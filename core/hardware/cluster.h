// The resolved Cluster: the scenario's cluster with every derived figure computed once, so that
// the cost models, the collective decompositions, NCCL's model, the SimGrid platform and the
// reports read the same answer instead of each deriving it again.
//
// Contract:
// - Built once from a ClusterConfig (the scenario's `cluster:` section after catalog look-ups and
//   overrides); immutable afterwards. A Cluster is-a ClusterConfig, so the configured figures
//   (gpu, intra_node, network, nodes, gpus_per_node) read as before.
// - Ranks fill nodes in order: rank r is GPU local_index(r) = r mod gpus_per_node of node
//   node_of(r) = r / gpus_per_node. A flow endpoint (core/hardware/endpoint.h) is on the node of
//   its GPU, or for a switch on the switch's own node.
// - GPU-NIC affinity: GPU i of a node uses NIC i x nics_per_node / gpus_per_node of that node
//   (NCCL pairs each GPU with its nearest NIC; DGX boards have one NIC per GPU or per GPU pair).
// - Usable rates are line rate x protocol efficiency, per direction: for the fabric inside a node
//   NCCL's NVLink/PCIe figure, for a NIC (and a torus cable, which runs at the NIC rate) the
//   network's protocol efficiency (docs/hardware.md cites both).
// - Background traffic: other jobs hold network.background_fraction f of every network link, so
//   the usable NIC rate is line rate x efficiency x (1 - f). Every network link the engines use
//   derives from it (NICs, leaf/rail/pod uplinks, torus cables: sim/platform.cc; the closed forms:
//   core/collectives/cost_model.cc), so both engines see the same share. Links inside a node are
//   not shared. f = 0 multiplies by exactly 1.0, leaving every figure bit-for-bit unchanged.
// - On PCIe nodes (gpus_on_pcie) a GPU reaches its NIC through its own fabric link, so a one-hop
//   route between GPUs of different nodes has the network's latency plus the fabric's
//   (gpu_network_latency).
// - Leaf, pod and rail: a fat-tree groups nodes_per_leaf nodes under a leaf switch and (levels: 3)
//   leaves_per_pod leaves into a pod; a rail-optimized network groups NIC k of every node under
//   rail switch k; rail-only is the same without the spine above the rails (Wang et al., "How to
//   build low-cost networks for large language models (without sacrificing performance)", 2023):
//   a flow between rails first crosses the node's fabric to the GPU on the destination's rail
//   (rail_relay), as NCCL's PXN does. network_group(r) is the leaf or rail of rank r's NIC (0 on a
//   star or torus);
//   the last leaf may hold fewer nodes (nics_in_group).
// - Torus (is_torus): topology torus over more than one node; a single node has no network to
//   route, whatever the topology says. Dragonfly (is_dragonfly) likewise; its groups are not
//   network_group()s (those are fat-tree leaves and rails).
// - speed_scale(r) is rank r's compute speed relative to the GPU's nominal figures (1.0: as
//   catalogued; 0.5: every kernel takes twice as long). All 1.0 unless a perturbation says
//   otherwise.
#pragma once

#include <vector>

#include "core/base/ids.h"
#include "core/hardware/cluster_config.h"
#include "core/hardware/endpoint.h"

namespace dtsim {

class Cluster : public ClusterConfig {
 public:
  explicit Cluster(ClusterConfig config);

  int world_size() const { return total_gpus(); }
  int node_of(Rank r) const { return r / gpus_per_node; }
  int local_index(Rank r) const { return r % gpus_per_node; }
  int node_of(Endpoint e) const { return e.is_switch() ? e.node() : node_of(e.rank()); }
  // NICs per node, at least 1.
  int nics() const { return nics_; }
  // Index of rank r's NIC within its node, and across the cluster (node x nics + that index).
  int local_nic_of(Rank r) const { return local_index(r) * nics_ / gpus_per_node; }
  int nic_of(Rank r) const { return node_of(r) * nics_ + local_nic_of(r); }

  // One NIC's usable rate per direction for this job:
  // nic_bandwidth x protocol_efficiency x (1 - background_fraction).
  BytesPerSecond usable_nic_bandwidth() const { return usable_nic_; }
  // One GPU's usable fabric rate per direction inside a node: NCCL's link figure.
  BytesPerSecond usable_fabric_bandwidth() const { return intra_node.usable_bandwidth(); }
  // Whether GPUs sit on PCIe, each reaching its NIC through its own fabric link.
  bool gpus_on_pcie() const { return intra_node.kind == FabricKind::kPcie; }
  // Latency of a one-hop network route between GPUs of different nodes (s): the network's, plus
  // the fabric's on PCIe nodes.
  Seconds gpu_network_latency() const;

  // Fat-tree leaf or rail of rank r's NIC; pod of that leaf (0 without a third level).
  int network_group(Rank r) const;
  int pod_of(Rank r) const { return pod_of_group(network_group(r)); }
  int pod_of_group(int group) const { return has_pods_ ? group / leaves_per_pod_ : 0; }
  // NICs under leaf or rail `group` (fat-tree with leaves, or rail-optimized).
  int nics_in_group(int group) const;
  int network_groups() const { return groups_; }
  int pods() const { return pods_; }
  bool has_leaves() const { return leaves_; }
  bool has_rails() const {
    return network.topology == Topology::kRailOptimized || network.topology == Topology::kRailOnly;
  }
  // Rails with no spine (topology: rail-only): traffic between rails relays over the fabric
  // inside the source node to the GPU on the destination's rail (rail_relay).
  bool is_rail_only() const { return network.topology == Topology::kRailOnly && nodes > 1; }
  // The GPU of rank r's node whose NIC is on `rail` (the first such GPU); r itself when its own
  // NIC is.
  Rank rail_relay(Rank r, int rail) const;
  bool has_pods() const { return has_pods_; }
  int nodes_per_leaf() const { return nodes_per_leaf_; }
  int leaves_per_pod() const { return leaves_per_pod_; }

  // A torus network between nodes (topology: torus, more than one node).
  bool is_torus() const {
    return network.topology == Topology::kTorus && nodes > 1 && !network.torus_dims.empty();
  }
  // A dragonfly network between nodes (topology: dragonfly, more than one node).
  bool is_dragonfly() const { return network.topology == Topology::kDragonfly && nodes > 1; }
  // Torus coordinates of a node (is_torus; empty otherwise).
  std::vector<int> torus_coordinates_of(int node) const;

  double speed_scale(Rank r) const { return speed_.empty() ? 1.0 : speed_[static_cast<size_t>(r)]; }
  // Returns a copy whose ranks run at the given relative speeds (one per rank, each > 0).
  Cluster with_speed_scale(std::vector<double> speed) const;

 private:
  int nics_ = 1;
  BytesPerSecond usable_nic_{0};
  bool leaves_ = false, has_pods_ = false;
  int nodes_per_leaf_ = 1, leaves_per_pod_ = 1, groups_ = 1, pods_ = 1;
  std::vector<double> speed_;  // empty: every rank 1.0
};

}  // namespace dtsim
