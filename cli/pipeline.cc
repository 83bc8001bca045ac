#include "cli/pipeline.h"

#include "core/analytic_executor.h"
#include "core/error.h"
#include "core/strategy/strategy.h"
#include "models/scenario_model.h"

namespace dtsim::cli {

Plan plan_scenario(Scenario scenario) {
  ModelGraph model = models::model_from_scenario(scenario);
  Job job = build_job(model, scenario);
  return Plan{std::move(scenario), std::move(model), std::move(job)};
}

std::unique_ptr<Executor> make_executor(Engine engine) {
  switch (engine) {
    case Engine::kAnalytic: return std::make_unique<AnalyticExecutor>();
    case Engine::kSimGrid: break;
  }
  throw RuntimeError("the SimGrid engine is not built in this version; use --engine analytic");
}

Prediction predict(Scenario scenario) {
  Plan plan = plan_scenario(std::move(scenario));
  auto executor = make_executor(plan.scenario.simulate.engine);
  Trace trace = executor->run(plan.job, plan.scenario.cluster, plan.scenario.simulate.iterations);
  Results results = compute_results(plan.scenario, plan.model, plan.job, trace);
  return Prediction{std::move(plan.scenario), std::move(plan.model), std::move(plan.job),
                    std::move(trace), std::move(results)};
}

}  // namespace dtsim::cli
