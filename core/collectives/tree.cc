// NCCL's double binary tree all-reduce: the two trees over nodes (btree_parents, dtree_parents),
// the plan with its chunks, protocol terms and per-stage pipeline times (double_binary_tree,
// TreePlan::time), and its flows at either fidelity (tree_flows), which the NVLS-tree's rails use
// as well. The contract is in core/collectives/collective_schedule.h (TreePlan).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/collectives/collective_schedule.h"
#include "core/collectives/internal/schedule_parts.h"
#include "core/collectives/nccl_model.h"

namespace dtsim {

using collectives_internal::nccl_protocol;

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

namespace {

// What a tree plan takes from its group and its cluster alone, whatever the bytes and the
// protocol: the edges of every channel's two trees, each kind of hop's busiest link in seconds
// per byte on the wire, and which kinds of hop each of the 2h pipeline stages has. Large groups
// build it once for all their bucket sizes and protocols (tree_shape's cache).
struct TreeShape {
  int nodes = 0;  // the group's nodes; 0 when its nodes hold different numbers of its ranks
  int channels = 1, height = 0;
  std::vector<std::shared_ptr<const std::vector<TreePlan::Edge>>> trees;
  double intra_load = 0, net_load = 0;       // busiest link's flows x seconds per byte
  std::vector<char> stage_intra, stage_net;  // by stage: has a hop inside / across nodes
  size_t edges = 0;
};

std::shared_ptr<const TreeShape> build_tree_shape(const std::vector<std::vector<Rank>>& nodes,
                                                  const std::vector<Rank>& ranks,
                                                  const Cluster& cluster) {
  auto shape = std::make_shared<TreeShape>();
  if (nodes.empty()) return shape;  // no tree: the group is not the same on every node
  const int m = static_cast<int>(nodes.size()), g = static_cast<int>(nodes.front().size());
  shape->nodes = m;
  shape->channels = m == 1 ? 1 : g;
  const auto parents = dtree_parents(m);
  int node_height = 0;
  std::array<std::vector<int>, 2> node_depth;
  for (int t = 0; t < 2; ++t)
    for (int x = 0; x < m; ++x) {
      node_depth[static_cast<size_t>(t)].push_back(depth_in(parents[static_cast<size_t>(t)], x));
      node_height = std::max(node_height, node_depth[static_cast<size_t>(t)].back());
    }
  shape->height = node_height + g - 1;

  // The edges of every channel's two trees.
  std::vector<std::vector<TreePlan::Edge>> trees;
  for (int c = 0; c < shape->channels; ++c) {
    auto at = [&](int node, int j) {
      return nodes[static_cast<size_t>(node)][static_cast<size_t>((c + j) % g)];
    };
    for (int t = 0; t < 2; ++t) {
      std::vector<TreePlan::Edge> edges;
      edges.reserve(static_cast<size_t>(m) * static_cast<size_t>(g));
      for (int x = 0; x < m; ++x) {
        const int dn = node_depth[static_cast<size_t>(t)][static_cast<size_t>(x)];
        const int up = parents[static_cast<size_t>(t)][static_cast<size_t>(x)];
        if (up >= 0) edges.push_back(TreePlan::Edge{at(up, 0), at(x, 0), dn, false});
        for (int j = 1; j < g; ++j)
          edges.push_back(TreePlan::Edge{at(x, j - 1), at(x, j), dn + j, false});
      }
      trees.push_back(std::move(edges));
    }
  }

  // Links as the SimGrid platform builds them (sim/platform.cc): a GPU's fabric link (both ways)
  // for flows inside a node, the GPU's NIC (by GPU-NIC affinity) across nodes, and on PCIe nodes
  // the GPU's link as well. Every edge carries one flow each way per chunk, all in flight at once
  // in steady state; other GPUs' groups of the same shape share the NICs, as for the ring.
  const bool pcie = cluster.gpus_on_pcie();
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
  for (const auto& edges : trees)
    for (const auto& e : edges) {
      for (const auto& l : links(e.child, e.parent)) ++flows_on[l.first];
      for (const auto& l : links(e.parent, e.child)) ++flows_on[l.first];
    }
  auto load = [&](Rank src, Rank dst) {
    double worst = 0;
    for (const auto& [id, per_byte] : links(src, dst))
      worst = std::max(worst, flows_on[id] * per_byte);
    return worst;
  };
  const auto stages = static_cast<size_t>(2 * shape->height);
  shape->stage_intra.assign(stages, 0);
  shape->stage_net.assign(stages, 0);
  for (auto& edges : trees) {
    for (auto& e : edges) {
      e.across = cluster.node_of(e.child) != cluster.node_of(e.parent);
      double& worst = e.across ? shape->net_load : shape->intra_load;
      worst = std::max({worst, load(e.child, e.parent), load(e.parent, e.child)});
      auto& has = e.across ? shape->stage_net : shape->stage_intra;
      has[static_cast<size_t>(shape->height - e.depth)] = 1;
      has[static_cast<size_t>(shape->height + e.depth - 1)] = 1;
    }
    shape->edges += edges.size();
    shape->trees.push_back(std::make_shared<const std::vector<TreePlan::Edge>>(std::move(edges)));
  }
  return shape;
}

// The shape of the tree over `ranks` on `cluster`, built once: the analytic lowering asks for
// the same group's tree at every bucket size and under every protocol, and a group of a million
// ranks has tens of millions of edges. The cache key holds everything the shape reads (the
// ranks, the node and NIC layout, the link rates); it keeps at most kCachedEdges edges.
std::shared_ptr<const TreeShape> tree_shape(const std::vector<Rank>& ranks,
                                            const Cluster& cluster) {
  struct Key {
    std::vector<Rank> ranks;
    int gpus_per_node = 0, nics = 0;
    double gpu_bw = 0, nic_bw = 0;
    bool pcie = false;
    bool operator==(const Key&) const = default;
  };
  constexpr size_t kCachedEdges = size_t{1} << 25;  // 32 M edges, 512 MiB
  thread_local std::vector<std::pair<Key, std::shared_ptr<const TreeShape>>> cache;
  Key key{ranks,
          cluster.gpus_per_node,
          cluster.nics(),
          cluster.usable_fabric_bandwidth().value(),
          cluster.usable_nic_bandwidth().value(),
          cluster.gpus_on_pcie()};
  for (size_t i = 0; i < cache.size(); ++i)
    if (cache[i].first == key) {
      auto hit = cache[i].second;
      std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                  cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return hit;
    }
  // Grouping the ranks by node is itself O(ranks): done on a miss only.
  auto shape = build_tree_shape(ranks_by_node(ranks, cluster), ranks, cluster);
  cache.insert(cache.begin(), {std::move(key), shape});
  size_t held = 0, keep = 0;
  while (keep < cache.size() && keep < 16 && held + cache[keep].second->edges <= kCachedEdges)
    held += cache[keep++].second->edges;
  cache.resize(std::max<size_t>(keep, 1));
  return shape;
}

}  // namespace

TreePlan double_binary_tree(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes,
                            CollectiveProtocol protocol, BytesPerSecond bus_cap, Bytes chunk_size) {
  TreePlan plan;
  if (ranks.size() < 2) return plan;
  const std::shared_ptr<const TreeShape> shape = tree_shape(ranks, cluster);
  if (shape->nodes == 0) return plan;
  const int m = shape->nodes;
  plan.channels = shape->channels;
  plan.height = shape->height;
  plan.trees = shape->trees;

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

  // A hop's busy time per chunk: its busiest link's load times the chunk on the wire.
  plan.intra_busy = Seconds(shape->intra_load * plan.wire_chunk.value());
  plan.net_busy = Seconds(shape->net_load * plan.wire_chunk.value());
  const Seconds intra_alpha = cluster.intra_node.latency * intra_scale;
  const Seconds net_alpha = cluster.gpu_network_latency() * net_scale;
  plan.net_alpha = net_alpha;
  plan.intra_alpha = intra_alpha;
  plan.net_route_alpha = cluster.gpu_network_latency();
  plan.intra_route_alpha = cluster.intra_node.latency;
  // Every stage runs at the pace of the busiest link of the kinds of hop it has.
  const auto stages = static_cast<size_t>(2 * plan.height);
  std::vector<Seconds> stage_alpha(stages, Seconds(0));
  plan.stage_gap.assign(stages, Seconds(0));
  for (size_t p = 0; p < stages; ++p) {
    if (shape->stage_net[p]) {
      stage_alpha[p] = std::max(stage_alpha[p], net_alpha);
      plan.stage_gap[p] = std::max(plan.stage_gap[p], plan.net_busy);
    }
    if (shape->stage_intra[p]) {
      stage_alpha[p] = std::max(stage_alpha[p], intra_alpha);
      plan.stage_gap[p] = std::max(plan.stage_gap[p], plan.intra_busy);
    }
  }
  // NCCL's cap on the tree's bus bandwidth B (algBw B / 2): the 2 S = 4 channels K c the busiest
  // link moves take at least that long, so no stage takes a chunk faster than 4 channels c / B.
  if (bus_cap.value() > 0)
    for (auto& gap : plan.stage_gap)
      gap = std::max(gap, plan.chunk * (4.0 * plan.channels) / bus_cap);
  for (size_t p = 0; p < stages; ++p) plan.stage_time.push_back(stage_alpha[p] + plan.stage_gap[p]);
  return plan;
}

namespace collectives_internal {

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
      for (const auto& e : *edges) {
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
    const auto& edges = *plan.trees[t];
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
        const auto& e = (*plan.trees[t])[k];
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

}  // namespace collectives_internal

}  // namespace dtsim
