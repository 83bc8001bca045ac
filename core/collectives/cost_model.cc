#include "core/collectives/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/nccl_model.h"
#include "core/hardware/network_topology.h"
#include "core/hardware/nvlink_mesh.h"
#include "core/hardware/torus.h"

namespace dtsim {

namespace {

// The number of nodes a group's ranks are on, counted without a tree of them (data parallelism
// over a million GPUs asks for it once per bucket size and protocol).
size_t distinct_nodes(const std::vector<Rank>& ranks, const Cluster& cluster) {
  std::vector<int> node_ids;
  node_ids.reserve(ranks.size());
  for (Rank r : ranks) node_ids.push_back(cluster.node_of(r));
  std::sort(node_ids.begin(), node_ids.end());
  return static_cast<size_t>(std::unique(node_ids.begin(), node_ids.end()) - node_ids.begin());
}

// The share of a node's network ports a group with `ranks_per_node` ranks on each node gets:
// groups of the same shape on the node's other GPUs run at the same time and share the ports.
double node_port_share(double ranks_per_node, const Cluster& cluster) {
  return std::min(1.0, ranks_per_node / cluster.gpus_per_node);
}

// A flow alone between two GPUs of one mesh node: a hop's latency per link it crosses, and the
// rate of the thinnest link on its route (its link count x one NVLink's usable rate).
LinkCost mesh_pair_link(const NvlinkMesh& mesh, Rank a, Rank b, const Cluster& cluster) {
  const auto route = relay_route(mesh, cluster.local_index(a), cluster.local_index(b));
  int thinnest = 0;
  for (size_t k = 0; k + 1 < route.size(); ++k) {
    const int links = mesh.links_between(route[k], route[k + 1]);
    thinnest = k == 0 ? links : std::min(thinnest, links);
  }
  const double hops = static_cast<double>(std::max<size_t>(route.size(), 2) - 1);
  return {cluster.intra_node.latency * hops,
          mesh_link_bandwidth(cluster) * static_cast<double>(std::max(thinnest, 1))};
}

// The intra-node hop of a ring on mesh nodes: the slowest route latency of a hop inside a node, and
// the channels' bus bandwidth over the links they cross (mesh_ring_bandwidth): for NCCL's rings on
// the DGX-1 cube-mesh, channels x speed = 6 x 20 GB/s, NCCL's own figure (src/graph/tuning.cc:
// busBw = nChannels x bw).
LinkCost mesh_ring_intra(const NvlinkMesh& mesh, const std::vector<Rank>& ranks,
                         const Cluster& cluster) {
  const auto channels = ring_channels(ranks, cluster);
  // Each channel's hops inside its first node, as local indices: every node's pieces have the
  // same shape (mesh_ring_channels lays each node's GPUs out as a contiguous run), so one node's
  // links carry the most any node's do.
  std::vector<std::vector<int>> pieces;
  bool closed = true;
  Seconds alpha = cluster.intra_node.latency;
  for (const auto& order : channels) {
    std::vector<int> run;
    const int node = cluster.node_of(order.front());
    for (size_t i = 0; i < order.size() && cluster.node_of(order[i]) == node; ++i) {
      run.push_back(cluster.local_index(order[i]));
      const Rank next = order[(i + 1) % order.size()];
      if (cluster.node_of(next) == node)
        alpha = std::max(alpha, mesh_pair_link(mesh, order[i], next, cluster).alpha);
    }
    closed = closed && run.size() == order.size();
    pieces.push_back(std::move(run));
  }
  return {alpha, mesh_ring_bandwidth(mesh, pieces, closed, mesh_link_bandwidth(cluster))};
}

}  // namespace

LinkCost point_to_point_link(Endpoint a, Endpoint b, const Cluster& cluster) {
  // To or from a node's NVSwitch (NVLS): one GPU link, half a GPU-to-GPU hop.
  if (a.is_switch() || b.is_switch())
    return {cluster.intra_node.latency / 2.0, cluster.usable_fabric_bandwidth()};
  if (cluster.node_of(a) == cluster.node_of(b)) {
    if (const NvlinkMesh* mesh = cluster_mesh(cluster))
      return mesh_pair_link(*mesh, a.rank(), b.rank(), cluster);
    return {cluster.intra_node.latency, cluster.usable_fabric_bandwidth()};
  }
  const auto& net = cluster.network;
  // One flow uses one NIC; it is also bounded by the GPU's own fabric link.
  const NetworkTopology& topology = network_topology(cluster);
  Seconds latency =
      net.latency + topology.extra_route_latency(cluster, cluster.node_of(a), cluster.node_of(b));
  // Rail-only: between rails the flow first crosses the node's fabric to the GPU on the
  // destination's rail (Cluster::rail_relay).
  if (topology.relays_between_rails(cluster) && a.is_gpu() && b.is_gpu() &&
      cluster.network_group(a.rank()) != cluster.network_group(b.rank()))
    latency += cluster.intra_node.latency;
  return {latency, std::min(cluster.usable_nic_bandwidth(), cluster.usable_fabric_bandwidth())};
}

LinkCost torus_link(int ranks_per_node, const Cluster& cluster) {
  const double g = std::max(1, ranks_per_node);
  const BytesPerSecond cable = cluster.usable_nic_bandwidth() * (node_port_share(g, cluster) / g);
  return {cluster.gpu_network_latency(), std::min(cable, cluster.usable_fabric_bandwidth())};
}

Seconds torus_all_reduce_time(Bytes bytes, const std::vector<Rank>& ranks, const Cluster& cluster) {
  const auto plan = torus_all_reduce_plan(ranks, cluster);
  if (!plan) return Seconds(0);
  const double g = static_cast<double>(plan->nodes.front().size());
  const LinkCost intra = ring_link(plan->nodes.front(), cluster);
  const LinkCost net = torus_link(static_cast<int>(g), cluster);
  Seconds t(0);
  if (g > 1) t = 2.0 * (intra.alpha * (g - 1) + bytes * ((g - 1) / g) / intra.beta);
  const size_t dims = plan->sizes.size();
  Seconds slowest(0);
  for (size_t r = 0; r < dims; ++r) {
    Bytes x = bytes / g / static_cast<double>(dims);
    Seconds rotation(0);
    for (size_t i = 0; i < dims; ++i) {
      const double k = plan->sizes[(r + i) % dims], ways = k >= 3 ? 2 : 1;
      rotation += 2.0 * (net.alpha * (k - 1) + x * ((k - 1) / k) / (net.beta * ways));
      x = x / k;
    }
    slowest = std::max(slowest, rotation);
  }
  return t + slowest;
}

RingHops ring_hops(const std::vector<Rank>& ranks, const Cluster& cluster) {
  const size_t node_count = distinct_nodes(ranks, cluster);
  RingHops hops{{cluster.intra_node.latency, cluster.usable_fabric_bandwidth()}, {}};
  const NvlinkMesh* mesh = cluster_mesh(cluster);
  if (mesh && ranks.size() / node_count > 1) hops.intra = mesh_ring_intra(*mesh, ranks, cluster);
  if (node_count <= 1) return hops;
  // A ring that crosses nodes leaves each node once per channel. Summed over NCCL's channels,
  // a node sends as many bytes out as one rank sends in total, spread over its NICs, of which a
  // group with g ranks per node gets g / gpus_per_node (node_port_share).
  const double ranks_per_node = static_cast<double>(ranks.size()) / static_cast<double>(node_count);
  // On a torus a ring leaves each node over one cable (its next node's), whatever nics_per_node.
  const NetworkTopology& topology = network_topology(cluster);
  const bool cabled = topology.cabled_nodes(cluster);
  const int ports = cabled ? 1 : cluster.nics();
  const BytesPerSecond node_nics = cluster.usable_nic_bandwidth() * ports;
  BytesPerSecond inter = node_nics * node_port_share(ranks_per_node, cluster);
  // A group that ends part-way through a node: its channels drive the NICs its GPUs reach, as many
  // as the busiest NIC allows (ring_nic_count, from the ring's channels and the GPU-NIC pairing).
  if (!cabled && ranks_by_node(ranks, cluster).empty())
    inter = cluster.usable_nic_bandwidth() * ring_nic_count(ranks, cluster);
  // On mesh nodes a ring has one channel per NCCL ring (mesh_ring_channels), which need not
  // spread evenly over the NICs: as many NICs' worth as the busiest NIC allows.
  if (mesh && !cabled && !ranks_by_node(ranks, cluster).empty())
    inter = std::min(inter, cluster.usable_nic_bandwidth() * ring_nic_count(ranks, cluster));
  // The longest route of a hop across nodes: one network hop (plus the GPU's PCIe link on PCIe
  // nodes, gpu_network_latency), and on a torus the further cables of its route.
  Seconds net_alpha = cluster.gpu_network_latency();
  if (cabled)
    for (const auto& order : ring_channels(ranks, cluster))
      for (size_t i = 0; i < order.size(); ++i) {
        const Rank a = order[i], b = order[(i + 1) % order.size()];
        if (cluster.node_of(a) == cluster.node_of(b)) continue;
        net_alpha = std::max(net_alpha, cluster.gpu_network_latency() +
                                            topology.extra_route_latency(
                                                cluster, cluster.node_of(a), cluster.node_of(b)));
      }
  hops.net = {net_alpha, inter};
  return hops;
}

LinkCost ring_link(const std::vector<Rank>& ranks, const Cluster& cluster) {
  const RingHops hops = ring_hops(ranks, cluster);
  if (hops.net.beta.value() <= 0) return hops.intra;
  return {std::max(hops.net.alpha, hops.intra.alpha), std::min(hops.net.beta, hops.intra.beta)};
}

Seconds ring_path_latency(const std::vector<Rank>& ranks, int steps, const Cluster& cluster,
                          CollectiveProtocol protocol) {
  if (ranks.size() < 2 || steps <= 0) return Seconds(0);
  const auto channels = ring_channels(ranks, cluster);
  const size_t node_count = distinct_nodes(ranks, cluster);
  const bool multi_node = node_count > 1;
  const bool one_per_node = node_count == ranks.size();
  const bool nccl =
      protocol != CollectiveProtocol::kAuto && protocol != CollectiveProtocol::kFastest;
  const ProtocolEffect intra_effect = protocol_effect(protocol, false, cluster.gpus_on_pcie());
  const ProtocolEffect net_effect = protocol_effect(protocol, true, cluster.gpus_on_pcie());
  // NCCL's model charges a ring with one rank per node its tree network latency (src/graph/
  // tuning.cc: "with ppn=1 latencies are fully exposed"): 5.0 / 8.5 / 14 us against the ring's
  // 2.7 / 4.0 / 14 for LL / LL128 / Simple, relative to the catalog's LL ring figure.
  static constexpr double kNetTree[3] = {5.0, 8.5, 14.0}, kNetRingLL = 2.7;
  const int p = protocol == CollectiveProtocol::kLL      ? 0
                : protocol == CollectiveProtocol::kLL128 ? 1
                                                         : 2;
  const double net_scale =
      nccl && one_per_node ? kNetTree[p] / kNetRingLL : net_effect.latency_scale;
  // getNetOverhead (Intel and ARM hosts: 1 us), x3 under Simple: the floor of an intra-node hop's
  // latency on a ring that crosses nodes.
  const Seconds overhead_floor(nccl && multi_node ? 1e-6 * (p == 2 ? 3 : 1) : 0);
  const NvlinkMesh* mesh = cluster_mesh(cluster);
  auto hop = [&](Rank a, Rank b) {
    if (cluster.node_of(a) == cluster.node_of(b)) {
      // On a mesh a hop between GPUs with no link relays: a hop's latency per link.
      const Seconds route =
          mesh ? mesh_pair_link(*mesh, a, b, cluster).alpha : cluster.intra_node.latency;
      return std::max(route * intra_effect.latency_scale, overhead_floor);
    }
    const Seconds alpha =
        cluster.gpu_network_latency() + network_topology(cluster).extra_route_latency(
                                            cluster, cluster.node_of(a), cluster.node_of(b));
    return alpha * net_scale;
  };
  Seconds worst(0);
  for (const auto& order : channels) {
    const size_t n = order.size();
    std::vector<double> a(n);
    double cycle = 0;
    for (size_t i = 0; i < n; ++i) cycle += a[i] = hop(order[i], order[(i + 1) % n]).value();
    const size_t whole = static_cast<size_t>(steps) / n, rest = static_cast<size_t>(steps) % n;
    // Sliding window of `rest` consecutive hops, on top of `whole` full turns.
    double window = 0;
    for (size_t j = 0; j < rest; ++j) window += a[j];
    double best = window;
    for (size_t i = 1; i < n && rest > 0; ++i) {
      window += a[(i + rest - 1) % n] - a[i - 1];
      best = std::max(best, window);
    }
    worst = std::max(worst, Seconds(static_cast<double>(whole) * cycle + best));
  }
  return worst;
}

double bus_bandwidth_factor(CollectiveKind kind, int n) {
  if (n <= 1) return 0;
  double nn = n;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (nn - 1) / nn;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (nn - 1) / nn;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return 1.0;
    case CollectiveKind::kBarrier:
      return 0;
  }
  return 1.0;
}

