#include "core/collectives/collective_schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "core/base/error.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "core/hardware/nvlink_mesh.h"
#include "core/hardware/torus.h"

namespace dtsim {

namespace {

// A group's ranks by node in order of first appearance, whatever their counts.
std::vector<std::vector<Rank>> group_by_node(const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  std::vector<int> node_order;
  std::map<int, std::vector<Rank>> by_node;
  for (Rank r : ranks) {
    const int n = cluster.node_of(r);
    if (!by_node.count(n)) node_order.push_back(n);
    by_node[n].push_back(r);
  }
  std::vector<std::vector<Rank>> out;
  for (int n : node_order) out.push_back(by_node[n]);
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
  if (!mesh || nodes.empty() || cluster.is_torus()) return std::nullopt;
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

}  // namespace

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
    if (uneven.size() <= 1 || cluster.is_torus()) return {ranks};
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

namespace {

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

}  // namespace

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

namespace {

// Builds multi-phase schedules. Each phase starts after everything before it has finished, so a
// schedule's time on a contention-free network is the sum of its phases' closed forms.
class PhasedBuilder {
 public:
  PhasedBuilder(std::vector<Flow>& flows, Fidelity fidelity) : flows_(flows), fidelity_(fidelity) {}
  // A builder whose first phase waits for `start` (flows of another builder): concurrent branches.
  PhasedBuilder(std::vector<Flow>& flows, Fidelity fidelity, std::vector<int> start)
      : flows_(flows), fidelity_(fidelity), barrier_(start), start_(std::move(start)) {}
  // What the next phase would wait for; join() makes this builder wait for other branches too.
  const std::vector<int>& barrier() const { return barrier_; }
  void join(const std::vector<int>& other) {
    barrier_.insert(barrier_.end(), other.begin(), other.end());
    start_ = barrier_;
  }

  // Ring passes over several independent orders at once (one per node, or per local index).
  void rings(const std::vector<std::vector<Rank>>& orders, int steps, Bytes segment,
             Seconds alpha) {
    if (fidelity_ == Fidelity::kChunk) {
      std::vector<int> last;
      for (const auto& order : orders) {
        const int n = static_cast<int>(order.size());
        const int base = static_cast<int>(flows_.size());
        for (int k = 0; k < steps; ++k)
          for (int i = 0; i < n; ++i) {
            Flow f = Flow::between(order[static_cast<size_t>(i)],
                                   order[static_cast<size_t>((i + 1) % n)], segment);
            if (k == 0)
              f.after = barrier_;
            else {
              f.after.push_back(base + (k - 1) * n + (i - 1 + n) % n);
              f.after.push_back(base + (k - 1) * n + i);
            }
            flows_.push_back(std::move(f));
          }
        for (int i = 0; i < n && steps > 0; ++i) last.push_back(base + (steps - 1) * n + i);
      }
      barrier_ = last;
      return;
    }
    std::vector<std::tuple<Rank, Rank, Bytes>> bulk;
    for (const auto& order : orders)
      for (size_t i = 0; i < order.size(); ++i)
        bulk.emplace_back(order[i], order[(i + 1) % order.size()],
                          segment * static_cast<double>(steps));
    bulk_phase(bulk, alpha * static_cast<double>(steps - 1));
  }

  // One step in which every (src, dst, bytes) transfer happens at once; `chained` makes each
  // transfer wait for its source's previous send and receive (chunk fidelity).
  void exchange(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers) {
    if (fidelity_ == Fidelity::kCollective) {
      pending_.insert(pending_.end(), transfers.begin(), transfers.end());
      ++pending_steps_;
      return;
    }
    std::vector<int> now;
    for (const auto& [src, dst, bytes] : transfers) {
      Flow f = Flow::between(src, dst, bytes);
      // Chunk fidelity: a rank's step waits for its own previous send and receive.
      const Endpoint self = Endpoint::gpu(src);
      for (int prev : barrier_) {
        const Flow& p = flows_[static_cast<size_t>(prev)];
        if (p.is_delay() || p.transfer().src == self || p.transfer().dst == self)
          f.after.push_back(prev);
      }
      if (f.after.empty()) f.after = start_;
      now.push_back(static_cast<int>(flows_.size()));
      flows_.push_back(std::move(f));
    }
    barrier_ = now;
  }

  // Ends a run of exchange() steps (collective fidelity: one bulk phase for all of them).
  void end_exchanges(Seconds alpha) {
    if (fidelity_ == Fidelity::kCollective && pending_steps_ > 0) {
      bulk_phase(pending_, alpha * static_cast<double>(pending_steps_ - 1));
      pending_.clear();
      pending_steps_ = 0;
    }
    start_ = barrier_;
  }

 private:
  // Concurrent bulk flows, merged per pair, then the latency of the remaining steps.
  void bulk_phase(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers,
                  Seconds extra_latency) {
    std::map<std::pair<Rank, Rank>, Bytes> merged;
    std::vector<std::pair<Rank, Rank>> order;
    for (const auto& [src, dst, bytes] : transfers) {
      auto [it, inserted] = merged.emplace(std::make_pair(src, dst), Bytes(0));
      if (inserted) order.push_back(it->first);
      it->second += bytes;
    }
    std::vector<int> now;
    for (const auto& pair : order) {
      now.push_back(static_cast<int>(flows_.size()));
      flows_.push_back(Flow::between(pair.first, pair.second, merged[pair], barrier_));
    }
    if (extra_latency.value() > 0) {
      flows_.push_back(Flow::delay_of(extra_latency, now));
      now = {static_cast<int>(flows_.size()) - 1};
    }
    barrier_ = now;
    start_ = now;
  }

