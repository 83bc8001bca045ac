#include "core/exec/analytic_executor.h"

#include <set>
#include <unordered_map>

#include "core/base/units.h"
#include "core/collectives/collective_schedule.h"
#include "core/exec/activity_graph.h"
#include "core/hardware/network_topology.h"
#include "core/hardware/nvlink_mesh.h"

namespace dtsim {
namespace {

// Whether any communication of the Job crosses a link the closed forms treat as non-blocking
// although the network oversubscribes it: a leaf's (or rail's) uplinks, or a pod's.
struct Crossing {
  bool leaves = false, pods = false;
  bool shared_regions = false;  // traffic between a dragonfly's groups, over global links
  bool rail_relays = false;     // a collective between rails of a rail-only network
};

Crossing oversubscribed_crossings(const Job& job, const Cluster& cluster) {
  Crossing c;
  const bool leaf_limited = cluster.network.oversubscription > 1 && cluster.network_groups() > 1;
  const bool pod_limited = cluster.has_pods() && cluster.network.pod_oversubscription > 1;
  const NetworkTopology& topology = network_topology(cluster);
  const bool regions = topology.shared_link_region(cluster, 0) >= 0;
  const bool relays = topology.relays_between_rails(cluster);
  if (!leaf_limited && !pod_limited && !regions && !relays) return c;
  auto note_pair = [&](Rank a, Rank b) {
    if (cluster.node_of(a) == cluster.node_of(b)) return;
    if (regions && topology.shared_link_region(cluster, cluster.node_of(a)) !=
                       topology.shared_link_region(cluster, cluster.node_of(b)))
      c.shared_regions = true;
    if (leaf_limited && cluster.network_group(a) != cluster.network_group(b)) c.leaves = true;
    if (pod_limited && cluster.pod_of(a) != cluster.pod_of(b)) c.pods = true;
  };
  std::set<GroupId> groups;
  for (const Program& p : job.programs)
    for (const auto& stream : p.streams)
      for (const Op& op : stream.ops) {
        if (const auto* col = std::get_if<CollectiveOp>(&op.body))
          groups.insert(col->group);
        else if (const auto* send = std::get_if<SendOp>(&op.body))
          note_pair(p.rank, send->peer);
      }
  for (GroupId id : groups) {
    const auto& ranks = job.group(id).ranks;
    for (size_t i = 1; i < ranks.size(); ++i) {
      note_pair(ranks.front(), ranks[i]);
      if (relays && cluster.node_of(ranks.front()) != cluster.node_of(ranks[i]) &&
          cluster.network_group(ranks.front()) != cluster.network_group(ranks[i]))
        c.rail_relays = true;
    }
  }
  return c;
}

}  // namespace

Trace AnalyticExecutor::run(const Job& job, const Cluster& nominal, const RunOptions& options) {
  if (job.has_segments()) return run(expand_segments(job), nominal, options);
  refuse_unsupported(options, name(),
                     {Perturbation::Kind::kSlowRank, Perturbation::Kind::kRandomSlowdown,
                      Perturbation::Kind::kThrottle, Perturbation::Kind::kDegradedLink});
  refuse_uplinks_and_torus(options, nominal, name());
  const Cluster cluster = apply_perturbations(nominal, options);
  const TransientSlowdowns transient = transient_slowdowns(job, cluster, options);
  const DegradedNics degraded(options, cluster);
  const ActivityGraph graph = lower(job, cluster, options.iterations, CollectiveBody::kClosedForm,
                                    &transient, !options.perturbations.empty(), &degraded);
  Trace trace =
      trace_from_times(graph, job, finish_times_without_contention(graph, cluster), name());
  // The closed forms run every flow at its NIC's rate; an oversubscribed switch level is a
  // contention effect, which only the simgrid engine models.
  const Crossing crossing = oversubscribed_crossings(job, cluster);
  if (crossing.leaves)
    trace.notes.push_back(
        "the analytic engine does not model the network's " +
        format_number("%g", cluster.network.oversubscription) +
        ":1 oversubscription: traffic between leaf switches runs at the full NIC rate here, so "
        "communication across leaves may take longer than shown; the simgrid engine models it");
  if (crossing.pods)
    trace.notes.push_back(
        "the analytic engine does not model the " +
        format_number("%g", cluster.network.pod_oversubscription) +
        ":1 oversubscription above the pods: traffic between pods runs at the full NIC rate "
        "here; the simgrid engine models it");
  if (crossing.rail_relays)
    trace.notes.push_back(
        "the analytic engine times collectives between the rails of a rail-only network as if "
        "each hop went straight to its peer's NIC; their hops between rails relay over the "
        "fabric inside the node, whose latency and shared GPU links only the simgrid engine "
        "models");
  if (crossing.shared_regions)
    trace.notes.push_back(
        "the analytic engine does not model the dragonfly's shared local and global links: "
        "traffic between groups runs at the full NIC rate here, so communication across groups "
        "may take longer than shown; the simgrid engine routes it (" +
        std::string(kDragonflyRoutingNames.to_string(cluster.network.dragonfly.routing)) +
        " routing)");
  // On a DGX-1 cube-mesh the ring's channels follow the NVLinks; the other intra-node schedules'
  // closed forms still take the rings' bandwidth (docs/collectives.md).
  if (cluster_mesh(cluster)) {
    bool off_the_rings = false;
    for (const auto& p : job.programs)
      for (const auto& stream : p.streams)
        for (const Op& op : stream.ops)
          if (const auto* c = std::get_if<CollectiveOp>(&op.body); c && !off_the_rings) {
            const auto& ranks = job.group(c->group).ranks;
            const CollectiveAlgorithm a = resolve_algorithm(*c, ranks, cluster);
            off_the_rings = c->kind == CollectiveKind::kAllToAll ||
                            a == CollectiveAlgorithm::kTree ||
                            a == CollectiveAlgorithm::kHalvingDoubling;
          }
    if (off_the_rings)
      trace.notes.push_back(
          "the analytic engine times the double binary tree, halving-doubling and all-to-all "
          "inside a DGX-1 hybrid cube-mesh node at the bandwidth of NCCL's rings over its "
          "NVLinks; their flows between GPUs with no NVLink relay through a third GPU and share "
          "its links, which only the simgrid engine models");
  }
  return trace;
}

}  // namespace dtsim

