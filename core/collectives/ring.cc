// Ring channels and the ring's flows: a group's ranks by node (ranks_by_node, which every
// algorithm uses), the ring orders of every channel on switch, mesh and irregular groups
// (ring_channels), the rings inside nodes of the hierarchical all-reduce (node_ring_orders), the
// broadcast and reduce chains (chain_channels), the NICs a ring drives (ring_nic_count), the
// pipelined ring pass of chunk fidelity (ring_steps), the bulk ring of collective fidelity
// (ring_bulk) and the merge of parallel flows (merge_parallel_flows).
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/internal/schedule_parts.h"
#include "core/hardware/network_topology.h"
#include "core/hardware/nvlink_mesh.h"

namespace dtsim {

namespace {

// A group's ranks by node in order of first appearance, whatever their counts.
std::vector<std::vector<Rank>> group_by_node(const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  // Nodes in the order their first rank appears. Groups list a node's ranks together, so the
  // node of the previous rank is tried before the lookup (data parallelism over 1M GPUs calls
  // this with 1M ranks).
  std::vector<std::vector<Rank>> out;
  std::unordered_map<int, size_t> index_of;
  int last_node = -1;
  size_t last = 0;
  for (Rank r : ranks) {
    const int n = cluster.node_of(r);
    if (out.empty() || n != last_node) {
      const auto [it, fresh] = index_of.emplace(n, out.size());
      if (fresh) out.emplace_back();
      last_node = n;
      last = it->second;
    }
    out[last].push_back(r);
  }
  return out;
}

// Channels of a ring over nodes holding different numbers of the group's ranks (a group that
// ends part-way through a node): as many channels as the smallest node has ranks, C; on a node
// with g ranks channel c leaves through local position floor(c g / C) and enters at the next one,
// so the channels leave and enter each node through different GPUs, spread over the node, and so
// through the NICs those GPUs are paired with (Cluster::local_nic_of).
std::vector<std::vector<Rank>> irregular_ring_channels(
    const std::vector<std::vector<Rank>>& nodes) {
  size_t channels = nodes.front().size();
  for (const auto& node : nodes) channels = std::min(channels, node.size());
  std::vector<std::vector<Rank>> out;
  for (size_t c = 0; c < channels; ++c) {
    std::vector<Rank> order;
    for (const auto& node : nodes) {
      const size_t g = node.size(), exit = c * g / channels, entry = (exit + 1) % g;
      for (size_t j = 0; j < g; ++j) order.push_back(node[(entry + j) % g]);
    }
    out.push_back(std::move(order));
  }
  return out;
}

// Ring channels on nodes whose GPUs are a link graph (core/hardware/nvlink_mesh.h, the DGX-1
// cube-mesh): one channel per ring NCCL's search finds over the links among the group's GPUs of a
// node, each following its ring's GPU order, so that its hops cross the links the search gave it.
// Across nodes, channel c enters node k at position o_c - k of its ring and walks the ring
// forwards, leaving at the position before its entry: the next node is entered at that same local
// GPU (the same NIC rail), as the switch nodes' channels do. nullopt where the node has no link
// graph, the nodes hold different GPUs of the group, or on a torus (one ring in rank order there).
std::optional<std::vector<std::vector<Rank>>> mesh_ring_channels(
    const std::vector<std::vector<Rank>>& nodes, const Cluster& cluster) {
  const NvlinkMesh* mesh = cluster_mesh(cluster);
  if (!mesh || nodes.empty() || network_topology(cluster).cabled_nodes(cluster))
    return std::nullopt;
  std::vector<int> local;
  for (Rank r : nodes.front()) local.push_back(cluster.local_index(r));
  // by_local[k][l]: the group's rank at local index l of its k-th node.
  std::vector<std::map<int, Rank>> by_local(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (Rank r : nodes[k]) by_local[k][cluster.local_index(r)] = r;
    for (int l : local)
      if (!by_local[k].count(l)) return std::nullopt;
  }
  const auto rings = mesh_rings(*mesh, local, mesh_link_bandwidth(cluster));
  const int g = static_cast<int>(local.size());
  const int m = static_cast<int>(nodes.size());
  // Channel c enters node k at ring position o_c - k. The offsets o_c are chosen channel by channel
  // to keep the busiest NIC (by node and direction) least loaded, preferring o_c = c: the channels
  // then leave through GPUs paired with different NICs, as NCCL spreads its channels over them.
  std::map<std::tuple<int, int, bool>, int> load;
  auto visits = [&](const std::vector<int>& ring, int offset) {
    std::vector<std::tuple<int, int, bool>> nics;  // (node, NIC, out) each hop between nodes uses
    for (int k = 0; k < m && m > 1; ++k) {
      const int exit = ring[static_cast<size_t>(((offset - k - 1) % g + g) % g)];
      const int next = (k + 1) % m;
      const int entry = ring[static_cast<size_t>(((offset - next) % g + g) % g)];
      nics.emplace_back(k, cluster.local_nic_of(by_local[static_cast<size_t>(k)].at(exit)), true);
      nics.emplace_back(next, cluster.local_nic_of(by_local[static_cast<size_t>(next)].at(entry)),
                        false);
    }
    return nics;
  };
  std::vector<std::vector<Rank>> channels;
  for (size_t c = 0; c < rings.size(); ++c) {
    const auto& ring = rings[c];
    int offset = 0, best = -1;
    for (int j = 0; j < g && m > 1; ++j) {
      const int o = (static_cast<int>(c) + j) % g;
      auto trial = load;
      int busiest = 0;
      for (const auto& nic : visits(ring, o)) busiest = std::max(busiest, ++trial[nic]);
      if (best < 0 || busiest < best) {
        best = busiest;
        offset = o;
      }
    }
    for (const auto& nic : visits(ring, offset)) ++load[nic];
    std::vector<Rank> order;
    for (int k = 0; k < m; ++k) {
      const int entry = ((offset - k) % g + g) % g;
      for (int j = 0; j < g; ++j)
        order.push_back(
            by_local[static_cast<size_t>(k)].at(ring[static_cast<size_t>((entry + j) % g)]));
    }
    channels.push_back(std::move(order));
  }
  return channels;
}

}  // namespace

namespace collectives_internal {

// The rings inside each node of a hierarchical all-reduce: on switch nodes one per node in the
// group's order; on mesh nodes each node's ring channels (NCCL's rings over its links, each
// carrying 1/channels of the data). With the channels per node.
std::pair<std::vector<std::vector<Rank>>, size_t> node_ring_orders(
    const std::vector<std::vector<Rank>>& nodes, const Cluster& cluster) {
  if (!cluster_mesh(cluster)) return {nodes, 1};
  std::vector<std::vector<Rank>> orders;
  size_t channels = 1;
  for (const auto& node : nodes) {
    const auto own = mesh_ring_channels({node}, cluster);
    if (!own) return {nodes, 1};
    channels = own->size();
    orders.insert(orders.end(), own->begin(), own->end());
  }
  return {orders, channels};
}

}  // namespace collectives_internal

std::vector<std::vector<Rank>> ranks_by_node(const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  std::vector<std::vector<Rank>> out = group_by_node(ranks, cluster);
  for (const auto& node : out)
    if (node.size() != out.front().size()) return {};
  return out;
}

std::vector<std::vector<Rank>> chain_channels(const std::vector<Rank>& ranks, Rank root,
                                              bool reduce, const Cluster& cluster) {
  std::vector<std::vector<Rank>> chains{ranks};
  const auto nodes = ranks_by_node(ranks, cluster);
  if (cluster_mesh(cluster) && nodes.size() == 1 && ranks.size() > 1)
    chains = ring_channels(ranks, cluster);
  for (auto& chain : chains) {
    auto at = std::find(chain.begin(), chain.end(), root);
    if (at != chain.end()) std::rotate(chain.begin(), at, chain.end());
    if (reduce) std::reverse(chain.begin(), chain.end());
  }
  return chains;
}

double ring_nic_count(const std::vector<Rank>& ranks, const Cluster& cluster) {
  const auto channels = ring_channels(ranks, cluster);
  // Channels leaving and entering through each NIC, by (node, local NIC, direction).
  std::map<std::tuple<int, int, bool>, int> load;
  for (const auto& order : channels)
    for (size_t i = 0; i < order.size(); ++i) {
      const Rank a = order[i], b = order[(i + 1) % order.size()];
      if (cluster.node_of(a) == cluster.node_of(b)) continue;
      ++load[{cluster.node_of(a), cluster.local_nic_of(a), true}];
      ++load[{cluster.node_of(b), cluster.local_nic_of(b), false}];
    }
  int busiest = 0;
  for (const auto& [nic, count] : load) busiest = std::max(busiest, count);
  return busiest == 0 ? 0 : static_cast<double>(channels.size()) / busiest;
}

std::vector<std::vector<Rank>> ring_channels(const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  const auto nodes = ranks_by_node(ranks, cluster);
  if (auto mesh = mesh_ring_channels(nodes, cluster)) return *std::move(mesh);
  if (nodes.empty()) {
    const auto uneven = group_by_node(ranks, cluster);
    // A torus ring leaves each node over one cable whatever the channels: one ring in rank order.
    if (uneven.size() <= 1 || network_topology(cluster).cabled_nodes(cluster)) return {ranks};
    return irregular_ring_channels(uneven);
  }
  if (nodes.size() <= 1) return {ranks};  // one node: one ring in rank order
  const int g = static_cast<int>(nodes.front().size());
  std::vector<std::vector<Rank>> channels;
  for (int c = 0; c < g; ++c) {
    std::vector<Rank> order;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const int entry = ((c - static_cast<int>(k)) % g + g) % g;
      for (int j = 0; j < g; ++j) order.push_back(nodes[k][static_cast<size_t>((entry + j) % g)]);
    }
    channels.push_back(std::move(order));
  }
  return channels;
}

