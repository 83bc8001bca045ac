// The plans and closed forms of NCCL's algorithms beyond the ring and the tree: NVLS-tree across
// NVSwitch nodes (nvls_tree_plan, NvlsTreePlan::time; its rails are double binary trees, tree.cc),
// CollNet-direct on switches that reduce in the network (collnet_supported, collnet_plan,
// CollNetPlan::time) and PAT for all-gather and reduce-scatter at one GPU per node (pat_supported,
// pat_plan, PatPlan::time). Their flows are built by decompose() (collective_schedule.cc).
#include <algorithm>
#include <utility>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "core/hardware/network_topology.h"

namespace dtsim {

Seconds NvlsTreePlan::time() const {
  if (rails.empty()) return Seconds(0);
  Seconds slowest = tree_latency + link_alpha + per_link / link_beta;
  for (const TreePlan& rail : rails) slowest = std::max(slowest, rail.time());
  return slowest + nvls_latency - link_alpha;
}

NvlsTreePlan nvls_tree_plan(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes,
                            BytesPerSecond bus_cap) {
  NvlsTreePlan plan;
  const auto nodes = ranks_by_node(ranks, cluster);
  if (nodes.size() < 2 || !nvls_supported(cluster)) return plan;
  plan.nodes = nodes;
  const double g = static_cast<double>(nodes.front().size()), n = static_cast<double>(ranks.size());
  plan.link_alpha = cluster.intra_node.latency / 2.0;
  plan.link_beta = cluster.usable_fabric_bandwidth();
  plan.nvls_latency = Seconds(nccl_nvls_latency_us() * 1e-6);
  plan.per_link = bytes * ((1.0 + 1.0 / g) / nvls_efficiency(cluster));
  if (bus_cap.value() > 0) {
    const double algbw = bus_cap.value() * n / (2 * (n - 1));
    plan.per_link = std::max(plan.per_link, bytes * (plan.link_beta.value() / algbw));
  }
  // Every hop of a rail's tree crosses nodes; it costs NCCL's NVLS-tree network latency, relative
  // to the catalog's (NCCL's LL ring) figure.
  const double scale =
      nccl_hw_latency_us(NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple, NcclLink::kNet) /
      nccl_hw_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL, NcclLink::kNet);
  // NCCL's NVLS-tree chunk (src/enqueue.cc): its nvlsChannels (16) x nHeads (g) operations at once.
  double chunk = 512 * 1024;
  const double concurrent = 16 * g;
  for (const auto& [times, size] :
       {std::pair{32.0, 262144.0}, {16.0, 131072.0}, {4.0, 65536.0}, {1.0, 32768.0}})
    if (bytes.value() < times * concurrent * chunk && chunk > size) chunk = size;
  for (size_t j = 0; j < nodes.front().size(); ++j) {
    std::vector<Rank> rail;
    for (const auto& node : nodes) rail.push_back(node[j]);
    TreePlan tree = double_binary_tree(rail, cluster, bytes / g, CollectiveProtocol::kAuto,
                                       BytesPerSecond(0), Bytes(chunk));
    tree.net_alpha = tree.net_alpha * scale;
    for (size_t p = 0; p < tree.stage_time.size(); ++p)
      tree.stage_time[p] = tree.net_alpha + tree.stage_gap[p];
    plan.tree_latency = tree.net_alpha * (2.0 * tree.height);
    plan.rails.push_back(std::move(tree));
  }
  return plan;
}

bool collnet_supported(const std::vector<Rank>& ranks, const Cluster& cluster) {
  return cluster.network.in_network_reduction && cluster.intra_node.kind == FabricKind::kSwitch &&
         ranks_by_node(ranks, cluster).size() > 1;
}

CollNetPlan collnet_plan(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes) {
  CollNetPlan plan;
  if (!collnet_supported(ranks, cluster)) return plan;
  plan.nodes = ranks_by_node(ranks, cluster);
  const double g = static_cast<double>(plan.nodes.front().size());
  const RingHops hops = ring_hops(ranks, cluster);
  plan.intra = hops.intra;
  plan.net = hops.net;
  plan.per_link = bytes * (2 * (g - 1) / g);
  plan.per_node = bytes;
  plan.latency =
      std::max(Seconds(nccl_collnet_direct_latency_us(static_cast<int>(g)) * 1e-6), plan.net.alpha);
  return plan;
}

bool pat_supported(const CollectiveOp& op, const std::vector<Rank>& ranks, const Cluster& cluster) {
  if (op.kind != CollectiveKind::kAllGather && op.kind != CollectiveKind::kReduceScatter)
    return false;
  const auto nodes = ranks_by_node(ranks, cluster);
  return ranks.size() >= 2 && nodes.size() == ranks.size() && nccl_runs_collectives(cluster) &&
         !network_topology(cluster).cabled_nodes(cluster);
}

PatPlan pat_plan(const CollectiveOp& op, const std::vector<Rank>& ranks, const Cluster& cluster) {
  PatPlan plan;
  if (!pat_supported(op, ranks, cluster)) return plan;
  const int n = static_cast<int>(ranks.size());
  plan.ranks = ranks;
  for (int d = 1; d < n; d *= 2) {
    plan.blocks.push_back(std::min(d, n - d));
    plan.shift.push_back(n - d);  // all-gather: to i - 2^k
  }
  if (op.kind == CollectiveKind::kReduceScatter) {
    std::reverse(plan.blocks.begin(), plan.blocks.end());
    std::reverse(plan.shift.begin(), plan.shift.end());
    for (int& sh : plan.shift) sh = n - sh;  // to i + 2^k
  }
  // NCCL's PAT bandwidth factor (busBw *= .75) and latencies (src/graph/tuning.cc v2.30).
  static constexpr double kPatBandwidth = 0.75, kBaseUs = 8.0, kLinearUs = 2.8;
  static constexpr double kNetTreeSimpleUs = 14.0, kLogDivisor = 3.5, kNetRingLLUs = 2.7;
  plan.block = op.bytes / static_cast<double>(n) / kPatBandwidth;
  plan.net = point_to_point_link(Endpoint::gpu(ranks[0]), Endpoint::gpu(ranks[1]), cluster);
  plan.net.alpha = cluster.gpu_network_latency();  // the route's, as the platform builds it
  // A node with fewer NICs than GPUs: every GPU of the node runs its own group's collective at
  // the same time (the data-parallel groups of the other TP and PP ranks), so a GPU's flows get
  // its share of the node's NICs, as ring_hops assumes (node_port_share).
  if (cluster.nics() < cluster.gpus_per_node)
    plan.net.beta = std::min(plan.net.beta, cluster.usable_nic_bandwidth() *
                                                (static_cast<double>(cluster.nics()) /
                                                 static_cast<double>(cluster.gpus_per_node)));
  plan.step_latency =
      cluster.gpu_network_latency() * (kNetTreeSimpleUs / kLogDivisor / kNetRingLLUs);
  plan.call_latency = Seconds((kBaseUs + kLinearUs * n) * 1e-6);
  return plan;
}

Seconds PatPlan::time() const {
  if (ranks.empty()) return Seconds(0);
  int total = 0;
  for (int b : blocks) total += b;
  return call_latency + step_latency * static_cast<double>(blocks.size()) +
         block * static_cast<double>(total) / net.beta;
}

Seconds CollNetPlan::time() const {
  if (nodes.empty()) return Seconds(0);
  Seconds t = net.alpha + per_node / net.beta;
  if (nodes.front().size() > 1) t = std::max(t, intra.alpha + per_link / intra.beta);
  return t + latency - net.alpha;
}

}  // namespace dtsim