namespace dtsim {
namespace {

// A segment's memory ops in one summary: what they add, and the highest point their running
// total reaches (the first time), with the live bytes by category there.
struct SegmentMemory {
  bool any = false;
  std::array<Bytes, kMemoryCategories> delta{}, at_high{};
  Bytes total{0}, high{0};
};

class SegmentMemories {
 public:
  const SegmentMemory& of(const SegmentOp& seg) {
    auto [it, fresh] = by_segment_.try_emplace(seg.ops.get());
    if (!fresh) return it->second;
    SegmentMemory& m = it->second;
    for (const Op& op : *seg.ops) {
      const auto* mem = std::get_if<MemoryOp>(&op.body);
      if (mem == nullptr) continue;
      m.delta[static_cast<size_t>(mem->category)] += mem->bytes;
      m.total += mem->bytes;
      if (!m.any || m.total > m.high) {
        m.high = m.total;
        m.at_high = m.delta;
      }
      m.any = true;
    }
    return m;
  }

 private:
  std::unordered_map<const std::vector<Op>*, SegmentMemory> by_segment_;
};

// The stream that holds every memory op of `p`, or -1 when they are on several (or none).
int memory_stream(const Program& p, SegmentMemories& memories) {
  int found = -1;
  for (size_t s = 0; s < p.streams.size(); ++s)
    for (const Op& op : p.streams[s].ops) {
      bool memory = std::holds_alternative<MemoryOp>(op.body);
      if (const auto* seg = std::get_if<SegmentOp>(&op.body)) memory = memories.of(*seg).any;
      if (!memory) continue;
      if (found >= 0 && found != static_cast<int>(s)) return -1;
      found = static_cast<int>(s);
      break;
    }
  return found;
}

}  // namespace

std::optional<MemoryPeak> peak_in_program_order(const Job& job) {
  SegmentMemories memories;
  std::vector<std::pair<const Program*, int>> by_rank;  // (program, its memory stream)
  for (const auto& p : job.programs) {
    const int s = memory_stream(p, memories);
    if (s < 0) return std::nullopt;
    by_rank.emplace_back(&p, s);
  }
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [](const auto& a, const auto& b) { return a.first->rank < b.first->rank; });
  // As trace_from_times() accumulates it: the first step's events in time order, which on one
  // stream is the stream's order; a rank's peak is the first time its total is highest, and the
  // worst rank the last of the largest in rank order (compute_results()). A segment adds its
  // summary: its highest point, then what it adds.
  MemoryPeak worst;
  for (const auto& [p, s] : by_rank) {
    std::array<Bytes, kMemoryCategories> live{}, at_peak{};
    Bytes total{0}, peak{0};
    for (const Op& op : p->streams[static_cast<size_t>(s)].ops) {
      if (const auto* seg = std::get_if<SegmentOp>(&op.body)) {
        const SegmentMemory& m = memories.of(*seg);
        if (!m.any) continue;
        if (total + m.high > peak) {
          peak = total + m.high;
          for (size_t c = 0; c < live.size(); ++c) at_peak[c] = live[c] + m.at_high[c];
        }
        for (size_t c = 0; c < live.size(); ++c) live[c] += m.delta[c];
        total += m.total;
        continue;
      }
      const auto* mem = std::get_if<MemoryOp>(&op.body);
      if (mem == nullptr) continue;
      live[static_cast<size_t>(mem->category)] += mem->bytes;
      total += mem->bytes;
      if (total > peak) {
        peak = total;
        at_peak = live;
      }
    }
    if (peak.value() >= worst.bytes) {
      worst.bytes = peak.value();
      for (size_t c = 0; c < at_peak.size(); ++c) worst.at_peak[c] = at_peak[c].value();
    }
  }
  return worst;
}

StepEstimate estimate_step(const Job& job, const Cluster& nominal, const RunOptions& options) {
  StepEstimate e;
  const std::optional<MemoryPeak> memory =
      options.perturbations.empty() ? peak_in_program_order(job) : std::nullopt;
  if (!memory) {
    const Trace t = AnalyticExecutor().run(job, nominal, options);
    e.step_time_s = t.makespan().value() / std::max(1, t.iterations);
    for (const auto& m : t.memory)
      if (m.peak.value() >= e.peak_bytes) {
        e.peak_bytes = m.peak.value();
        for (size_t c = 0; c < m.at_peak.size(); ++c) e.at_peak[c] = m.at_peak[c].value();
      }
    return e;
  }
  e.peak_bytes = memory->bytes;
  e.at_peak = memory->at_peak;
  refuse_uplinks_and_torus(options, nominal, "analytic");
  const Cluster cluster = apply_perturbations(nominal, options);
  const ActivityGraph graph = lower(job, cluster, options.iterations, CollectiveBody::kClosedForm);
  const std::vector<double> finish = finish_times_without_contention(graph, cluster);
  double makespan = 0;
  for (const OpInstance& inst : graph.ops)
    makespan = std::max(makespan, finish[static_cast<size_t>(inst.end)]);
  e.step_time_s = makespan / std::max(1, options.iterations);
  return e;
}

}  // namespace dtsim
