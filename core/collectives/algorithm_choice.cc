// What a collective runs as: the protocols' effect on a ring (protocol_effect), where NVLS runs and
// how well (nvls_supported, nvls_efficiency), the system NCCL's model sees and its protocols'
// latencies and bandwidth caps, the candidates algorithm auto times and the fastest of them
// (auto_candidates, fastest_auto, the torus all-reduce on a torus), and the resolvers built on them
// (resolve_collective, resolve_algorithm), with NCCL's own pick beside them
// (nccl_reference_choice).
#include <cmath>
#include <optional>
#include <vector>

#include "core/base/error.h"
#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/internal/schedule_parts.h"
#include "core/collectives/nccl_model.h"

namespace dtsim {

using collectives_internal::nccl_protocol;

bool nvls_supported(const Cluster& cluster) {
  // NVLS is NCCL's use of NVSwitch multicast: not there when NCCL does not run the collectives.
  return nccl_runs_collectives(cluster) && (cluster.intra_node.name == "nvswitch-nvlink4" ||
                                            cluster.intra_node.name == "nvswitch-nvlink5");
}

// NVLS for a group laid out as `nodes` (ranks_by_node): NCCL turns it off where a node holds one
// GPU of the communicator (NVIDIA/nccl src/transport/nvls.cc, ncclNvlsInit: gpuCount < 2), since
// multicast through one GPU's switch port reduces nothing.
namespace {
bool nvls_for(const std::vector<std::vector<Rank>>& nodes, const Cluster& cluster) {
  return nvls_supported(cluster) && !nodes.empty() && nodes.front().size() >= 2;
}
}  // namespace

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

namespace collectives_internal {

NcclProtocol nccl_protocol(CollectiveProtocol p) {
  return p == CollectiveProtocol::kLL      ? NcclProtocol::kLL
         : p == CollectiveProtocol::kLL128 ? NcclProtocol::kLL128
                                           : NcclProtocol::kSimple;
}

}  // namespace collectives_internal

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
  if (nvls_for(nodes, cluster) && nodes.size() > 1) {
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
  if (nvls_for(nodes, cluster) && nodes.size() == 1)
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
      return nvls_for(ranks_by_node(ranks, cluster), cluster) &&
                     ranks_by_node(ranks, cluster).size() > 1
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

}  // namespace dtsim
