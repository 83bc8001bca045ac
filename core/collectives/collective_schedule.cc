// decompose(): a collective as the flows of the algorithm it resolves to (resolve_collective,
// algorithm_choice.cc), NCCL's per-call latency before them (prepend_delay). decompose_flows lays
// out the flows of every algorithm from the plans and parts of the other files: NVLS, NVLS-tree
// (beside its rails' trees), PAT and CollNet (nvls_collnet_pat.cc), the tree (tree.cc),
// halving-doubling (phased.cc), the torus all-reduce (torus_schedule.cc), the hierarchical
// all-reduce, the ring (ring.cc), the broadcast and reduce chains and all-to-all's pairwise
// exchange. Also chunk_flow_count: how many flows chunk fidelity would emit, without building them.
#include "core/collectives/collective_schedule.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "core/collectives/cost_model.h"
#include "core/collectives/internal/schedule_parts.h"
#include "core/collectives/nccl_model.h"

namespace dtsim {

using collectives_internal::halving_doubling;
using collectives_internal::node_ring_orders;
using collectives_internal::PhasedBuilder;
using collectives_internal::ring_bulk;
using collectives_internal::ring_steps;
using collectives_internal::torus_all_reduce;
using collectives_internal::tree_flows;

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

// The ring family's link and what the protocol does on it (protocol_effect): bytes inflated by
// beta over the protocol's bandwidth (its factor, and NCCL's cap), and latency added per step,
// once at the end (exact on a contention-free network).
struct ProtocolTerms {
  LinkCost link;
  double inflate = 1;
  double latency_scale = 1;
  Seconds protocol_latency(int steps) const { return link.alpha * (steps * (latency_scale - 1.0)); }
};

ProtocolTerms protocol_terms(const std::vector<Rank>& ranks, const Cluster& cluster,
                             const ResolvedCollective& resolved) {
  ProtocolTerms t;
  t.link = ring_link(ranks, cluster);
  const ProtocolEffect effect = protocol_effect(
      resolved.protocol, ranks_by_node(ranks, cluster).size() != 1, cluster.gpus_on_pcie());
  BytesPerSecond protocol_beta = t.link.beta * effect.bandwidth_factor;
  if (resolved.bandwidth_cap.value() > 0)
    protocol_beta = std::min(protocol_beta, resolved.bandwidth_cap);
  t.inflate = t.link.beta / protocol_beta;
  t.latency_scale = effect.latency_scale;
  return t;
}

// NVLS: up and down flows for every GPU at once, then the second half-hop of latency.
CollectiveSchedule nvls_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                              const Cluster& cluster) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
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

// NVLS-tree: the in-node NVLS part beside the rails' trees.
CollectiveSchedule nvls_tree_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                   const Cluster& cluster, Fidelity fidelity,
                                   const ResolvedCollective& resolved) {
  CollectiveSchedule s;
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

// PAT: one exchange per step (PatPlan); each flow already carries its route's latency, so the
// steps' own latency and the call's come after as the rest of the closed form.
CollectiveSchedule pat_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                             const Cluster& cluster, Fidelity fidelity) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
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

