#include "core/exec/analytic_executor.h"

#include <set>

#include "core/base/units.h"
#include "core/collectives/collective_schedule.h"
#include "core/exec/activity_graph.h"
#include "core/hardware/nvlink_mesh.h"

namespace dtsim {
namespace {

// Whether any communication of the Job crosses a link the closed forms treat as non-blocking
// although the network oversubscribes it: a leaf's (or rail's) uplinks, or a pod's.
struct Crossing {
  bool leaves = false, pods = false;
  bool dragonfly_groups = false;  // traffic between groups of a dragonfly, over global links
  bool rail_relays = false;       // a collective between rails of a rail-only network
};

Crossing oversubscribed_crossings(const Job& job, const Cluster& cluster) {
  Crossing c;
  const bool leaf_limited = cluster.network.oversubscription > 1 && cluster.network_groups() > 1;
  const bool pod_limited = cluster.has_pods() && cluster.network.pod_oversubscription > 1;
  const int dragonfly_group_nodes =
      cluster.is_dragonfly() ? cluster.network.dragonfly.nodes_per_group() : 0;
  if (!leaf_limited && !pod_limited && dragonfly_group_nodes == 0 && !cluster.is_rail_only())
    return c;
  auto note_pair = [&](Rank a, Rank b) {
    if (cluster.node_of(a) == cluster.node_of(b)) return;
    if (dragonfly_group_nodes > 0 &&
        cluster.node_of(a) / dragonfly_group_nodes != cluster.node_of(b) / dragonfly_group_nodes)
      c.dragonfly_groups = true;
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
      if (cluster.is_rail_only() && cluster.node_of(ranks.front()) != cluster.node_of(ranks[i]) &&
          cluster.network_group(ranks.front()) != cluster.network_group(ranks[i]))
        c.rail_relays = true;
    }
  }
  return c;
}

}  // namespace

Trace AnalyticExecutor::run(const Job& job, const Cluster& nominal, const RunOptions& options) {
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
  if (crossing.dragonfly_groups)
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