  std::vector<Flow>& flows_;
  Fidelity fidelity_;
  std::vector<int> barrier_;  // what the next phase waits for
  std::vector<int> start_;    // the end of the previous completed phase
  std::vector<std::tuple<Rank, Rank, Bytes>> pending_;
  int pending_steps_ = 0;
};

void halving_doubling(const std::vector<Rank>& ranks, Bytes s, Seconds alpha, PhasedBuilder& b) {
  const int n = static_cast<int>(ranks.size());
  int p = 1;
  while (p * 2 <= n) p *= 2;
  auto at = [&](int i) { return ranks[static_cast<size_t>(i)]; };
  if (n > p) {  // fold the extra ranks in
    std::vector<std::tuple<Rank, Rank, Bytes>> fold;
    for (int i = p; i < n; ++i) fold.emplace_back(at(i), at(i - p), s);
    b.exchange(fold);
    b.end_exchanges(alpha);
  }
  std::vector<int> distances;
  for (int d = p / 2; d >= 1; d /= 2) distances.push_back(d);
  Bytes piece = s;
  for (int d : distances) {  // reduce-scatter by recursive halving
    piece = piece / 2.0;
    std::vector<std::tuple<Rank, Rank, Bytes>> step;
    for (int i = 0; i < p; ++i) step.emplace_back(at(i), at(i ^ d), piece);
    b.exchange(step);
  }
  for (auto it = distances.rbegin(); it != distances.rend(); ++it) {  // all-gather by doubling
    std::vector<std::tuple<Rank, Rank, Bytes>> step;
    for (int i = 0; i < p; ++i) step.emplace_back(at(i), at(i ^ *it), piece);
    b.exchange(step);
    piece = piece * 2.0;
  }
  b.end_exchanges(alpha);
  if (n > p) {  // and the result back out
    std::vector<std::tuple<Rank, Rank, Bytes>> unfold;
    for (int i = p; i < n; ++i) unfold.emplace_back(at(i - p), at(i), s);
    b.exchange(unfold);
    b.end_exchanges(alpha);
  }
}

// Ring orders along one torus dimension, both ways round when the dimension has 3 or more nodes
// (with 2, both neighbours are the same node and the shorter route is always the + cable).
std::vector<std::vector<Rank>> torus_ring_orders(const std::vector<std::vector<Rank>>& rings,
                                                 int size) {
  std::vector<std::vector<Rank>> orders = rings;
  if (size >= 3)
    for (const auto& ring : rings) orders.emplace_back(ring.rbegin(), ring.rend());
  return orders;
}

// The torus all-reduce (see torus_all_reduce_plan in the header): node reduce-scatter, D
// concurrent rotations over the torus dimensions, node all-gather.
void torus_all_reduce(const TorusAllReducePlan& plan, Bytes s, const Cluster& cluster,
                      PhasedBuilder& b, std::vector<Flow>& flows, Fidelity fidelity) {
  const size_t g = plan.nodes.front().size();
  const double gd = static_cast<double>(g);
  const Seconds intra_alpha = ring_link(plan.nodes.front(), cluster).alpha;
  const Seconds net_alpha = torus_link(static_cast<int>(g), cluster).alpha;
  if (g > 1) b.rings(plan.nodes, static_cast<int>(g - 1), s / gd, intra_alpha);
  const size_t dims = plan.sizes.size();
  std::vector<int> ends;
  for (size_t r = 0; r < dims; ++r) {
    PhasedBuilder rotation(flows, fidelity, b.barrier());
    Bytes data = s / gd / static_cast<double>(dims);
    std::vector<size_t> order;
    for (size_t i = 0; i < dims; ++i) order.push_back((r + i) % dims);
    std::vector<Bytes> entering;
    for (size_t i = 0; i < dims; ++i) {
      const size_t d = order[i];
      const int k = plan.sizes[d];
      const double ways = k >= 3 ? 2.0 : 1.0;
      const auto orders = torus_ring_orders(plan.rings[d], k);
      const int steps = i + 1 == dims ? 2 * (k - 1) : k - 1;  // the last dimension all-reduces
      rotation.rings(orders, steps, data / ways / static_cast<double>(k), net_alpha);
      entering.push_back(data);
      data = data / static_cast<double>(k);
    }
    for (size_t i = dims - 1; i-- > 0;) {  // all-gathers back
      const size_t d = order[i];
      const int k = plan.sizes[d];
      const double ways = k >= 3 ? 2.0 : 1.0;
      rotation.rings(torus_ring_orders(plan.rings[d], k), k - 1,
                     entering[i] / ways / static_cast<double>(k), net_alpha);
    }
    ends.insert(ends.end(), rotation.barrier().begin(), rotation.barrier().end());
  }
  b.join(ends);
  if (g > 1) b.rings(plan.nodes, static_cast<int>(g - 1), s / gd, intra_alpha);
}

}  // namespace

std::optional<TorusAllReducePlan> torus_all_reduce_plan(const std::vector<Rank>& ranks,
                                                        const Cluster& cluster) {
  const auto& dims = cluster.network.torus_dims;
  if (!cluster.is_torus()) return std::nullopt;
  TorusAllReducePlan plan;
  plan.nodes = ranks_by_node(ranks, cluster);
  if (plan.nodes.size() < 2) return std::nullopt;
  std::vector<std::vector<int>> coords;
  for (const auto& node : plan.nodes) {
    const int n = cluster.node_of(node.front());
    if (n < 0 || n >= cluster.nodes) return std::nullopt;
    coords.push_back(torus_coordinates(n, dims));
  }
  std::vector<size_t> spanned;
  double box = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<bool> seen(static_cast<size_t>(dims[d]), false);
    int distinct = 0;
    for (const auto& c : coords)
      if (!seen[static_cast<size_t>(c[d])]) seen[static_cast<size_t>(c[d])] = true, ++distinct;
    if (distinct == dims[d] && distinct > 1)
      spanned.push_back(d);
    else if (distinct != 1)
      return std::nullopt;  // part of a dimension: its rings would not close on one cable
    box *= distinct;
  }
  if (box != static_cast<double>(plan.nodes.size())) return std::nullopt;
  std::map<std::vector<int>, size_t> node_at;
  for (size_t i = 0; i < coords.size(); ++i) node_at[coords[i]] = i;
  const size_t g = plan.nodes.front().size();
  for (size_t d : spanned) {
    plan.sizes.push_back(dims[d]);
    std::vector<std::vector<Rank>> rings;
    for (size_t i = 0; i < coords.size(); ++i) {
      if (coords[i][d] != 0) continue;  // one line per node at coordinate 0 of this dimension
      std::vector<int> at = coords[i];
      std::vector<size_t> line;
      for (int c = 0; c < dims[d]; ++c) {
        at[d] = c;
        line.push_back(node_at.at(at));
      }
      for (size_t j = 0; j < g; ++j) {
        std::vector<Rank> ring;
        for (size_t k : line) ring.push_back(plan.nodes[k][j]);
        rings.push_back(std::move(ring));
      }
    }
    plan.rings.push_back(std::move(rings));
  }
  return plan;
}

std::vector<std::vector<Rank>> ranks_by_node(const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  std::vector<std::vector<Rank>> out = group_by_node(ranks, cluster);
  for (const auto& node : out)
    if (node.size() != out.front().size()) return {};
  return out;
}

bool nvls_supported(const Cluster& cluster) {
  // NVLS is NCCL's use of NVSwitch multicast: not there when NCCL does not run the collectives.
  return nccl_runs_collectives(cluster) && (cluster.intra_node.name == "nvswitch-nvlink4" ||
                                            cluster.intra_node.name == "nvswitch-nvlink5");
}

double nvls_efficiency(const Cluster& cluster) {
  return cluster.intra_node.name == "nvswitch-nvlink5" ? 0.74 : 0.85;
}

ProtocolEffect protocol_effect(CollectiveProtocol protocol, bool crosses_nodes, bool pcie) {
  // NCCL hwLat for the ring, LL / LL128 / Simple (us): NVLink 0.6/1.9/3.4, PCIe 1.0/2.5/5.7,
  // network 2.7/4.0/14.0.
  static constexpr double kNvlink[3] = {0.6, 1.9, 3.4}, kPci[3] = {1.0, 2.5, 5.7},
                          kNet[3] = {2.7, 4.0, 14.0};
  static constexpr double kBandwidth[3] = {0.5, 0.92, 1.0};
  if (protocol == CollectiveProtocol::kAuto) return {};
  const int p = protocol == CollectiveProtocol::kLL      ? 0
                : protocol == CollectiveProtocol::kLL128 ? 1
                                                         : 2;
  const double* lat = crosses_nodes ? kNet : pcie ? kPci : kNvlink;
  return {lat[p] / lat[0], kBandwidth[p]};
}

namespace {
// The collectives algorithm auto chooses for under NCCL's model: all-reduce, all-gather and
// reduce-scatter (the others run as the pure ring).
bool runs_nccl_auto(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter;
}

// On a torus (no NCCL there: TPU-style pods), the torus all-reduce when its closed form beats the
// ring's, else the ring; nullopt off a torus or where the torus all-reduce does not apply.
std::optional<ResolvedCollective> torus_auto(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                             const Cluster& cluster) {
  if (op.kind != CollectiveKind::kAllReduce || !torus_all_reduce_plan(ranks, cluster))
    return std::nullopt;
  CollectiveOp ring = op, torus = op;
  ring.algorithm = CollectiveAlgorithm::kRing;
  torus.algorithm = CollectiveAlgorithm::kHierarchical;
  const bool faster =
      collective_time(torus, ranks, cluster) < collective_time(ring, ranks, cluster);
  return ResolvedCollective{
      faster ? CollectiveAlgorithm::kHierarchical : CollectiveAlgorithm::kRing,
      CollectiveProtocol::kAuto};
}

// The system NCCL's model sees for this group: groups of whole nodes (or inside one node) on the
// systems core/collectives/nccl_model.h covers; nullopt elsewhere.
std::optional<NcclSystem> nccl_system_of(const std::vector<Rank>& ranks, const Cluster& cluster) {
  if (ranks.size() < 2) return std::nullopt;
  const auto nodes = ranks_by_node(ranks, cluster);
  if (nodes.empty()) return std::nullopt;
  const bool whole_nodes =
      nodes.size() == 1 || static_cast<int>(nodes.front().size()) == cluster.gpus_per_node;
  if (!whole_nodes) return std::nullopt;
  try {
    return nccl_system(cluster, static_cast<int>(ranks.size()));
  } catch (const InputError&) {
    return std::nullopt;
  }
}

NcclProtocol nccl_protocol(CollectiveProtocol p) {
  return p == CollectiveProtocol::kLL      ? NcclProtocol::kLL
         : p == CollectiveProtocol::kLL128 ? NcclProtocol::kLL128
                                           : NcclProtocol::kSimple;
}

// NCCL's cap on a ring's bus bandwidth under `protocol` on `system`; 0 when none.
BytesPerSecond ring_cap(const std::optional<NcclSystem>& system, CollectiveProtocol protocol) {
  if (!system || protocol == CollectiveProtocol::kAuto) return BytesPerSecond(0);
  const double cap_GBps = nccl_ring_bus_bandwidth_cap_GBps(*system, nccl_protocol(protocol));
  return std::isfinite(cap_GBps) ? BytesPerSecond(cap_GBps * 1e9) : BytesPerSecond(0);
}

// NCCL's cap on the tree's bus bandwidth under `protocol` for `bytes`: its per-channel maxima
// corrected by its size factor (nccl_tree_correction_factor), as NCCL's model times its tree.
BytesPerSecond tree_cap(const NcclSystem& system, NcclProtocol protocol, Bytes bytes) {
  return BytesPerSecond(nccl_tree_bus_bandwidth_cap_GBps(system, protocol) *
                        nccl_tree_correction_factor(protocol, bytes.value()) * 1e9);
}

CollectiveProtocol dtsim_protocol(NcclProtocol p) {
  return p == NcclProtocol::kLL      ? CollectiveProtocol::kLL
         : p == NcclProtocol::kLL128 ? CollectiveProtocol::kLL128
                                     : CollectiveProtocol::kSimple;
}

// Every way NCCL could run this all-reduce that dtsim builds, each as dtsim runs it: the ring under
// LL, LL128 and Simple with NCCL's base latency and bandwidth cap; the double binary tree (where
// the group has the same ranks on every node) with the base latency of the protocol NCCL's model
// would run the tree with at this size; NVLS inside one NVSwitch node. On systems NCCL's model does
// not cover: the ring, the tree and NVLS without NCCL's per-call terms. In this order; ties keep
// the first.
std::vector<ResolvedCollective> auto_candidates(const CollectiveOp& op,
                                                const std::vector<Rank>& ranks,
                                                const Cluster& cluster) {
  const auto system = nccl_system_of(ranks, cluster);
  const auto nodes = ranks_by_node(ranks, cluster);
  std::vector<ResolvedCollective> out;
  if (system) {
    for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple}) {
      const CollectiveProtocol protocol = dtsim_protocol(p);
      out.push_back(
          ResolvedCollective{CollectiveAlgorithm::kRing, protocol,
                             Seconds(nccl_base_latency_us(NcclAlgorithm::kRing, p) * 1e-6),
                             ring_cap(system, protocol)});
    }
  } else {
    out.push_back(
        ResolvedCollective{CollectiveAlgorithm::kRing, CollectiveProtocol::kAuto, {}, {}});
  }
  // Not on PCIe nodes, where the tree's collective-level decomposition is known to run slower than
  // its closed form (docs/collectives.md, "The double binary tree"): auto would pick it on a
  // figure the SimGrid engine does not reproduce.
  // dtsim builds the tree and NVLS for all-reduce only; all-gather and reduce-scatter choose among
  // the ring's protocols (NCCL's NVLS all-gather is not built: NCCL's model never picks it on the
  // NVSwitch nodes it covers, its 25 us being above Ring/LL's latency and its bandwidth below
  // Ring/LL128's).
  // PAT for all-gather and reduce-scatter at one GPU per node (NCCL's terms in its closed form).
  if (pat_supported(op, ranks, cluster))
    out.push_back(
        ResolvedCollective{CollectiveAlgorithm::kPat,
                           system ? CollectiveProtocol::kSimple : CollectiveProtocol::kAuto,
                           {},
                           {}});
  if (op.kind != CollectiveKind::kAllReduce) return out;
  if (!nodes.empty() && !cluster.gpus_on_pcie()) {
    if (system)
      for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple})
        out.push_back(
            ResolvedCollective{CollectiveAlgorithm::kTree, dtsim_protocol(p),
                               Seconds(nccl_base_latency_us(NcclAlgorithm::kTree, p) * 1e-6),
                               tree_cap(*system, p, op.bytes)});
    else
      out.push_back(
          ResolvedCollective{CollectiveAlgorithm::kTree, CollectiveProtocol::kAuto, {}, {}});
  }
  // NVLS-tree across NVSwitch nodes (Simple only, no base latency; NCCL's bus-bandwidth cap where
  // its model covers the system).
  if (nvls_supported(cluster) && nodes.size() > 1) {
    const double cap_GBps = system ? nccl_nvls_tree_bus_bandwidth_cap_GBps(*system) : 0;
    out.push_back(
        ResolvedCollective{CollectiveAlgorithm::kNvlsTree,
                           system ? CollectiveProtocol::kSimple : CollectiveProtocol::kAuto,
                           {},
                           BytesPerSecond(cap_GBps * 1e9)});
  }
  // CollNet where the switches reduce in the network (Simple only in NCCL's model, base latency
  // 0: its whole latency is in the closed form).
  if (collnet_supported(ranks, cluster))
    out.push_back(
        ResolvedCollective{CollectiveAlgorithm::kCollNet,
                           system ? CollectiveProtocol::kSimple : CollectiveProtocol::kAuto,
                           {},
                           {}});
  // NCCL runs NVLS under Simple only (src/tuning/nvls.cc); dtsim's NVLS has no protocol effect.
  if (nvls_supported(cluster) && nodes.size() == 1)
    out.push_back(
        ResolvedCollective{CollectiveAlgorithm::kNvls,
                           system ? CollectiveProtocol::kSimple : CollectiveProtocol::kAuto,
                           {},
                           {}});
  return out;
}

