#include "cli/pipeline.h"

#include "core/analytic_executor.h"
#include "core/error.h"
#include "core/strategy/strategy.h"
#include "models/scenario_model.h"
#include "sim/simgrid_executor.h"

namespace dtsim::cli {

Plan plan_scenario(Scenario scenario) {
  ModelGraph model = models::model_from_scenario(scenario);
  const auto& par = scenario.parallelism;
  const bool sharded = par.tensor.value > 1 || par.context.value > 1 || par.expert.value > 1;
  Job job = sharded ? build_job(models::shard_from_scenario(scenario), scenario)
                    : build_job(model, scenario);
  return Plan{std::move(scenario), std::move(model), std::move(job)};
}

std::unique_ptr<Executor> make_executor(const Scenario& scenario) {
  if (scenario.simulate.engine == Engine::kAnalytic) return std::make_unique<AnalyticExecutor>();
  return std::make_unique<sim::SimGridExecutor>(
      sim::SimGridOptions{scenario.simulate.fidelity, scenario.training.precision});
}

Prediction predict(Scenario scenario) {
  Plan plan = plan_scenario(std::move(scenario));
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
  auto executor = make_executor(plan.scenario);
  Trace trace = executor->run(plan.job, plan.scenario.cluster, plan.scenario.simulate.iterations);
  Results results = compute_results(plan.scenario, plan.model, plan.job, trace);
  return Prediction{std::move(plan.scenario), std::move(plan.model), std::move(plan.job),
                    std::move(trace), std::move(results)};
}

}  // namespace dtsim::cli
