// The resolved Cluster: the scenario's cluster with every derived figure computed once, so that
// the cost models, the collective decompositions, NCCL's model, the SimGrid platform and the
// reports read the same answer instead of each deriving it again.
//
// Contract:
// - Built once from a ClusterConfig (the scenario's `cluster:` section after catalog look-ups and
//   overrides); immutable afterwards. A Cluster is-a ClusterConfig, so the configured figures
//   (gpu, intra_node, network, nodes, gpus_per_node) read as before.
// - Ranks fill nodes in order: rank r is GPU local_index(r) = r mod gpus_per_node of node
//   node_of(r) = r / gpus_per_node.
// - GPU-NIC affinity: GPU i of a node uses NIC i x nics_per_node / gpus_per_node of that node
//   (NCCL pairs each GPU with its nearest NIC; DGX boards have one NIC per GPU or per GPU pair).
// - Usable rates are line rate x protocol efficiency, per direction: for the fabric inside a node
//   NCCL's NVLink/PCIe figure, for a NIC the network's protocol efficiency
//   (docs/hardware.md cites both).
// - Leaf, pod and rail: a fat-tree groups nodes_per_leaf nodes under a leaf switch and (levels: 3)
//   leaves_per_pod leaves into a pod; a rail-optimized network groups NIC k of every node under
//   rail switch k. network_group(r) is the leaf or rail of rank r's NIC (0 on a star or torus).
// - speed_scale(r) is rank r's compute speed relative to the GPU's nominal figures (1.0: as
//   catalogued; 0.5: every kernel takes twice as long). All 1.0 unless a perturbation says
//   otherwise.
#pragma once

#include <vector>

#include "core/base/ids.h"
#include "core/hardware/cluster_config.h"

namespace dtsim {

class Cluster : public ClusterConfig {
 public:
  explicit Cluster(ClusterConfig config);

  int world_size() const { return total_gpus(); }
  int node_of(Rank r) const { return r / gpus_per_node; }
  int local_index(Rank r) const { return r % gpus_per_node; }
  // NICs per node, at least 1.
  int nics() const { return nics_; }
  // Index of rank r's NIC within its node, and across the cluster (node x nics + that index).
  int local_nic_of(Rank r) const { return local_index(r) * nics_ / gpus_per_node; }
  int nic_of(Rank r) const { return node_of(r) * nics_ + local_nic_of(r); }

  // One NIC's usable rate per direction: nic_bandwidth x protocol_efficiency.
  BytesPerSecond usable_nic_bandwidth() const { return usable_nic_; }
  // One GPU's usable fabric rate per direction inside a node: NCCL's link figure.
  BytesPerSecond usable_fabric_bandwidth() const { return intra_node.usable_bandwidth(); }

  // Fat-tree leaf or rail of rank r's NIC; pod of that leaf (0 without a third level).
  int network_group(Rank r) const;
  int pod_of(Rank r) const;
  int network_groups() const { return groups_; }
  int pods() const { return pods_; }
  bool has_leaves() const { return leaves_; }
  bool has_pods() const { return has_pods_; }
  int nodes_per_leaf() const { return nodes_per_leaf_; }
  int leaves_per_pod() const { return leaves_per_pod_; }

  // Torus coordinates of a node (topology: torus; empty otherwise).
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