// Algorithm auto for an all-reduce: the fastest candidate under dtsim's closed form; nullopt for
// other collectives (they run as the ring).
std::optional<ResolvedCollective> fastest_auto(const CollectiveOp& op,
                                               const std::vector<Rank>& ranks,
                                               const Cluster& cluster) {
  if (auto torus = torus_auto(op, ranks, cluster)) return torus;
  if (!runs_nccl_auto(op.kind) || ranks.size() < 2) return std::nullopt;
  std::optional<ResolvedCollective> best;
  Seconds best_time{0};
  for (const auto& candidate : auto_candidates(op, ranks, cluster)) {
    const Seconds t = resolved_collective_time(op, ranks, cluster, candidate);
    if (!best || t < best_time) best = candidate, best_time = t;
  }
  return best;
}
}  // namespace

std::optional<NcclEstimate> nccl_reference_choice(const CollectiveOp& op,
                                                  const std::vector<Rank>& ranks,
                                                  const Cluster& cluster) {
  if (!runs_nccl_auto(op.kind)) return std::nullopt;
  const auto system = nccl_system_of(ranks, cluster);
  if (!system) return std::nullopt;
  if (op.kind != CollectiveKind::kAllReduce)
    return nccl_gather_scatter_choice(*system, op.bytes.value());
  return nccl_all_reduce_choice(*system, op.bytes.value());
}

