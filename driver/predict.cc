#include "driver/predict.h"

#include <algorithm>
#include <set>

#include "core/base/error.h"
#include "core/exec/engine_registry.h"
#include "core/strategy/layout.h"
#include "core/strategy/parameter_server.h"
#include "core/strategy/strategy.h"
#include "driver/prediction_interval.h"
#include "driver/relaxed_sync.h"
#include "driver/reliability.h"
#include "driver/shared_cluster.h"
#include "models/scenario_model.h"

namespace dtsim::driver {

namespace {

std::vector<Override> as_overrides(const std::vector<std::string>& texts) {
  std::vector<Override> out;
  for (const auto& t : texts) out.push_back(Override{t});
  return out;
}

// An engine names the key a refusal is about; the scenario knows where that key was written.
InputError located(const InputError& e, const Scenario& scenario) {
  std::vector<Diagnostic> ds = e.diagnostics();
  for (auto& d : ds)
    if (!d.location.known()) {
      if (auto it = scenario.entries.find(d.key_path); it != scenario.entries.end())
        d.location = it->second.where;
      else
        d.location = SourceLocation{scenario.file, 0, 0};
    }
  return InputError(std::move(ds));
}

// The scenario's `stragglers:` as the engines' perturbations (core/exec/executor.h).
std::vector<Perturbation> perturbations(const StragglerConfig& stragglers) {
  std::vector<Perturbation> out;
  int source = 0;
  for (const StragglerEntry& e : stragglers.entries) {
    Perturbation p;
    p.slowdown = e.slowdown;
    p.source = source++;
    switch (e.kind) {
      case StragglerEntry::Kind::kSlow:
      case StragglerEntry::Kind::kThrottle:
        p.kind = e.kind == StragglerEntry::Kind::kSlow ? Perturbation::Kind::kSlowRank
                                                       : Perturbation::Kind::kThrottle;
        p.period = e.period;
        p.duty = e.duty;
        for (int r : e.ranks) {
          p.rank = r;
          out.push_back(p);
        }
        continue;
      case StragglerEntry::Kind::kRandom:
        p.kind = Perturbation::Kind::kRandomSlowdown;
        p.probability = e.probability;
        p.per_op = e.per_op;
        p.duration = e.duration;
        break;
      case StragglerEntry::Kind::kLink:
        p.kind = Perturbation::Kind::kDegradedLink;
        p.node = e.node;
        p.nic = e.nic;
        p.fraction = e.fraction;
        break;
    }
    out.push_back(p);
  }
  return out;
}

// Folding stays exact under perturbations. The folded Job simulates one replica (the first no
// perturbation touches, replica 0 unless it is perturbed), and of it one
// tensor- and context-parallel position per stage where that is exact (core/strategy/strategy.h).
// A perturbation only delays what it touches (every time is a max of sums), which gives two
// exact ways to fold around it (JobOptions::perturbed_replicas):
// - All perturbed ranks at one TP/CP position: that position is the one simulated in every
//   stage of replica 0 (standing for the unperturbed replicas, as any position does) and of each
//   perturbed replica. In a perturbed replica the simulated rank of each stage is the last of its
//   TP group to reach every collective (it is slowed, or it receives from a slowed rank, and its
//   peers' inputs are never later), so it alone decides when they complete; a data-parallel
//   collective waits for the perturbed replica's member, which arrives no earlier than the
//   folded replicas'.
// - Otherwise: every rank of each perturbed replica, beside the folded replica 0.
// Replicas no perturbation touches stay folded either way.
void fold_around_perturbations(JobOptions& job_options, const Scenario& scenario,
                               const Cluster& cluster, const RunOptions& options) {
  if (options.perturbations.empty()) return;
  const RankLayout layout = rank_layout(scenario.parallelism);
  std::set<int> replicas;
  std::set<std::array<int, 2>> positions;  // {tp, cp}
  for (Rank r : perturbed_ranks(options, cluster)) {
    const auto c = layout.coordinates(r);
    replicas.insert(c[3]);
    positions.insert({c[0], c[1]});
  }
  job_options.perturbed_replicas.assign(replicas.begin(), replicas.end());
  if (positions.size() == 1) job_options.perturbed_position = *positions.begin();
}

}  // namespace

Scenario load(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario(path, as_overrides(overrides), models::check_scenario);
}

Scenario load_text(const std::string& yaml_text, const std::string& name,
                   const std::vector<std::string>& overrides) {
  return load_scenario_text(yaml_text, name, as_overrides(overrides), models::check_scenario);
}

Scenario load_for_search(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario(path, as_overrides(overrides), models::check_scenario, LoadScope::kSearch);
}

Scenario load_cluster(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario(path, as_overrides(overrides), {}, LoadScope::kCluster);
}

Step build_step(const Scenario& scenario, const ModelGraph& shard, double max_memory_bytes,
                bool segments) {
  JobOptions options;
  options.segments = segments;
  options.max_ops = std::max(1.0, (max_memory_bytes - kBaseRunBytes) / kBytesPerOpIteration);
  // Dedicated parameter servers run on nodes appended to the cluster.
  Cluster cluster(parameter_server_cluster(scenario));
  fold_around_perturbations(options, scenario, cluster, run_options(scenario));
  Job job = build_job(shard, scenario, options);
  return Step{std::move(cluster), std::move(job)};
}

Plan plan_scenario(Scenario scenario, double max_memory_bytes, bool segments) {
  models::ScenarioGraphs graphs = models::graphs_from_scenario(scenario);
  Step step = build_step(scenario, graphs.shard, max_memory_bytes, segments);
  return Plan{std::move(scenario), std::move(graphs.whole), std::move(step.cluster),
              std::move(step.job)};
}

RunOptions run_options(const Scenario& scenario) {
  RunOptions options;
  options.iterations = scenario.simulate.iterations;
  options.seed = scenario.simulate.seed;
  options.perturbations = perturbations(scenario.stragglers);
  return options;
}

Prediction predict(Scenario scenario, const PredictOptions& options) {
  if (options.progress) options.progress->phase("building each simulated rank's Program");
  return predict(plan_scenario(std::move(scenario), options.max_memory_bytes), options);
}

RunEstimate estimate_run(const Plan& plan, const Executor& engine, bool with_chrome_trace) {
  RunEstimate e;
  for (const auto& p : plan.job.programs) {
    e.ops_per_iteration += static_cast<double>(p.op_count());
    for (const auto& st : p.streams)
      for (const auto& op : st.ops)
        if (const auto* c = std::get_if<CollectiveOp>(&op.body))
          e.collective_members_per_iteration +=
              static_cast<double>(plan.job.group(c->group).ranks.size());
  }
  e.iterations = plan.scenario.simulate.iterations;
  const double per_op = kBytesPerOpIteration + (with_chrome_trace ? kTraceBytesPerOpIteration : 0);
  const double per_member = engine.bytes_per_collective_member();
  e.bytes = kBaseRunBytes + e.iterations * (e.ops_per_iteration * per_op +
                                            e.collective_members_per_iteration * per_member);
  return e;
}

Prediction predict(Plan plan, const PredictOptions& options) {
  auto executor = make_engine(plan.scenario.simulate.engine, engine_settings(plan.scenario));
  const RunEstimate estimate = estimate_run(plan, *executor, options.with_chrome_trace);
  if (estimate.bytes > options.max_memory_bytes) {
    const bool iterations = estimate.iterations > 1;
    const std::string key = iterations ? "simulate.iterations" : "training.global_batch_size";
    const auto it = plan.scenario.entries.find(key);
    const double flow_bytes = estimate.iterations * estimate.collective_members_per_iteration *
                              executor->bytes_per_collective_member();
    // Say what dominates: the flows of collectives over large groups, or the ops.
    const bool flows_dominate = flow_bytes > estimate.bytes / 2;
    const std::string what =
        flows_dominate
            ? format_number("%.3g", estimate.collective_members_per_iteration / 1e6) +
                  " M collective members per iteration (each collective counts its group's "
                  "ranks, which the " +
                  plan.scenario.simulate.engine + " engine turns into flows)"
            : format_number("%.3g", estimate.ops_per_iteration / 1e6) + " M ops on " +
                  std::to_string(plan.job.programs.size()) + " simulated ranks";
    const std::string advice =
        flows_dominate ? "Use the analytic engine (--engine analytic), a larger "
                         "training.gradient_bucket (fewer collectives), or fewer GPUs"
        : iterations   ? "Steps repeat identically without failures, so use fewer iterations"
                       : "Raise training.micro_batch_size or lower the global batch";
    throw InputError(Diagnostic{
        it != plan.scenario.entries.end() ? it->second.where
                                          : SourceLocation{plan.scenario.file, 0, 0},
        key,
        what + " x " + std::to_string(estimate.iterations) + " iteration(s) would need about " +
            format_bytes(Bytes(estimate.bytes)) + " of memory, more than the limit of " +
            format_bytes(Bytes(options.max_memory_bytes)) + ". " + advice +
            (options.with_chrome_trace ? ", or leave out --trace" : "") +
            "; or raise the limit with --max-memory"});
  }
  if (options.progress)
    options.progress->phase(
        "simulating " + format_number("%.3g", estimate.ops_per_iteration / 1e6) +
        " M ops per iteration on " + std::to_string(plan.job.programs.size()) +
        " simulated ranks with the " + plan.scenario.simulate.engine + " engine");
  Trace trace;
  std::optional<SharedRun> shared;
  try {
    shared = run_with_background_job(plan, *executor, run_options(plan.scenario),
                                     options.max_memory_bytes);
    trace = shared ? std::move(shared->this_job)
                   : executor->run(plan.job, plan.cluster, run_options(plan.scenario));
  } catch (const InputError& e) {
    throw located(e, plan.scenario);
  }
  if (options.progress) options.progress->phase("computing the results");
  Results results = compute_results(plan.scenario, plan.model, plan.job, trace);
  if (shared) {
    shared->other.this_job_slowdown =
        results.step_time_s / shared->other.this_job_alone_step_time_s;
    results.background_job = shared->other;
  }
  apply_relaxed_sync(plan.scenario, plan.job, plan.cluster, trace, results);
  results.step_time_interval =
      step_time_interval(results.step_time_s,
                         interval_query(results, plan.model.shape.family,
                                        std::string(to_string(plan.scenario.training.sync))),
                         published_residuals());
  if (plan.scenario.reliability.whole_run()) {
    if (options.progress) options.progress->phase("simulating the whole run step by step");
    results.reliability = run_whole(plan.scenario, plan.cluster, results, trace);
    const reliability::RunReport& rel = *results.reliability;
    RunInputs run;
    run.steps = rel.steps;
    run.time_to_train_s = rel.outcome.time_to_train.value();
    run.busy_s = (rel.outcome.useful + rel.outcome.lost.rework + rel.outcome.lost.elastic).value();
    run.gpus = results.gpus;
    run.price_per_gpu_hour = plan.scenario.cluster.cost.price_per_gpu_hour;
    run.carbon_g_per_kwh = plan.scenario.cluster.cost.carbon_g_per_kwh;
    results.run = run_totals(run, results.energy, results.step_time_s);
  }
  return Prediction{std::move(plan.scenario), std::move(plan.model), std::move(plan.cluster),
                    std::move(plan.job),      std::move(trace),      std::move(results)};
}

}  // namespace dtsim::driver
