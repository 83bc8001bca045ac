#include "driver/predict.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/exec/engine_registry.h"
#include "core/strategy/strategy.h"
#include "driver/reliability.h"
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

}  // namespace

Scenario load(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario(path, as_overrides(overrides), models::check_scenario);
}

Scenario load_cluster(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario(path, as_overrides(overrides), {}, LoadScope::kCluster);
}

Plan plan_scenario(Scenario scenario, double max_memory_bytes) {
  models::ScenarioGraphs graphs = models::graphs_from_scenario(scenario);
  JobOptions options;
  options.max_ops = std::max(1.0, (max_memory_bytes - kBaseRunBytes) / kBytesPerOpIteration);
  Job job = build_job(graphs.shard, scenario, options);
  Cluster cluster(scenario.cluster);
  return Plan{std::move(scenario), std::move(graphs.whole), std::move(cluster), std::move(job)};
}

RunOptions run_options(const Scenario& scenario) {
  RunOptions options;
  options.iterations = scenario.simulate.iterations;
  options.seed = scenario.simulate.seed;
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
  auto executor = make_engine(plan.scenario.simulate.engine, plan.scenario);
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
  try {
    trace = executor->run(plan.job, plan.cluster, run_options(plan.scenario));
  } catch (const InputError& e) {
    throw located(e, plan.scenario);
  }
  if (options.progress) options.progress->phase("computing the results");
  Results results = compute_results(plan.scenario, plan.model, plan.job, trace);
  if (plan.scenario.reliability.whole_run()) {
    if (options.progress) options.progress->phase("simulating the whole run step by step");
    results.reliability = run_whole(plan.scenario, plan.cluster, results, trace);
  }
  return Prediction{std::move(plan.scenario), std::move(plan.model), std::move(plan.cluster),
                    std::move(plan.job),      std::move(trace),      std::move(results)};
}

}  // namespace dtsim::driver