namespace collectives_internal {

// Appends a pipelined ring pass of `steps` steps over `order`, each flow carrying `segment` bytes.
// A rank forwards a segment as soon as it has arrived (NCCL's ring keeps several steps in flight
// per connection), so a piece of data pays each hop's own route latency. So that a hop's flows
// also keep the ring's pace (one segment per `period`, the bottleneck hop's time), each forward
// waits for a gate delay of the previous hop's latency plus `period`, started with the flow it
// forwards: on a contention-free network every hop then takes alpha_hop + period and the pass
// the sum of its hops' latencies plus steps x period (ring_path_latency), whatever the hops'
// bandwidths; under contention the flows stretch past their gates. A hop whose latency is no
// longer than the ring's mean hop also waits for its own previous send (one segment in flight, as
// before this pipelining): that never binds on a contention-free network (its latency plus its
// send time fit in the ring's average step), and keeps a hop slowed below its nominal bandwidth
// (a degraded NIC) serving its segments in order rather than sharing the link among a backlog of
// them. Longer hops (the network hops of a ring that also crosses NVLink) would bind, so they
// forward on arrival only, as NCCL's slots (NCCL_STEPS = 8 per connection) let them.
void ring_steps(const std::vector<Rank>& order, int steps, Bytes segment, Seconds period,
                const Cluster& cluster, std::vector<Flow>& flows) {
  const int n = static_cast<int>(order.size());
  std::vector<Seconds> gate(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Rank a = order[static_cast<size_t>(i)], b = order[static_cast<size_t>((i + 1) % n)];
    gate[static_cast<size_t>(i)] =
        point_to_point_link(Endpoint::gpu(a), Endpoint::gpu(b), cluster).alpha + period;
    if (cluster.node_of(a) != cluster.node_of(b) && cluster.gpus_on_pcie())
      gate[static_cast<size_t>(i)] += cluster.intra_node.latency;  // gpu_network_latency
  }
  Seconds mean_gate(0);
  for (const Seconds g : gate) mean_gate += g / static_cast<double>(n);
  std::vector<int> flow_at(static_cast<size_t>(n)), gate_at(static_cast<size_t>(n));
  for (int k = 0; k < steps; ++k) {
    std::vector<int> next_flow(static_cast<size_t>(n)), next_gate(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::vector<int> after;
      if (k > 0) {  // the segment it forwards arrived, at the ring's pace
        const auto from = static_cast<size_t>((i - 1 + n) % n);
        after = {flow_at[from], gate_at[from]};
        if (gate[static_cast<size_t>(i)].value() <= mean_gate.value() * (1 + 1e-12))
          after.push_back(flow_at[static_cast<size_t>(i)]);
      }
      next_gate[static_cast<size_t>(i)] = static_cast<int>(flows.size());
      flows.push_back(Flow::delay_of(gate[static_cast<size_t>(i)], after));
      next_flow[static_cast<size_t>(i)] = static_cast<int>(flows.size());
      flows.push_back(Flow::between(order[static_cast<size_t>(i)],
                                    order[static_cast<size_t>((i + 1) % n)], segment,
                                    std::move(after)));
    }
    flow_at = std::move(next_flow);
    gate_at = std::move(next_gate);
  }
}

// One bulk flow per ring edge with everything that edge moves.
void ring_bulk(const std::vector<Rank>& order, Bytes per_edge, std::vector<Flow>& flows) {
  const size_t n = order.size();
  for (size_t i = 0; i < n; ++i)
    flows.push_back(Flow::between(order[i], order[(i + 1) % n], per_edge));
}

}  // namespace collectives_internal

// Merges independent flows between the same pair into one carrying their sum. The channels of a
// multi-node ring reuse most intra-node GPU pairs, so this cuts the flows of a collective-level
// all-reduce from channels x N to about 2N; the tree's chains likewise (tree_flows). Flows of one
// pair share a route and start together, so under max-min sharing they run at one rate and end
// together, as the merged flow does. The result is unchanged when every link's flows come in groups
// of the same size, so that each link's shares keep their proportions; a merged group next to
// other flows on a link gets one share where its flows had several.
void merge_parallel_flows(std::vector<Flow>& flows) {
  std::map<std::pair<Endpoint, Endpoint>, size_t> first;
  std::vector<Flow> merged;
  for (auto& f : flows) {
    if (f.is_delay() || !f.after.empty()) {
      merged.push_back(std::move(f));
      continue;
    }
    const Transfer& t = f.transfer();
    auto [it, inserted] = first.emplace(std::make_pair(t.src, t.dst), merged.size());
    if (inserted)
      merged.push_back(std::move(f));
    else
      merged[it->second].transfer().bytes += t.bytes;
  }
  flows = std::move(merged);
}

}  // namespace dtsim