namespace {

// The collective's time without NCCL's per-call base latency.
Seconds transfer_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                      const Cluster& cluster, const ResolvedCollective& resolved) {
  const int n = static_cast<int>(ranks.size());
  LinkCost link = ring_link(ranks, cluster);
  const CollectiveAlgorithm algorithm = resolved.algorithm;
  if (algorithm == CollectiveAlgorithm::kNvls)
    // NCCL's NVLS latency (25 us, nccl_nvls_latency_us) for the whole call, not a link's hop.
    return Seconds(nccl_nvls_latency_us() * 1e-6) +
           op.bytes * ((1.0 + 1.0 / n) / nvls_efficiency(cluster)) / link.beta;
  if (algorithm == CollectiveAlgorithm::kNvlsTree)
    // In-switch reduction inside nodes beside a tree per rail across them (collective_schedule.h,
    // NvlsTreePlan).
    return nvls_tree_plan(ranks, cluster, op.bytes, resolved.bandwidth_cap).time();
  if (algorithm == CollectiveAlgorithm::kPat)
    // NCCL's Bruck-like all-gather / reduce-scatter (collective_schedule.h, PatPlan).
    return pat_plan(op, ranks, cluster).time();
  if (algorithm == CollectiveAlgorithm::kCollNet)
    // The switches reduce across nodes (SHARP; collective_schedule.h, CollNetPlan).
    return collnet_plan(ranks, cluster, op.bytes).time();
  if (algorithm == CollectiveAlgorithm::kTree)
    // NCCL's double binary tree, pipelined in chunks (core/collectives/collective_schedule.h,
    // TreePlan): sum over the 2h stages of (alpha + b) plus (K - 1) times the slowest stage's b.
    return double_binary_tree(ranks, cluster, op.bytes, resolved.protocol, resolved.bandwidth_cap)
        .time();
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) {
    // Rabenseifner: 2 log2(p) steps moving 2(p-1)/p S, plus a fold in and out of S each when
    // n is not a power of two (Thakur, Rabenseifner and Gropp 2005, section 4.4).
    int p = 1, k = 0;
    while (p * 2 <= n) p *= 2, ++k;
    const Seconds fold = n > p ? 2.0 * (link.alpha + op.bytes / link.beta) : Seconds(0);
    return fold + link.alpha * (2.0 * k) + op.bytes * (2.0 * (p - 1) / p) / link.beta;
  }
  if (algorithm == CollectiveAlgorithm::kHierarchical && torus_all_reduce_plan(ranks, cluster))
    return torus_all_reduce_time(op.bytes, ranks, cluster);
  if (algorithm == CollectiveAlgorithm::kHierarchical) {
    const auto nodes = ranks_by_node(ranks, cluster);
    const double g = static_cast<double>(nodes.front().size()),
                 m = static_cast<double>(nodes.size());
    std::vector<Rank> rail;
    for (const auto& node : nodes) rail.push_back(node.front());
    const LinkCost intra = ring_link(nodes.front(), cluster), inter = ring_link(rail, cluster);
    const Seconds local = intra.alpha * (g - 1) + op.bytes * ((g - 1) / g) / intra.beta;
    const Seconds across =
        inter.alpha * (2 * (m - 1)) + op.bytes / g * (2 * (m - 1) / m) / inter.beta;
    return (g > 1 ? 2.0 * local : Seconds(0)) + across;
  }
  // Ring family: the protocol scales per-step latency and bandwidth.
  const ProtocolEffect effect = protocol_effect(
      resolved.protocol, ranks_by_node(ranks, cluster).size() != 1, cluster.gpus_on_pcie());
  link.alpha = link.alpha * effect.latency_scale;
  link.beta = link.beta * effect.bandwidth_factor;
  if (resolved.bandwidth_cap.value() > 0) link.beta = std::min(link.beta, resolved.bandwidth_cap);
  // All-reduce, all-gather, reduce-scatter and barrier are pipelined rings: each hop pays its own
  // latency (ring_path_latency), the bytes go at the slowest hop's bandwidth.
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return ring_path_latency(ranks, 2 * (n - 1), cluster, resolved.protocol) +
             op.bytes * (2.0 * (n - 1) / n) / link.beta;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return ring_path_latency(ranks, n - 1, cluster, resolved.protocol) +
             op.bytes * ((n - 1.0) / n) / link.beta;
    case CollectiveKind::kAllToAll:
      return link.alpha * (n - 1.0) + op.bytes * ((n - 1.0) / n) / link.beta;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      if (const NvlinkMesh* mesh = cluster_mesh(cluster);
          mesh && ranks_by_node(ranks, cluster).size() == 1) {
        // Chains over the mesh's rings from the root (chain_channels): the links they cross.
        const auto chains =
            chain_channels(ranks, op.root, op.kind == CollectiveKind::kReduce, cluster);
        std::vector<std::vector<int>> local;
        Seconds hop(0);
        for (const auto& chain : chains) {
          local.emplace_back();
          for (size_t i = 0; i < chain.size(); ++i) {
            local.back().push_back(cluster.local_index(chain[i]));
            if (i + 1 < chain.size())
              hop = std::max(hop, mesh_pair_link(*mesh, chain[i], chain[i + 1], cluster).alpha);
          }
        }
        const BytesPerSecond beta =
            mesh_ring_bandwidth(*mesh, local, false, mesh_link_bandwidth(cluster));
        return hop * effect.latency_scale * (n - 1.0) + op.bytes / (beta * effect.bandwidth_factor);
      }
      return link.alpha * (n - 1.0) + op.bytes / link.beta;
    case CollectiveKind::kBarrier:
      return ring_path_latency(ranks, 2 * (n - 1), cluster, resolved.protocol);
  }
  return Seconds(0);
}

}  // namespace

Seconds resolved_collective_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                 const Cluster& cluster, const ResolvedCollective& resolved) {
  if (ranks.size() <= 1) return Seconds(0);
  return resolved.call_latency + transfer_time(op, ranks, cluster, resolved);
}

Seconds collective_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const Cluster& cluster) {
  if (ranks.size() <= 1) return Seconds(0);
  return resolved_collective_time(op, ranks, cluster, resolve_collective(op, ranks, cluster));
}

Seconds point_to_point_time(Bytes bytes, Endpoint a, Endpoint b, const Cluster& cluster) {
  LinkCost l = point_to_point_link(a, b, cluster);
  return l.alpha + bytes / l.beta;
}

}  // namespace dtsim
