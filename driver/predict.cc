#include "driver/predict.h"

#include "core/base/error.h"
#include "core/exec/engine_registry.h"
#include "core/strategy/strategy.h"
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

Plan plan_scenario(Scenario scenario) {
  models::ScenarioGraphs graphs = models::graphs_from_scenario(scenario);
  Job job = build_job(graphs.shard, scenario);
  Cluster cluster(scenario.cluster);
  return Plan{std::move(scenario), std::move(graphs.whole), std::move(cluster), std::move(job)};
}

RunOptions run_options(const Scenario& scenario) {
  RunOptions options;
  options.iterations = scenario.simulate.iterations;
  options.seed = scenario.simulate.seed;
  return options;
}

Prediction predict(Scenario scenario) {
  return predict(plan_scenario(std::move(scenario)));
}

Prediction predict(Plan plan) {
  double ops = 0;
  for (const auto& p : plan.job.programs) ops += static_cast<double>(p.op_count());
  const double total = ops * plan.scenario.simulate.iterations;
  if (total > 2 * kMaxOpsPerStep && plan.scenario.simulate.iterations > 1)
    throw InputError(Diagnostic{plan.scenario.entries.count("simulate.iterations")
                                    ? plan.scenario.entries.at("simulate.iterations").where
                                    : SourceLocation{},
                                "simulate.iterations",
                                std::to_string(plan.scenario.simulate.iterations) +
                                    " iterations of " + std::to_string(static_cast<int64_t>(ops)) +
                                    " ops are too many to simulate; steps repeat "
                                    "identically without failures, so use fewer iterations"});
  auto executor = make_engine(plan.scenario.simulate.engine, plan.scenario);
  Trace trace;
  try {
    trace = executor->run(plan.job, plan.cluster, run_options(plan.scenario));
  } catch (const InputError& e) {
    throw located(e, plan.scenario);
  }
  Results results = compute_results(plan.scenario, plan.model, plan.job, trace);
  return Prediction{std::move(plan.scenario), std::move(plan.model), std::move(plan.cluster),
                    std::move(plan.job),      std::move(trace),      std::move(results)};
}

}  // namespace dtsim::driver
