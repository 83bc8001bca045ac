#include "core/collective_schedule.h"

#include <algorithm>
#include <map>

#include "core/cost_model.h"

namespace dtsim {

std::vector<std::vector<Rank>> ring_channels(const std::vector<Rank>& ranks, const ClusterConfig& cluster) {
  // Ranks grouped by node, nodes in order of first appearance.
  std::vector<int> node_order;
  std::map<int, std::vector<Rank>> by_node;
  for (Rank r : ranks) {
    int n = node_of(r, cluster);
    if (!by_node.count(n)) node_order.push_back(n);
    by_node[n].push_back(r);
  }
  if (node_order.size() <= 1) return {ranks};
  size_t per_node = ranks.size();
  for (const auto& [n, rs] : by_node) per_node = std::min(per_node, rs.size());
  bool uniform = true;
  for (const auto& [n, rs] : by_node) uniform = uniform && rs.size() == per_node;
  if (!uniform) return {ranks};  // irregular groups: one ring in rank order
  const int g = static_cast<int>(per_node);
  std::vector<std::vector<Rank>> channels;
  for (int c = 0; c < g; ++c) {
    std::vector<Rank> order;
    for (size_t k = 0; k < node_order.size(); ++k) {
      const auto& local = by_node[node_order[k]];
      const int entry = ((c - static_cast<int>(k)) % g + g) % g;
      for (int j = 0; j < g; ++j) order.push_back(local[static_cast<size_t>((entry + j) % g)]);
    }
    channels.push_back(std::move(order));
  }
  return channels;
}

namespace {

// Appends a ring pass of `steps` steps over `order`, each flow carrying `segment` bytes.
void ring_steps(const std::vector<Rank>& order, int steps, Bytes segment, std::vector<Flow>& flows) {
  const int n = static_cast<int>(order.size());
  const int base = static_cast<int>(flows.size());
  auto index = [&](int step, int i) { return base + step * n + i; };
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < n; ++i) {
      Flow f{order[static_cast<size_t>(i)], order[static_cast<size_t>((i + 1) % n)], segment, {}};
      if (k > 0) {
        f.after.push_back(index(k - 1, (i - 1 + n) % n));  // the segment it forwards arrived
        f.after.push_back(index(k - 1, i));                // its previous send is done
      }
      flows.push_back(std::move(f));
    }
  }
}

// One bulk flow per ring edge with everything that edge moves.
void ring_bulk(const std::vector<Rank>& order, Bytes per_edge, std::vector<Flow>& flows) {
  const size_t n = order.size();
  for (size_t i = 0; i < n; ++i) flows.push_back(Flow{order[i], order[(i + 1) % n], per_edge, {}});
}

// Merges independent flows between the same pair into one carrying their sum. The channels of a
// multi-node ring reuse most intra-node GPU pairs, so this cuts the flows of a collective-level
// all-reduce from channels x N to about 2N. It is exact under max-min sharing: flows on one
// route split its bandwidth equally, and the merged flow ends when the last of them would.
void merge_parallel_flows(std::vector<Flow>& flows) {
  std::map<std::pair<Rank, Rank>, size_t> first;
  std::vector<Flow> merged;
  for (auto& f : flows) {
    auto [it, inserted] = first.emplace(std::make_pair(f.src, f.dst), merged.size());
    if (inserted)
      merged.push_back(std::move(f));
    else
      merged[it->second].bytes += f.bytes;
  }
  flows = std::move(merged);
}

}  // namespace

double chunk_flow_count(const CollectiveOp& op, const std::vector<Rank>& ranks, const ClusterConfig& cluster) {
  const double n = static_cast<double>(ranks.size());
  if (n <= 1) return 0;
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBarrier:
      return 2 * (n - 1) * n * static_cast<double>(ring_channels(ranks, cluster).size());
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return (n - 1) * n * static_cast<double>(ring_channels(ranks, cluster).size());
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: return n - 1;
    case CollectiveKind::kAllToAll: return (n - 1) * n;
  }
  return 0;
}

CollectiveSchedule decompose(const CollectiveOp& op, const std::vector<Rank>& ranks,
                             const ClusterConfig& cluster, Fidelity fidelity) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return s;
  const Seconds alpha = ring_link(ranks, cluster).alpha;
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBarrier: {
      const bool all_reduce = op.kind == CollectiveKind::kAllReduce || op.kind == CollectiveKind::kBarrier;
      s.steps = all_reduce ? 2 * (n - 1) : n - 1;
      const Bytes total = op.kind == CollectiveKind::kBarrier ? Bytes(0) : op.bytes;
      const auto channels = ring_channels(ranks, cluster);
      s.channels = static_cast<int>(channels.size());
      const Bytes per_channel = total / static_cast<double>(channels.size());
      for (const auto& order : channels) {
        if (fidelity == Fidelity::kChunk)
          ring_steps(order, s.steps, per_channel / static_cast<double>(n), s.flows);
        else
          ring_bulk(order, per_channel * (static_cast<double>(s.steps) / n), s.flows);
      }
      if (fidelity == Fidelity::kCollective) {
        s.trailing_latency = alpha * static_cast<double>(s.steps - 1);
        merge_parallel_flows(s.flows);
      }
      return s;
    }
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      // A chain from the root (broadcast) or to the root (reduce), perfectly pipelined: every link
      // carries S at once, and the pipeline fill costs (N-2) extra hop latencies.
      s.steps = n - 1;
      std::vector<Rank> chain = ranks;
      auto root = std::find(chain.begin(), chain.end(), op.root);
      if (root != chain.end()) std::rotate(chain.begin(), root, chain.end());
      if (op.kind == CollectiveKind::kReduce) std::reverse(chain.begin(), chain.end());
      for (int i = 0; i + 1 < n; ++i)
        s.flows.push_back(Flow{chain[static_cast<size_t>(i)], chain[static_cast<size_t>(i + 1)], op.bytes, {}});
      s.trailing_latency = alpha * static_cast<double>(n - 2);
      return s;
    }
    case CollectiveKind::kAllToAll: {
      // Pairwise exchange: in step k rank i sends its block for rank i+k.
      s.steps = n - 1;
      const Bytes block = op.bytes / static_cast<double>(n);
      if (fidelity == Fidelity::kChunk) {
        for (int k = 1; k < n; ++k) {
          for (int i = 0; i < n; ++i) {
            Flow f{ranks[static_cast<size_t>(i)], ranks[static_cast<size_t>((i + k) % n)], block, {}};
            if (k > 1) {
              const int prev = (k - 2) * n;
              f.after.push_back(prev + i);                          // its previous send
              f.after.push_back(prev + ((i - (k - 1)) % n + n) % n);  // its previous receive
            }
            s.flows.push_back(std::move(f));
          }
        }
      } else {
        for (int i = 0; i < n; ++i)
          for (int k = 1; k < n; ++k)
            s.flows.push_back(Flow{ranks[static_cast<size_t>(i)], ranks[static_cast<size_t>((i + k) % n)], block, {}});
        s.trailing_latency = alpha * static_cast<double>(n - 2);
        merge_parallel_flows(s.flows);
      }
      return s;
    }
  }
  return s;
}

}  // namespace dtsim