ResolvedCollective resolve_collective(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const Cluster& cluster) {
  const bool fastest = op.protocol == CollectiveProtocol::kFastest;
  if (op.algorithm == CollectiveAlgorithm::kAuto &&
      (op.protocol == CollectiveProtocol::kAuto || fastest))
    if (auto chosen = fastest_auto(op, ranks, cluster)) return *chosen;
  ResolvedCollective r{resolve_algorithm(op, ranks, cluster), op.protocol, {}, {}};
  if (fastest) {
    // As auto would run this algorithm: its fastest candidate. Without one (halving-doubling,
    // hierarchical, the tree on PCIe nodes, collectives other than all-reduce) the algorithm's
    // own model, as with no protocol.
    r.protocol = CollectiveProtocol::kAuto;
    std::optional<ResolvedCollective> best;
    Seconds best_time{0};
    if (runs_nccl_auto(op.kind) && ranks.size() >= 2 && !torus_all_reduce_plan(ranks, cluster))
      for (const auto& candidate : auto_candidates(op, ranks, cluster)) {
        if (candidate.algorithm != r.algorithm) continue;
        const Seconds t = resolved_collective_time(op, ranks, cluster, candidate);
        if (!best || t < best_time) best = candidate, best_time = t;
      }
    if (best) return *best;
  }
  // Protocols shape the ring and the tree; the other algorithms keep their own closed forms.
  const bool tree = r.algorithm == CollectiveAlgorithm::kTree;
  if (r.algorithm != CollectiveAlgorithm::kRing && !tree) r.protocol = CollectiveProtocol::kAuto;
  // A ring or tree with an explicit protocol runs as NCCL's: its base latency, and its protocol's
  // bandwidth cap where NCCL's model covers the system.
  if (r.protocol != CollectiveProtocol::kAuto) {
    const NcclProtocol p = nccl_protocol(r.protocol);
    r.call_latency =
        Seconds(nccl_base_latency_us(tree ? NcclAlgorithm::kTree : NcclAlgorithm::kRing, p) * 1e-6);
    const auto system = nccl_system_of(ranks, cluster);
    r.bandwidth_cap = !tree    ? ring_cap(system, r.protocol)
                      : system ? tree_cap(*system, p, op.bytes)
                               : BytesPerSecond(0);
  }
  return r;
}

CollectiveAlgorithm resolve_algorithm(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const Cluster& cluster) {
  if (op.algorithm == CollectiveAlgorithm::kAuto &&
      (op.protocol == CollectiveProtocol::kAuto || op.protocol == CollectiveProtocol::kFastest))
    if (auto chosen = fastest_auto(op, ranks, cluster)) return chosen->algorithm;
  if (op.algorithm == CollectiveAlgorithm::kPat)
    return pat_supported(op, ranks, cluster) ? op.algorithm : CollectiveAlgorithm::kRing;
  if (op.kind != CollectiveKind::kAllReduce) return CollectiveAlgorithm::kRing;
  switch (op.algorithm) {
    case CollectiveAlgorithm::kHalvingDoubling:
      return op.algorithm;
    case CollectiveAlgorithm::kTree:
      return ranks_by_node(ranks, cluster).empty() ? CollectiveAlgorithm::kRing : op.algorithm;
    case CollectiveAlgorithm::kNvls:
      return nvls_supported(cluster) && ranks_by_node(ranks, cluster).size() == 1
                 ? op.algorithm
                 : CollectiveAlgorithm::kRing;
    case CollectiveAlgorithm::kNvlsTree:
      return nvls_supported(cluster) && ranks_by_node(ranks, cluster).size() > 1
                 ? op.algorithm
                 : CollectiveAlgorithm::kRing;
    case CollectiveAlgorithm::kCollNet:
      return collnet_supported(ranks, cluster) ? op.algorithm : CollectiveAlgorithm::kRing;
    case CollectiveAlgorithm::kHierarchical: {
      const auto nodes = ranks_by_node(ranks, cluster);
      return nodes.size() > 1 ? op.algorithm : CollectiveAlgorithm::kRing;
    }
    default:
      return CollectiveAlgorithm::kRing;
  }
}

namespace {

// Parents of NCCL's two trees over m nodes (src/graph/trees.cc, ncclGetBtree and ncclGetDtree;
// our reading, written afresh): in the first tree node 0 is the root; any other node x with lowest
// set bit `bit` hangs below x with that bit cleared and the next one set, or just cleared when
// that is out of range. The second tree mirrors the first (x -> m-1-x) when m is even and shifts
// it by one (x -> x+1) when m is odd. -1 marks the root.
std::vector<int> btree_parents(int m) {
  std::vector<int> parent(static_cast<size_t>(m), -1);
  for (int x = 1; x < m; ++x) {
    const int bit = x & -x;
    int up = (x ^ bit) | (bit << 1);
    if (up >= m) up = x ^ bit;
    parent[static_cast<size_t>(x)] = up;
  }
  return parent;
}

std::array<std::vector<int>, 2> dtree_parents(int m) {
  const std::vector<int> first = btree_parents(m);
  std::vector<int> second(static_cast<size_t>(m), -1);
  for (int x = 0; x < m; ++x) {
    if (m % 2 == 0) {
      const int p = first[static_cast<size_t>(m - 1 - x)];
      second[static_cast<size_t>(x)] = p < 0 ? -1 : m - 1 - p;
    } else {
      const int p = first[static_cast<size_t>((x - 1 + m) % m)];
      second[static_cast<size_t>(x)] = p < 0 ? -1 : (p + 1) % m;
    }
  }
  return {first, second};
}

int depth_in(const std::vector<int>& parent, int x) {
  int d = 0;
  for (int y = parent[static_cast<size_t>(x)]; y >= 0; y = parent[static_cast<size_t>(y)]) ++d;
  return d;
}

}  // namespace

Seconds TreePlan::time() const {
  Seconds total{0}, widest{0};
  for (size_t p = 0; p < stage_time.size(); ++p) {
    total += stage_time[p];
    widest = std::max(widest, stage_gap[p]);
  }
  return total + widest * static_cast<double>(chunks - 1);
}

