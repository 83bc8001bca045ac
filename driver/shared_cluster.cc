#include "driver/shared_cluster.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/base/units.h"
#include "core/hardware/network_topology.h"

namespace dtsim::driver {

namespace {

const char* kKey = "background.scenario";

InputError refuse(const Scenario& sc, const std::string& message) {
  const auto it = sc.entries.find(kKey);
  return InputError(Diagnostic{
      it != sc.entries.end() ? it->second.where : SourceLocation{sc.file, 0, 0}, kKey, message});
}

std::string text_of(const Scenario& sc, const std::string& key, const std::string& fallback) {
  const auto it = sc.entries.find(key);
  if (it == sc.entries.end()) return fallback;
  const auto* s = std::get_if<std::string>(&it->second.value);
  return s ? *s : fallback;
}

// The first cluster figure in which the other scenario differs from this one, or "".
std::string hardware_difference(const ClusterConfig& a, const ClusterConfig& b) {
  const auto& x = a.network;
  const auto& y = b.network;
  const std::vector<std::pair<const char*, bool>> same{
      {"cluster.gpu", a.gpu.name == b.gpu.name && a.gpu_overridden == b.gpu_overridden},
      {"cluster.gpus_per_node", a.gpus_per_node == b.gpus_per_node},
      {"cluster.intra_node", a.intra_node.name == b.intra_node.name &&
                                 a.intra_node_overridden == b.intra_node_overridden},
      {"cluster.profile", a.profile == b.profile},
      {"cluster.network.kind", x.kind == y.kind},
      {"cluster.network.topology", x.topology == y.topology},
      {"cluster.network.nic_bandwidth", x.nic_bandwidth.value() == y.nic_bandwidth.value()},
      {"cluster.network.nics_per_node", x.nics_per_node == y.nics_per_node},
      {"cluster.network.latency", x.latency.value() == y.latency.value()},
      {"cluster.network.protocol_efficiency", x.protocol_efficiency == y.protocol_efficiency},
      {"cluster.network.oversubscription", x.oversubscription == y.oversubscription},
      {"cluster.network.nodes_per_leaf", x.nodes_per_leaf == y.nodes_per_leaf},
      {"cluster.network.levels", x.levels == y.levels},
      {"cluster.network.leaves_per_pod", x.leaves_per_pod == y.leaves_per_pod},
      {"cluster.network.pod_oversubscription", x.pod_oversubscription == y.pod_oversubscription},
      {"background.link_fraction", x.background_fraction == y.background_fraction}};
  for (const auto& [key, equal] : same)
    if (!equal) return key;
  return "";
}

// Combined node of each node of a job of `own` nodes next to one of `other` nodes.
std::vector<int> placement(int own, int other, bool interleaved, bool first) {
  std::vector<int> at;
  if (!interleaved) {
    for (int n = 0; n < own; ++n) at.push_back(first ? n : other + n);
    return at;
  }
  // Alternate while both have nodes left (the first job first), then the rest in order.
  const int both = std::min(own, other);
  for (int n = 0; n < own; ++n)
    at.push_back(n < both ? 2 * n + (first ? 0 : 1) : 2 * both + (n - both));
  return at;
}

struct RankMap {
  std::vector<int> node;  // job node -> combined node
  int gpus_per_node = 1;
  Rank operator()(Rank r) const {
    return node[static_cast<size_t>(r / gpus_per_node)] * gpus_per_node + r % gpus_per_node;
  }
};

// Appends `job`'s programs and groups to `into`, with ranks renumbered and group ids shifted.
void append_job(const Job& job, const RankMap& map, Job& into) {
  const auto shift = static_cast<GroupId>(into.groups.size());
  for (Group g : job.groups) {
    g.id += shift;
    for (Rank& r : g.ranks) r = map(r);
    into.groups.push_back(std::move(g));
  }
  for (Program p : job.programs) {
    p.rank = map(p.rank);
    for (Stream& st : p.streams)
      for (Op& op : st.ops) {
        if (auto* c = std::get_if<CollectiveOp>(&op.body)) {
          c->group += shift;
          c->root = map(c->root);
        } else if (auto* s = std::get_if<SendOp>(&op.body)) {
          s->peer = map(s->peer);
        } else if (auto* r = std::get_if<RecvOp>(&op.body)) {
          r->peer = map(r->peer);
        }
      }
    into.programs.push_back(std::move(p));
  }
}

// The spans of the shared run on `job`'s ranks, renumbered back to the job's own ranks.
Trace own_trace(const Trace& shared, const Job& job, const RankMap& map) {
  std::map<Rank, Rank> own;
  for (const Group& g : job.groups)
    for (Rank r : g.ranks) own[map(r)] = r;
  for (const Program& p : job.programs) own[map(p.rank)] = p.rank;
  Trace t;
  t.engine = shared.engine;
  t.iterations = shared.iterations;
  t.notes = shared.notes;
  t.iteration_end.assign(shared.iteration_end.size(), Seconds(0));
  auto keep = [&](const std::vector<Span>& from, std::vector<Span>& to, bool ends) {
    for (Span s : from) {
      const auto it = own.find(s.rank);
      if (it == own.end()) continue;
      s.rank = it->second;
      if (ends) {
        Seconds& end = t.iteration_end[static_cast<size_t>(s.iteration)];
        end = std::max(end, s.end);
      }
      to.push_back(s);
    }
  };
  keep(shared.spans, t.spans, true);
  keep(shared.straggler_waits, t.straggler_waits, false);
  for (RankMemory m : shared.memory)
    if (const auto it = own.find(m.rank); it != own.end()) {
      m.rank = it->second;
      t.memory.push_back(m);
    }
  for (size_t i = 1; i < t.iteration_end.size(); ++i)
    t.iteration_end[i] = std::max(t.iteration_end[i], t.iteration_end[i - 1]);
  return t;
}

}  // namespace

std::optional<SharedRun> run_with_background_job(const Plan& plan, Executor& engine,
                                                 const RunOptions& options,
                                                 double max_memory_bytes) {
  const Scenario& sc = plan.scenario;
  const std::string given = text_of(sc, kKey, "");
  if (given.empty() || given == "none") return std::nullopt;
  if (engine.name() != "simgrid")
    throw refuse(sc, "the " + engine.name() +
                         " engine does not simulate two jobs on one platform; use the simgrid "
                         "engine (--engine simgrid), or give the other job's share of each "
                         "network link as background.link_fraction");
  std::filesystem::path path(given);
  const auto where = sc.entries.at(kKey).where;
  if (path.is_relative() && where.file != "--set")
    path = std::filesystem::path(sc.file).parent_path() / path;
  const std::string shown = path.lexically_normal().string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw refuse(sc, "no scenario file at " + shown);
  Scenario other = load(shown);
  if (other.entries.count(kKey) || other.cluster.network.background_fraction > 0)
    throw refuse(sc, shown +
                         " has a background section of its own; the second job's "
                         "scenario must describe that job alone");
  if (const std::string key = hardware_difference(sc.cluster, other.cluster); !key.empty())
    throw refuse(sc, shown + " sets " + key +
                         " differently from this scenario; the two jobs share one cluster, so "
                         "their cluster sections must describe the same hardware (only nodes may "
                         "differ)");
  if (network_topology(sc.cluster).fixes_node_count())
    throw refuse(sc, "a second job on a " + std::string(to_string(sc.cluster.network.topology)) +
                         " is not supported yet (its dimensions fix the node count); use a "
                         "fat-tree, rail-optimized or star network");
  if (!options.perturbations.empty() || !other.stragglers.entries.empty())
    throw refuse(sc,
                 "stragglers together with a second job are not supported yet; remove the "
                 "stragglers section of either scenario");
  const Plan second = plan_scenario(std::move(other), max_memory_bytes);

  const bool interleaved = text_of(sc, "background.placement", "after") == "interleaved";
  const int own_nodes = sc.cluster.nodes, other_nodes = second.scenario.cluster.nodes;
  const int gpn = sc.cluster.gpus_per_node;
  const RankMap own_map{placement(own_nodes, other_nodes, interleaved, true), gpn};
  const RankMap other_map{placement(other_nodes, own_nodes, interleaved, false), gpn};
  ClusterConfig combined_config = plan.cluster;
  combined_config.nodes = own_nodes + other_nodes;
  const Cluster combined(std::move(combined_config));
  Job both;
  both.world_size = combined.world_size();
  append_job(plan.job, own_map, both);
  append_job(second.job, other_map, both);

  const Trace shared = engine.run(both, combined, options);
  SharedRun run;
  run.this_job = own_trace(shared, plan.job, own_map);
  const Trace other_trace = own_trace(shared, second.job, other_map);
  const Results other_results =
      compute_results(second.scenario, second.model, second.job, other_trace);
  const Trace alone = engine.run(plan.job, plan.cluster, options);
  const Results alone_results = compute_results(sc, plan.model, plan.job, alone);
  BackgroundJob& b = run.other;
  b.scenario = shown;
  b.placement = interleaved ? "interleaved" : "after";
  b.nodes = other_nodes;
  b.gpus = second.cluster.world_size();
  b.step_time_s = other_results.step_time_s;
  b.samples_per_s = other_results.samples_per_s;
  b.tokens_per_s = other_results.tokens_per_s;
  b.this_job_alone_step_time_s = alone_results.step_time_s;
  // Finished more than 1% before this job (the engines' own agreement is 1%): say so.
  if (other_trace.makespan() < 0.99 * run.this_job.makespan())
    run.this_job.notes.push_back(
        "the second job (" + shown + ") finished its " + std::to_string(shared.iterations) +
        " iteration(s) at " + format_duration(other_trace.makespan()) +
        ", before this job; this job ran alone after that, so the slowdown shown is a lower "
        "bound (raise simulate.iterations for a longer overlap)");
  return run;
}

}  // namespace dtsim::driver
