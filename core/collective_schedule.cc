#include "core/collective_schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/nccl_model.h"
#include "core/torus.h"

namespace dtsim {

std::vector<std::vector<Rank>> ring_channels(const std::vector<Rank>& ranks,
                                             const ClusterConfig& cluster) {
  const auto nodes = ranks_by_node(ranks, cluster);
  if (nodes.size() <= 1) return {ranks};  // one node, or irregular groups: one ring in rank order
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

// Appends a ring pass of `steps` steps over `order`, each flow carrying `segment` bytes.
void ring_steps(const std::vector<Rank>& order, int steps, Bytes segment,
                std::vector<Flow>& flows) {
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
            Flow f{order[static_cast<size_t>(i)],
                   order[static_cast<size_t>((i + 1) % n)],
                   segment,
                   {},
                   Seconds(0)};
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
      Flow f{src, dst, bytes, {}, Seconds(0)};
      // Chunk fidelity: a rank's step waits for its own previous send and receive.
      for (int prev : barrier_) {
        const Flow& p = flows_[static_cast<size_t>(prev)];
        if (p.is_delay() || p.src == src || p.dst == src) f.after.push_back(prev);
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
      flows_.push_back(Flow{pair.first, pair.second, merged[pair], barrier_, Seconds(0)});
    }
    if (extra_latency.value() > 0) {
      flows_.push_back(Flow{-1, -1, Bytes(0), now, extra_latency});
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
void torus_all_reduce(const TorusAllReducePlan& plan, Bytes s, const ClusterConfig& cluster,
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
                                                        const ClusterConfig& cluster) {
  const auto& dims = cluster.network.torus_dims;
  if (cluster.network.topology != Topology::kTorus || dims.empty()) return std::nullopt;
  TorusAllReducePlan plan;
  plan.nodes = ranks_by_node(ranks, cluster);
  if (plan.nodes.size() < 2) return std::nullopt;
  std::vector<std::vector<int>> coords;
  for (const auto& node : plan.nodes) {
    const int n = node_of(node.front(), cluster);
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
                                             const ClusterConfig& cluster) {
  std::vector<int> node_order;
  std::map<int, std::vector<Rank>> by_node;
  for (Rank r : ranks) {
    const int n = node_of(r, cluster);
    if (!by_node.count(n)) node_order.push_back(n);
    by_node[n].push_back(r);
  }
  std::vector<std::vector<Rank>> out;
  for (int n : node_order) {
    if (by_node[n].size() != by_node[node_order.front()].size()) return {};
    out.push_back(by_node[n]);
  }
  return out;
}

bool nvls_supported(const ClusterConfig& cluster) {
  return cluster.intra_node.name == "nvswitch-nvlink4" ||
         cluster.intra_node.name == "nvswitch-nvlink5";
}

double nvls_efficiency(const ClusterConfig& cluster) {
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
// On a torus (no NCCL there: TPU-style pods), the torus all-reduce when its closed form beats the
// ring's, else the ring; nullopt off a torus or where the torus all-reduce does not apply.
std::optional<ResolvedCollective> torus_auto(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                             const ClusterConfig& cluster) {
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

// NCCL's choice restricted to what dtsim builds; nullopt where the model does not apply.
std::optional<ResolvedCollective> nccl_auto(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                            const ClusterConfig& cluster) {
  if (auto torus = torus_auto(op, ranks, cluster)) return torus;
  if (op.kind != CollectiveKind::kAllReduce || ranks.size() < 2) return std::nullopt;
  const auto nodes = ranks_by_node(ranks, cluster);
  if (nodes.empty()) return std::nullopt;
  const bool whole_nodes =
      nodes.size() == 1 || static_cast<int>(nodes.front().size()) == cluster.gpus_per_node;
  if (!whole_nodes) return std::nullopt;
  NcclSystem system;
  try {
    system = nccl_system(cluster, static_cast<int>(ranks.size()));
  } catch (const InputError&) {
    return std::nullopt;
  }
  std::optional<NcclEstimate> best;
  for (const auto& e : nccl_all_reduce_estimates(system, op.bytes.value())) {
    const bool built = e.algorithm == NcclAlgorithm::kRing ||
                       (e.algorithm == NcclAlgorithm::kNvls && nodes.size() == 1);
    if (built && (!best || e.time_us < best->time_us)) best = e;
  }
  if (!best) return std::nullopt;
  const CollectiveProtocol protocol = best->protocol == NcclProtocol::kLL ? CollectiveProtocol::kLL
                                      : best->protocol == NcclProtocol::kLL128
                                          ? CollectiveProtocol::kLL128
                                          : CollectiveProtocol::kSimple;
  return ResolvedCollective{best->algorithm == NcclAlgorithm::kNvls ? CollectiveAlgorithm::kNvls
                                                                    : CollectiveAlgorithm::kRing,
                            protocol};
}
}  // namespace

ResolvedCollective resolve_collective(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const ClusterConfig& cluster) {
  if (op.algorithm == CollectiveAlgorithm::kAuto && op.protocol == CollectiveProtocol::kAuto)
    if (auto chosen = nccl_auto(op, ranks, cluster)) return *chosen;
  ResolvedCollective r{resolve_algorithm(op, ranks, cluster), op.protocol};
  // Protocols shape the ring only; the other algorithms keep their own closed forms.
  if (r.algorithm != CollectiveAlgorithm::kRing) r.protocol = CollectiveProtocol::kAuto;
  return r;
}

CollectiveAlgorithm resolve_algorithm(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const ClusterConfig& cluster) {
  if (op.algorithm == CollectiveAlgorithm::kAuto && op.protocol == CollectiveProtocol::kAuto)
    if (auto chosen = nccl_auto(op, ranks, cluster)) return chosen->algorithm;
  if (op.kind != CollectiveKind::kAllReduce) return CollectiveAlgorithm::kRing;
  switch (op.algorithm) {
    case CollectiveAlgorithm::kHalvingDoubling:
      return op.algorithm;
    case CollectiveAlgorithm::kNvls:
      return nvls_supported(cluster) && ranks_by_node(ranks, cluster).size() == 1
                 ? op.algorithm
                 : CollectiveAlgorithm::kRing;
    case CollectiveAlgorithm::kHierarchical: {
      const auto nodes = ranks_by_node(ranks, cluster);
      return nodes.size() > 1 ? op.algorithm : CollectiveAlgorithm::kRing;
    }
    default:
      return CollectiveAlgorithm::kRing;
  }
}

double chunk_flow_count(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const ClusterConfig& cluster) {
  const double n = static_cast<double>(ranks.size());
  if (n <= 1) return 0;
  const CollectiveAlgorithm algorithm = resolve_algorithm(op, ranks, cluster);
  if (algorithm == CollectiveAlgorithm::kNvls) return 2 * n;
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
      return n - 1;
    case CollectiveKind::kAllToAll:
      return (n - 1) * n;
  }
  return 0;
}

CollectiveSchedule decompose(const CollectiveOp& op, const std::vector<Rank>& ranks,
                             const ClusterConfig& cluster, Fidelity fidelity) {
  CollectiveSchedule s;
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return s;
  const Seconds alpha = ring_link(ranks, cluster).alpha;
  const ResolvedCollective resolved = resolve_collective(op, ranks, cluster);
  const CollectiveAlgorithm algorithm = resolved.algorithm;
  // Ring family: the protocol inflates bytes by 1 / bandwidth factor and adds latency per step,
  // which is added once at the end (exact on a contention-free network).
  const ProtocolEffect effect =
      protocol_effect(resolved.protocol, ranks_by_node(ranks, cluster).size() != 1,
                      cluster.intra_node.kind == FabricKind::kPcie);
  const double inflate = 1.0 / effect.bandwidth_factor;
  auto protocol_latency = [&](int steps) { return alpha * (steps * (effect.latency_scale - 1.0)); };
  if (algorithm == CollectiveAlgorithm::kNvls) {
    // Up and down flows for every GPU at once, then the second half-hop of latency.
    const Rank sw = switch_of_node(node_of(ranks.front(), cluster));
    const Bytes per_link = op.bytes * ((1.0 + 1.0 / n) / nvls_efficiency(cluster));
    std::vector<int> all;
    for (Rank r : ranks) {
      all.push_back(static_cast<int>(s.flows.size()));
      s.flows.push_back(Flow{r, sw, per_link, {}, Seconds(0)});
      all.push_back(static_cast<int>(s.flows.size()));
      s.flows.push_back(Flow{sw, r, per_link, {}, Seconds(0)});
    }
    s.flows.push_back(Flow{-1, -1, Bytes(0), all, cluster.intra_node.latency / 2.0});
    s.steps = 1;
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
    if (g > 1) b.rings(nodes, static_cast<int>(g - 1), op.bytes / gd, intra_alpha);
    b.rings(rails, static_cast<int>(2 * (m - 1)), op.bytes / gd / md, inter_alpha);
    if (g > 1) b.rings(nodes, static_cast<int>(g - 1), op.bytes / gd, intra_alpha);
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
      s.trailing_latency += protocol_latency(s.steps);
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
        s.flows.push_back(Flow{chain[static_cast<size_t>(i)],
                               chain[static_cast<size_t>(i + 1)],
                               op.bytes * inflate,
                               {}});
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
            Flow f{
                ranks[static_cast<size_t>(i)], ranks[static_cast<size_t>((i + k) % n)], block, {}};
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
            s.flows.push_back(Flow{
                ranks[static_cast<size_t>(i)], ranks[static_cast<size_t>((i + k) % n)], block, {}});
        s.trailing_latency = alpha * static_cast<double>(n - 2);
        merge_parallel_flows(s.flows);
      }
      s.trailing_latency += protocol_latency(s.steps);
      return s;
    }
  }
  return s;
}

}  // namespace dtsim