TreePlan double_binary_tree(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes,
                            CollectiveProtocol protocol, BytesPerSecond bus_cap, Bytes chunk_size) {
  TreePlan plan;
  const auto nodes = ranks_by_node(ranks, cluster);
  if (nodes.empty() || ranks.size() < 2) return plan;
  const int m = static_cast<int>(nodes.size()), g = static_cast<int>(nodes.front().size());
  plan.channels = m == 1 ? 1 : g;
  const auto parents = dtree_parents(m);
  int node_height = 0;
  std::array<std::vector<int>, 2> node_depth;
  for (int t = 0; t < 2; ++t)
    for (int x = 0; x < m; ++x) {
      node_depth[static_cast<size_t>(t)].push_back(depth_in(parents[static_cast<size_t>(t)], x));
      node_height = std::max(node_height, node_depth[static_cast<size_t>(t)].back());
    }
  plan.height = node_height + g - 1;

  // Chunks: NCCL's Simple tree chunk is one 512 KiB step of its 4 MiB buffer, halved while the
  // operation has fewer than 8, 4 and 1 chunks per channel per level of the tree
  // (src/enqueue.cc). At most 4096 chunks per channel and tree: beyond that chunks grow.
  const double per_tree = bytes.value() / (2.0 * plan.channels);
  double chunk = 512 * 1024;
  const double h = plan.height;
  while (per_tree / chunk < 8 * h && chunk > 131072) chunk /= 2;
  while (per_tree / chunk < 4 * h && chunk > 65536) chunk /= 2;
  while (per_tree / chunk < h && chunk > 32768) chunk /= 2;
  if (chunk_size.value() > 0) chunk = chunk_size.value();
  double chunks = std::clamp(std::ceil(per_tree / chunk), 1.0, 4096.0);

  // Under one of NCCL's protocols (core/collectives/nccl_model.h): each hop's latency scaled by
  // NCCL's tree hardware latency over its LL ring figure (the catalog's latencies), and the bytes
  // on the wire by the protocol's bandwidth factor (LL's flags, LL128's 8 bytes in 128).
  const bool pcie = cluster.gpus_on_pcie();
  double intra_scale = 1, net_scale = 1, wire = 1;
  if (protocol != CollectiveProtocol::kAuto && protocol != CollectiveProtocol::kFastest) {
    const NcclProtocol p = nccl_protocol(protocol);
    // LL and LL128 forward every line (8 data bytes in 16, 120 in 128) as soon as its flag
    // arrives, so their pipeline has no chunk-sized fill. dtsim cuts them into as many chunks as
    // keep the fill within 1/16 of the transfer (32 h, at least Simple's count), never below a
    // line.
    if (p != NcclProtocol::kSimple) {
      const double line = p == NcclProtocol::kLL ? 8 : 120;
      chunks = std::clamp(std::ceil(per_tree / line), 1.0, std::max(chunks, 32 * h));
    }
    const NcclLink intra = pcie ? NcclLink::kPci : NcclLink::kNvlink;
    intra_scale = nccl_hw_latency_us(NcclAlgorithm::kTree, p, intra) /
                  nccl_hw_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL, intra);
    net_scale = nccl_hw_latency_us(NcclAlgorithm::kTree, p, NcclLink::kNet) /
                nccl_hw_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL, NcclLink::kNet);
    wire = 1 / nccl_tree_bandwidth_factor(m, p);
  }
  plan.chunks = static_cast<int>(chunks);
  plan.chunk = Bytes(per_tree / plan.chunks);
  plan.wire_chunk = plan.chunk * wire;

  // The edges of every channel's two trees.
  for (int c = 0; c < plan.channels; ++c) {
    auto at = [&](int node, int j) {
      return nodes[static_cast<size_t>(node)][static_cast<size_t>((c + j) % g)];
    };
    for (int t = 0; t < 2; ++t) {
      std::vector<TreePlan::Edge> edges;
      for (int x = 0; x < m; ++x) {
        const int dn = node_depth[static_cast<size_t>(t)][static_cast<size_t>(x)];
        const int up = parents[static_cast<size_t>(t)][static_cast<size_t>(x)];
        if (up >= 0) edges.push_back(TreePlan::Edge{at(up, 0), at(x, 0), dn, false});
        for (int j = 1; j < g; ++j)
          edges.push_back(TreePlan::Edge{at(x, j - 1), at(x, j), dn + j, false});
      }
      plan.trees.push_back(std::move(edges));
    }
  }

  // Links as the SimGrid platform builds them (sim/platform.cc): a GPU's fabric link (both ways)
  // for flows inside a node, the GPU's NIC (by GPU-NIC affinity) across nodes, and on PCIe nodes
  // the GPU's link as well. Every edge carries one flow each way per chunk, all in flight at once
  // in steady state; other GPUs' groups of the same shape share the NICs, as for the ring.
  const double gpu_bw = cluster.usable_fabric_bandwidth().value();
  const double nic_bw = cluster.usable_nic_bandwidth().value();
  int64_t top = 0;  // the largest GPU rank or NIC index
  for (Rank r : ranks) top = std::max({top, int64_t{r}, int64_t{cluster.nic_of(r)}});
  std::vector<int> group_on_nic(static_cast<size_t>(top + 1), 0);
  for (Rank r : ranks) ++group_on_nic[static_cast<size_t>(cluster.nic_of(r))];
  const double gpus_per_nic =
      std::max(1.0, static_cast<double>(cluster.gpus_per_node) / cluster.nics());
  // Link id: 4 x (GPU rank or NIC) + 2 x (NIC?) + (incoming?); at most 4 links per route.
  struct Route {
    std::array<std::pair<size_t, double>, 4> links;  // (id, seconds per byte per flow)
    size_t count = 0;
    void add(int64_t id, double per_byte) { links[count++] = {static_cast<size_t>(id), per_byte}; }
    auto begin() const { return links.begin(); }
    auto end() const { return links.begin() + static_cast<std::ptrdiff_t>(count); }
  };
  auto links = [&](Rank src, Rank dst) {
    Route out;
    const bool across = cluster.node_of(src) != cluster.node_of(dst);
    if (!across || pcie) {
      out.add(4 * int64_t{src}, 1 / gpu_bw);
      out.add(4 * int64_t{dst} + 1, 1 / gpu_bw);
    }
    if (across) {
      const int a = cluster.nic_of(src), b = cluster.nic_of(dst);
      out.add(4 * int64_t{a} + 2, gpus_per_nic / group_on_nic[static_cast<size_t>(a)] / nic_bw);
      out.add(4 * int64_t{b} + 3, gpus_per_nic / group_on_nic[static_cast<size_t>(b)] / nic_bw);
    }
    return out;
  };
  std::vector<int> flows_on(static_cast<size_t>(4 * (top + 1)), 0);
  for (const auto& edges : plan.trees)
    for (const auto& e : edges) {
      for (const auto& l : links(e.child, e.parent)) ++flows_on[l.first];
      for (const auto& l : links(e.parent, e.child)) ++flows_on[l.first];
    }
  auto busy = [&](Rank src, Rank dst) {
    double worst = 0;
    for (const auto& [id, per_byte] : links(src, dst))
      worst = std::max(worst, flows_on[id] * per_byte);
    return Seconds(worst * plan.wire_chunk.value());
  };
  const Seconds intra_alpha = cluster.intra_node.latency * intra_scale;
  const Seconds net_alpha = cluster.gpu_network_latency() * net_scale;
  for (auto& edges : plan.trees)
    for (auto& e : edges) {
      e.across = cluster.node_of(e.child) != cluster.node_of(e.parent);
      Seconds& worst = e.across ? plan.net_busy : plan.intra_busy;
      worst = std::max({worst, busy(e.child, e.parent), busy(e.parent, e.child)});
    }
  plan.net_alpha = net_alpha;
  plan.intra_alpha = intra_alpha;
  plan.net_route_alpha = cluster.gpu_network_latency();
  plan.intra_route_alpha = cluster.intra_node.latency;
  // Every stage runs at the pace of the busiest link of the kinds of hop it has.
  const auto stages = static_cast<size_t>(2 * plan.height);
  std::vector<Seconds> stage_alpha(stages, Seconds(0));
  plan.stage_gap.assign(stages, Seconds(0));
  for (const auto& edges : plan.trees)
    for (const auto& e : edges)
      for (size_t p : {static_cast<size_t>(plan.height - e.depth),
                       static_cast<size_t>(plan.height + e.depth - 1)}) {
        stage_alpha[p] = std::max(stage_alpha[p], e.across ? net_alpha : intra_alpha);
        plan.stage_gap[p] = std::max(plan.stage_gap[p], e.across ? plan.net_busy : plan.intra_busy);
      }
  // NCCL's cap on the tree's bus bandwidth B (algBw B / 2): the 2 S = 4 channels K c the busiest
  // link moves take at least that long, so no stage takes a chunk faster than 4 channels c / B.
  if (bus_cap.value() > 0)
    for (auto& gap : plan.stage_gap)
      gap = std::max(gap, plan.chunk * (4.0 * plan.channels) / bus_cap);
  for (size_t p = 0; p < stages; ++p) plan.stage_time.push_back(stage_alpha[p] + plan.stage_gap[p]);
  return plan;
}

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
         !cluster.is_torus();
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