// CollNet: every GPU pair of a node, and every GPU to its rail's next node, at once
// (CollNetPlan); the rest of NCCL's latency after them.
CollectiveSchedule collnet_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                 const Cluster& cluster) {
  CollectiveSchedule s;
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

// The hierarchical all-reduce on a switched network: rings inside the nodes, rings across them
// on each rail, rings inside the nodes again.
CollectiveSchedule hierarchical_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const Cluster& cluster, Fidelity fidelity) {
  CollectiveSchedule s;
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

// The ring family (all-reduce, all-gather, reduce-scatter, barrier): chunked steps or bulk flows
// per channel, with the rest of the closed form as latency.
CollectiveSchedule ring_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                              const Cluster& cluster, Fidelity fidelity, bool merge_pairs,
                              const ResolvedCollective& resolved, const ProtocolTerms& terms) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  const LinkCost& link = terms.link;
  const double inflate = terms.inflate;
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
  const Seconds raw_path = ring_path_latency(ranks, s.steps, cluster, CollectiveProtocol::kAuto);
  const Seconds path = ring_path_latency(ranks, s.steps, cluster, resolved.protocol);
  for (const auto& order : channels) {
    if (fidelity == Fidelity::kChunk)
      ring_steps(order, s.steps, per_channel / static_cast<double>(n), period, cluster, s.flows);
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

// Broadcast and reduce: a chain from the root (broadcast) or to the root (reduce), perfectly
// pipelined: every link carries S at once, and the pipeline fill costs (N-2) extra hop latencies.
CollectiveSchedule chain_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                               const Cluster& cluster, const ProtocolTerms& terms) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  const double inflate = terms.inflate;
  s.steps = n - 1;
  const auto chains = chain_channels(ranks, op.root, op.kind == CollectiveKind::kReduce, cluster);
  s.channels = static_cast<int>(chains.size());
  for (const auto& chain : chains)
    for (int i = 0; i + 1 < n; ++i)
      s.flows.push_back(Flow::between(chain[static_cast<size_t>(i)],
                                      chain[static_cast<size_t>(i + 1)],
                                      op.bytes * inflate / static_cast<double>(chains.size())));
  s.trailing_latency =
      terms.link.alpha * static_cast<double>(n - 2) + terms.protocol_latency(s.steps);
  return s;
}

// All-to-all by pairwise exchange: in step k rank i sends its block for rank i+k.
CollectiveSchedule all_to_all_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                    Fidelity fidelity, bool merge_pairs,
                                    const ProtocolTerms& terms) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  const double inflate = terms.inflate;
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
    s.trailing_latency = terms.link.alpha * static_cast<double>(n - 2);
    if (merge_pairs) merge_parallel_flows(s.flows);
  }
  s.trailing_latency += terms.protocol_latency(s.steps);
  return s;
}

CollectiveSchedule decompose_flows(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                   const Cluster& cluster, Fidelity fidelity, bool merge_pairs,
                                   const ResolvedCollective& resolved) {
  switch (resolved.algorithm) {
    case CollectiveAlgorithm::kNvls:
      return nvls_flows(op, ranks, cluster);
    case CollectiveAlgorithm::kNvlsTree:
      return nvls_tree_flows(op, ranks, cluster, fidelity, resolved);
    case CollectiveAlgorithm::kPat:
      return pat_flows(op, ranks, cluster, fidelity);
    case CollectiveAlgorithm::kCollNet:
      return collnet_flows(op, ranks, cluster);
    case CollectiveAlgorithm::kTree: {
      // Not on PCIe nodes, where a GPU's link carries both its chain flows and its network
      // flows: there the merged chain flows would take fewer shares of the link than the flows
      // they replace.
      CollectiveSchedule s;
      tree_flows(
          double_binary_tree(ranks, cluster, op.bytes, resolved.protocol, resolved.bandwidth_cap),
          fidelity, merge_pairs && !cluster.gpus_on_pcie(), s);
      return s;
    }
    case CollectiveAlgorithm::kHalvingDoubling: {
      CollectiveSchedule s;
      PhasedBuilder b(s.flows, fidelity);
      halving_doubling(ranks, op.bytes, ring_link(ranks, cluster).alpha, b);
      return s;
    }
    case CollectiveAlgorithm::kHierarchical: {
      if (const auto plan = torus_all_reduce_plan(ranks, cluster)) {
        CollectiveSchedule s;
        PhasedBuilder b(s.flows, fidelity);
        torus_all_reduce(*plan, op.bytes, cluster, b, s.flows, fidelity);
        return s;
      }
      return hierarchical_flows(op, ranks, cluster, fidelity);
    }
    default:
      break;
  }
  const ProtocolTerms terms = protocol_terms(ranks, cluster, resolved);
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBarrier:
      return ring_flows(op, ranks, cluster, fidelity, merge_pairs, resolved, terms);
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return chain_flows(op, ranks, cluster, terms);
    case CollectiveKind::kAllToAll:
      return all_to_all_flows(op, ranks, fidelity, merge_pairs, terms);
  }
  return {};
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