namespace {

// The tree's flows. Chunk fidelity: every chunk on every edge, each direction, as its own flow,
// started by a pipeline clock of delays (stage p passes chunk j on after w_p and takes chunk j+1
// b_p after chunk j) and after the flows that bring it its data; contention stretches the flows and
// so delays what depends on them. Collective fidelity: one flow per edge and direction with all
// its chunks, all at once, and the rest of the closed form as trailing latency. With merge_pairs
// the chain flows inside each node are merged per GPU pair (merge_parallel_flows): every ordered
// pair of neighbours in the channels' chains carries the same number of flows, 2 (g - 1) on g-GPU
// nodes (2 on one node), so each GPU link keeps its shares in the same proportions and the merge is
// exact while only this collective uses those links. Flows across nodes stay one per edge: the two
// trees share some node pairs and not others, and merging those changes how a NIC is shared
// (+7% at 64 MiB over 32 nodes).
void tree_flows(const TreePlan& plan, Fidelity fidelity, bool merge_pairs, CollectiveSchedule& s) {
  const int stages = 2 * plan.height;
  s.channels = plan.channels;
  s.steps = stages;
  if (fidelity == Fidelity::kCollective) {
    const Bytes all = plan.wire_chunk * static_cast<double>(plan.chunks);
    Seconds bulk{0};
    std::vector<Flow> chains;
    for (const auto& edges : plan.trees)
      for (const auto& e : edges) {
        auto& into = e.across ? s.flows : chains;
        into.push_back(Flow::between(e.child, e.parent, all));
        into.push_back(Flow::between(e.parent, e.child, all));
        bulk = std::max(bulk, e.across ? plan.net_route_alpha + plan.net_busy * plan.chunks
                                       : plan.intra_route_alpha + plan.intra_busy * plan.chunks);
      }
    if (merge_pairs) merge_parallel_flows(chains);
    s.flows.insert(s.flows.end(), chains.begin(), chains.end());
    s.trailing_latency = std::max(Seconds(0), plan.time() - bulk);
    return;
  }
  // Per tree: its ranks numbered 0.. (the order they appear as children, then the root), each
  // edge's child as that number, and what each edge's flows wait for besides the clock: going up,
  // the up flows into its child from the child's children; going down, the down flow into its
  // parent, or from the root the up flows into it (in the order of the tree's edges).
  struct EdgeWaits {
    int child = 0;                // the edge's child, numbered
    std::vector<int> up_after;    // numbered children of the edge's child
    std::vector<int> root_after;  // the edge's parent is the root: its numbered children
    int down_after = -1;          // else the edge's parent, numbered
  };
  std::vector<std::vector<EdgeWaits>> waits(plan.trees.size());
  std::vector<size_t> tree_ranks(plan.trees.size(), 0);
  // Flows at each stage: (tree, edge index, going up).
  std::vector<std::vector<std::tuple<size_t, size_t, bool>>> at_stage(static_cast<size_t>(stages));
  size_t edges_in_all = 0;
  for (size_t t = 0; t < plan.trees.size(); ++t) {
    const auto& edges = plan.trees[t];
    edges_in_all += edges.size();
    std::map<Rank, int> number;
    std::map<Rank, std::vector<int>> children;  // numbered, in edge order
    for (const auto& e : edges) number.emplace(e.child, static_cast<int>(number.size()));
    Rank root = 0;
    for (const auto& e : edges)
      if (!number.count(e.parent)) root = e.parent;
    number.emplace(root, static_cast<int>(number.size()));
    for (const auto& e : edges) children[e.parent].push_back(number.at(e.child));
    tree_ranks[t] = number.size();
    for (size_t k = 0; k < edges.size(); ++k) {
      const auto& e = edges[k];
      EdgeWaits w;
      w.child = number.at(e.child);
      if (auto it = children.find(e.child); it != children.end()) w.up_after = it->second;
      if (e.parent == root)
        w.root_after = children[e.parent];
      else
        w.down_after = number.at(e.parent);
      waits[t].push_back(std::move(w));
      at_stage[static_cast<size_t>(plan.height - e.depth)].emplace_back(t, k, true);
      at_stage[static_cast<size_t>(plan.height + e.depth - 1)].emplace_back(t, k, false);
    }
  }
  s.flows.reserve(s.flows.size() + static_cast<size_t>(plan.chunks) *
                                       (2 * static_cast<size_t>(stages) + 2 * edges_in_all));
  auto flow_of = [](const std::vector<int>& flows, int rank) {
    const int f = flows[static_cast<size_t>(rank)];
    if (f < 0) throw RuntimeError("tree schedule: a flow waits for one not yet built");
    return f;
  };
  std::vector<int> gap_prev(static_cast<size_t>(stages), -1);
  // Flow indices of the current chunk: per tree, numbered rank -> up flow and down flow into it.
  std::vector<std::vector<int>> up_flow(plan.trees.size()), down_flow(plan.trees.size());
  for (int j = 0; j < plan.chunks; ++j) {
    for (size_t t = 0; t < plan.trees.size(); ++t) {
      up_flow[t].assign(tree_ranks[t], -1);
      down_flow[t].assign(tree_ranks[t], -1);
    }
    int arrive_here = -1;
    for (int p = 0; p < stages; ++p) {
      const auto up = static_cast<size_t>(p);
      std::vector<int> clock;
      if (p > 0) clock.push_back(arrive_here);
      if (j > 0) clock.push_back(gap_prev[up]);
      const int arrive = static_cast<int>(s.flows.size());
      s.flows.push_back(Flow::delay_of(plan.stage_time[up], clock));
      gap_prev[up] = static_cast<int>(s.flows.size());
      s.flows.push_back(Flow::delay_of(plan.stage_gap[up], clock));
      for (const auto& [t, k, going_up] : at_stage[up]) {
        const auto& e = plan.trees[t][k];
        const EdgeWaits& w = waits[t][k];
        // Its waits: the clock's, then the flows that bring it its data (one allocation).
        std::vector<int> after;
        after.reserve(clock.size() + (going_up           ? w.up_after.size()
                                      : w.down_after < 0 ? w.root_after.size()
                                                         : 1));
        after.insert(after.end(), clock.begin(), clock.end());
        Flow f = Flow::between(going_up ? e.child : e.parent, going_up ? e.parent : e.child,
                               plan.wire_chunk, std::move(after));
        if (going_up) {
          for (int c : w.up_after) f.after.push_back(flow_of(up_flow[t], c));
          up_flow[t][static_cast<size_t>(w.child)] = static_cast<int>(s.flows.size());
        } else {
          if (w.down_after < 0)
            for (int c : w.root_after) f.after.push_back(flow_of(up_flow[t], c));
          else
            f.after.push_back(flow_of(down_flow[t], w.down_after));
          down_flow[t][static_cast<size_t>(w.child)] = static_cast<int>(s.flows.size());
        }
        s.flows.push_back(std::move(f));
      }
      arrive_here = arrive;
    }
  }
}

}  // namespace

double chunk_flow_count(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const Cluster& cluster) {
  const double n = static_cast<double>(ranks.size());
  if (n <= 1) return 0;
  const ResolvedCollective resolved = resolve_collective(op, ranks, cluster);
  const CollectiveAlgorithm algorithm = resolved.algorithm;
  if (algorithm == CollectiveAlgorithm::kNvls) return 2 * n;
  if (algorithm == CollectiveAlgorithm::kNvlsTree) {
    const NvlsTreePlan plan = nvls_tree_plan(ranks, cluster, op.bytes);
    if (plan.rails.empty()) return 2 * n;
    const TreePlan& rail = plan.rails.front();
    const double m = static_cast<double>(plan.nodes.size());
    return 2 * n + static_cast<double>(plan.rails.size()) * rail.chunks *
                       (4.0 * (m - 1) + 4.0 * rail.height);
  }
  if (algorithm == CollectiveAlgorithm::kPat) return n * std::ceil(std::log2(n));
  if (algorithm == CollectiveAlgorithm::kCollNet) {
    const double g = n / static_cast<double>(ranks_by_node(ranks, cluster).size());
    return n * (g - 1) + n;
  }
  if (algorithm == CollectiveAlgorithm::kTree) {
    const TreePlan plan =
        double_binary_tree(ranks, cluster, op.bytes, resolved.protocol, resolved.bandwidth_cap);
    return plan.chunks * (plan.channels * 4.0 * (n - 1) + 4.0 * plan.height);
  }
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) return (2 * std::log2(n) + 2) * n;
  if (algorithm == CollectiveAlgorithm::kHierarchical)
    if (const auto plan = torus_all_reduce_plan(ranks, cluster)) {
      // Node rings, then every rotation passes each dimension once: 2(k - 1) steps of n flows,
      // both ways round when k >= 3.
      const double g = static_cast<double>(plan->nodes.front().size());
      const double rotations = static_cast<double>(plan->sizes.size());
      double count = 2 * (g - 1) * n;
      for (int k : plan->sizes) count += rotations * 2 * (k - 1) * n * (k >= 3 ? 2 : 1);
      return count;
    }
  if (algorithm == CollectiveAlgorithm::kHierarchical) {
    const double m = static_cast<double>(ranks_by_node(ranks, cluster).size()), g = n / m;
    return 2 * (g - 1) * n + 2 * (m - 1) * n;
  }
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBarrier:
      return 2 * (n - 1) * n * static_cast<double>(ring_channels(ranks, cluster).size());
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return (n - 1) * n * static_cast<double>(ring_channels(ranks, cluster).size());
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return (n - 1) * static_cast<double>(chain_channels(ranks, op.root, false, cluster).size());
    case CollectiveKind::kAllToAll:
      return (n - 1) * n;
  }
  return 0;
}

namespace {

// Makes every flow of `s` wait for a delay flow placed first: NCCL's per-call latency, paid before
// any data moves.
void prepend_delay(CollectiveSchedule& s, Seconds delay) {
  if (delay.value() <= 0) return;
  if (s.flows.empty()) {
    s.trailing_latency += delay;
    return;
  }
  // Built anew rather than inserted at the front: one allocation, no shifting of the flows.
  std::vector<Flow> flows;
  flows.reserve(s.flows.size() + 1);
  flows.push_back(Flow::delay_of(delay));
  for (auto& f : s.flows) {
    for (int& a : f.after) ++a;
    if (f.after.empty()) f.after.push_back(0);
    flows.push_back(std::move(f));
  }
  s.flows = std::move(flows);
}

CollectiveSchedule decompose_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                   const Cluster& cluster, Fidelity fidelity, bool merge_pairs,
                                   const ResolvedCollective& resolved) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  const LinkCost link = ring_link(ranks, cluster);
  const Seconds alpha = link.alpha;
  const CollectiveAlgorithm algorithm = resolved.algorithm;
  // Ring family: the protocol inflates bytes by beta over the protocol's bandwidth (its factor,
  // and NCCL's cap) and adds latency per step, which is added once at the end (exact on a
  // contention-free network).
  const ProtocolEffect effect = protocol_effect(
      resolved.protocol, ranks_by_node(ranks, cluster).size() != 1, cluster.gpus_on_pcie());
  BytesPerSecond protocol_beta = link.beta * effect.bandwidth_factor;
  if (resolved.bandwidth_cap.value() > 0)
    protocol_beta = std::min(protocol_beta, resolved.bandwidth_cap);
  const double inflate = link.beta / protocol_beta;
  auto protocol_latency = [&](int steps) { return alpha * (steps * (effect.latency_scale - 1.0)); };
  if (algorithm == CollectiveAlgorithm::kNvls) {
    // Up and down flows for every GPU at once, then the second half-hop of latency.
    const Endpoint sw = Endpoint::node_switch(cluster.node_of(ranks.front()));
    const Bytes per_link = op.bytes * ((1.0 + 1.0 / n) / nvls_efficiency(cluster));
    std::vector<int> all;
    for (Rank r : ranks) {
      all.push_back(static_cast<int>(s.flows.size()));
      s.flows.push_back(Flow::transfer(Endpoint::gpu(r), sw, per_link));
      all.push_back(static_cast<int>(s.flows.size()));
      s.flows.push_back(Flow::transfer(sw, Endpoint::gpu(r), per_link));
    }
    // The flows carry one GPU link's latency (half a hop, core/hardware/cluster.h); the delay
    // makes the whole call NCCL's NVLS latency, 25 us (nccl_nvls_latency_us), as the closed form.
    const Seconds nvls_latency(nccl_nvls_latency_us() * 1e-6);
    s.flows.push_back(
        Flow::delay_of(std::max(Seconds(0), nvls_latency - cluster.intra_node.latency / 2.0), all));
    s.steps = 1;
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kNvlsTree) {
    const NvlsTreePlan plan = nvls_tree_plan(ranks, cluster, op.bytes, resolved.bandwidth_cap);
    // The in-node part: every GPU to its switch and back, after the trees' hop latencies.
    const int wait = static_cast<int>(s.flows.size());
    s.flows.push_back(Flow::delay_of(plan.tree_latency));
    for (const auto& node : plan.nodes) {
      const Endpoint sw = Endpoint::node_switch(cluster.node_of(node.front()));
      for (Rank r : node) {
        s.flows.push_back(Flow::transfer(Endpoint::gpu(r), sw, plan.per_link, {wait}));
        s.flows.push_back(Flow::transfer(sw, Endpoint::gpu(r), plan.per_link, {wait}));
      }
    }
    // The rails' trees beside it, each with its own rest of the closed form after its flows.
    // Rails whose pipelines have the same timing share one pipeline clock (its delays depend on
    // nothing but each other, so sharing them is exact): their trees become one plan's.
    std::vector<TreePlan> clocks;
    for (const TreePlan& rail : plan.rails) {
      auto same = std::find_if(clocks.begin(), clocks.end(), [&](const TreePlan& c) {
        return c.chunks == rail.chunks && c.wire_chunk.value() == rail.wire_chunk.value() &&
               c.stage_time == rail.stage_time && c.stage_gap == rail.stage_gap &&
               c.net_busy == rail.net_busy && c.intra_busy == rail.intra_busy;
      });
      if (same == clocks.end())
        clocks.push_back(rail);
      else
        same->trees.insert(same->trees.end(), rail.trees.begin(), rail.trees.end());
    }
    for (const TreePlan& rail : clocks) {
      CollectiveSchedule part;
      tree_flows(rail, fidelity, false, part);
      const int offset = static_cast<int>(s.flows.size());
      std::vector<int> mine;
      for (auto& f : part.flows) {
        for (int& a : f.after) a += offset;
        mine.push_back(static_cast<int>(s.flows.size()));
        s.flows.push_back(std::move(f));
      }
      if (part.trailing_latency.value() > 0)
        s.flows.push_back(Flow::delay_of(part.trailing_latency, std::move(mine)));
      s.steps = std::max(s.steps, part.steps);
    }
    s.channels = static_cast<int>(plan.rails.size());
    s.trailing_latency = plan.nvls_latency - plan.link_alpha;
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kPat) {
    // One exchange per step (PatPlan); each flow already carries its route's latency, so the steps'
    // own latency and the call's come after as the rest of the closed form.
    const PatPlan plan = pat_plan(op, ranks, cluster);
    PhasedBuilder b(s.flows, fidelity);
    for (size_t k = 0; k < plan.blocks.size(); ++k) {
      std::vector<std::tuple<Rank, Rank, Bytes>> step;
      for (int i = 0; i < n; ++i)
        step.emplace_back(ranks[static_cast<size_t>(i)],
                          ranks[static_cast<size_t>((i + plan.shift[k]) % n)],
                          plan.block * static_cast<double>(plan.blocks[k]));
      b.exchange(step);
    }
    b.end_exchanges(plan.step_latency);
    const double steps = static_cast<double>(plan.blocks.size());
    s.trailing_latency = plan.call_latency + (fidelity == Fidelity::kChunk
                                                  ? (plan.step_latency - plan.net.alpha) * steps
                                                  : plan.step_latency - plan.net.alpha);
    s.steps = static_cast<int>(plan.blocks.size());
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kCollNet) {
    // Every GPU pair of a node, and every GPU to its rail's next node, at once (CollNetPlan); the
    // rest of NCCL's latency after them.
    const CollNetPlan plan = collnet_plan(ranks, cluster, op.bytes);
    const double g = static_cast<double>(plan.nodes.front().size());
    const size_t m = plan.nodes.size();
    for (size_t k = 0; k < m; ++k) {
      const auto& node = plan.nodes[k];
      for (Rank a : node)
        for (Rank b : node)
          if (a != b) s.flows.push_back(Flow::between(a, b, op.bytes * (2 / g)));
      for (size_t j = 0; j < node.size(); ++j)
        s.flows.push_back(Flow::between(node[j], plan.nodes[(k + 1) % m][j], op.bytes / g));
    }
    s.trailing_latency = plan.latency - plan.net.alpha;
    s.steps = 1;
    s.channels = static_cast<int>(g);
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kTree) {
    // Not on PCIe nodes, where a GPU's link carries both its chain flows and its network flows:
    // there the merged chain flows would take fewer shares of the link than the flows they replace.
    tree_flows(
        double_binary_tree(ranks, cluster, op.bytes, resolved.protocol, resolved.bandwidth_cap),
        fidelity, merge_pairs && !cluster.gpus_on_pcie(), s);
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) {
    PhasedBuilder b(s.flows, fidelity);
    halving_doubling(ranks, op.bytes, alpha, b);
    return s;
  }
  if (algorithm == CollectiveAlgorithm::kHierarchical)
    if (const auto plan = torus_all_reduce_plan(ranks, cluster)) {
      PhasedBuilder b(s.flows, fidelity);
      torus_all_reduce(*plan, op.bytes, cluster, b, s.flows, fidelity);
      return s;
    }
  if (algorithm == CollectiveAlgorithm::kHierarchical) {
    const auto nodes = ranks_by_node(ranks, cluster);
    const size_t g = nodes.front().size(), m = nodes.size();
    std::vector<std::vector<Rank>> rails(g);
    for (const auto& node : nodes)
      for (size_t j = 0; j < g; ++j) rails[j].push_back(node[j]);
    const Seconds intra_alpha = ring_link(nodes.front(), cluster).alpha;
    const Seconds inter_alpha = ring_link(rails.front(), cluster).alpha;
    PhasedBuilder b(s.flows, fidelity);
    const double gd = static_cast<double>(g), md = static_cast<double>(m);
    const auto [node_orders, node_channels] = node_ring_orders(nodes, cluster);
    const Bytes node_segment = op.bytes / gd / static_cast<double>(node_channels);
    if (g > 1) b.rings(node_orders, static_cast<int>(g - 1), node_segment, intra_alpha);
    b.rings(rails, static_cast<int>(2 * (m - 1)), op.bytes / gd / md, inter_alpha);
    if (g > 1) b.rings(node_orders, static_cast<int>(g - 1), node_segment, intra_alpha);
    return s;
  }
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBarrier: {
      const bool all_reduce =
          op.kind == CollectiveKind::kAllReduce || op.kind == CollectiveKind::kBarrier;
      s.steps = all_reduce ? 2 * (n - 1) : n - 1;
      const Bytes total = op.kind == CollectiveKind::kBarrier ? Bytes(0) : op.bytes;
      const auto channels = ring_channels(ranks, cluster);
      s.channels = static_cast<int>(channels.size());
      const Bytes per_channel = total * inflate / static_cast<double>(channels.size());
      // One step's time at the bottleneck hop, and the closed form (cost_model.h): the hops'
      // latencies along the pipeline plus steps x period.
      const Seconds period = total * inflate / static_cast<double>(n) / link.beta;
      const Seconds raw_path =
          ring_path_latency(ranks, s.steps, cluster, CollectiveProtocol::kAuto);
      const Seconds path = ring_path_latency(ranks, s.steps, cluster, resolved.protocol);
      for (const auto& order : channels) {
        if (fidelity == Fidelity::kChunk)
          ring_steps(order, s.steps, per_channel / static_cast<double>(n), period, cluster,
                     s.flows);
        else
          ring_bulk(order, per_channel * (static_cast<double>(s.steps) / n), s.flows);
      }
      if (fidelity == Fidelity::kCollective) {
        // The bulk flows take their hop's latency plus everything they carry at its bandwidth;
        // the slowest of them ends the flows, and the rest of the closed form follows as latency.
        const RingHops hops = ring_hops(ranks, cluster);
        const double moved = total.value() * inflate * s.steps / n;
        Seconds bulk = hops.intra.alpha + Bytes(moved) / hops.intra.beta;
        if (hops.net.beta.value() > 0)
          bulk = std::max(bulk, hops.net.alpha + Bytes(moved) / hops.net.beta);
        s.trailing_latency =
            std::max(Seconds(0), raw_path + period * static_cast<double>(s.steps) - bulk);
        if (merge_pairs) merge_parallel_flows(s.flows);
      }
      s.trailing_latency += path - raw_path;
      return s;
    }
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      // A chain from the root (broadcast) or to the root (reduce), perfectly pipelined: every link
      // carries S at once, and the pipeline fill costs (N-2) extra hop latencies.
      s.steps = n - 1;
      const auto chains =
          chain_channels(ranks, op.root, op.kind == CollectiveKind::kReduce, cluster);
      s.channels = static_cast<int>(chains.size());
      for (const auto& chain : chains)
        for (int i = 0; i + 1 < n; ++i)
          s.flows.push_back(Flow::between(chain[static_cast<size_t>(i)],
                                          chain[static_cast<size_t>(i + 1)],
                                          op.bytes * inflate / static_cast<double>(chains.size())));
      s.trailing_latency = alpha * static_cast<double>(n - 2) + protocol_latency(s.steps);
      return s;
    }
    case CollectiveKind::kAllToAll: {
      // Pairwise exchange: in step k rank i sends its block for rank i+k.
      s.steps = n - 1;
      const Bytes block = op.bytes * inflate / static_cast<double>(n);
      if (fidelity == Fidelity::kChunk) {
        for (int k = 1; k < n; ++k) {
          for (int i = 0; i < n; ++i) {
            Flow f = Flow::between(ranks[static_cast<size_t>(i)],
                                   ranks[static_cast<size_t>((i + k) % n)], block);
            if (k > 1) {
              const int prev = (k - 2) * n;
              f.after.push_back(prev + i);                            // its previous send
              f.after.push_back(prev + ((i - (k - 1)) % n + n) % n);  // its previous receive
            }
            s.flows.push_back(std::move(f));
          }
        }
      } else {
        for (int i = 0; i < n; ++i)
          for (int k = 1; k < n; ++k)
            s.flows.push_back(Flow::between(ranks[static_cast<size_t>(i)],
                                            ranks[static_cast<size_t>((i + k) % n)], block));
        s.trailing_latency = alpha * static_cast<double>(n - 2);
        if (merge_pairs) merge_parallel_flows(s.flows);
      }
      s.trailing_latency += protocol_latency(s.steps);
      return s;
    }
  }
  return s;
}

}  // namespace

CollectiveSchedule decompose(const CollectiveOp& op, const std::vector<Rank>& ranks,
                             const Cluster& cluster, Fidelity fidelity, bool merge_pairs) {
  if (ranks.size() <= 1) return {};
  const ResolvedCollective resolved = resolve_collective(op, ranks, cluster);
  CollectiveSchedule s = decompose_flows(op, ranks, cluster, fidelity, merge_pairs, resolved);
  prepend_delay(s, resolved.call_latency);
  return s;
}

}  // namespace dtsim
