#include "driver/plan_objective.h"

#include <limits>

#include "core/base/error.h"
#include "core/report/energy.h"
#include "driver/plan_search.h"

namespace dtsim::driver {
std::string run_time_text(double s) {
  return s >= 2 * 86400 ? format_number("%.1f days", s / 86400) : format_number("%.1f h", s / 3600);
}

RunFigures run_figures(int64_t steps, double step_s, int gpus, const std::optional<Money>& price,
                       double energy_per_step_j) {
  // The run's closed forms are core's (core/report/energy.h), for a run without stalls.
  RunInputs in;
  in.steps = steps;
  in.time_to_train_s = static_cast<double>(steps) * step_s;
  in.busy_s = in.time_to_train_s;
  in.gpus = gpus;
  in.price_per_gpu_hour = price;
  StepEnergy step;
  step.modelled = energy_per_step_j >= 0;
  step.energy_per_step_j = energy_per_step_j;
  const RunTotals t = run_totals(in, step, step_s);
  RunFigures r;
  r.steps = steps;
  r.time_to_train_s = t.time_to_train_s;
  r.gpu_hours = t.gpu_hours;
  r.cost = t.cost;
  if (t.energy_modelled) r.energy_j = t.energy_j;
  return r;
}

double objective_value(Objective objective, const RunFigures& run) {
  constexpr double kUnknown = std::numeric_limits<double>::infinity();
  switch (objective) {
    case Objective::kTime:
      return run.time_to_train_s;
    case Objective::kCost:
      return run.cost.value_or(kUnknown);
    case Objective::kEnergy:
      return run.energy_j.value_or(kUnknown);
  }
  return kUnknown;
}

std::optional<std::string> goal_miss(const RunGoal& goal, const RunFigures& run,
                                     const std::optional<Money>& price) {
  if (goal.deadline_s && run.time_to_train_s > *goal.deadline_s)
    return "takes " + run_time_text(run.time_to_train_s) + ", past the deadline of " +
           run_time_text(*goal.deadline_s);
  if (goal.budget && run.cost && *run.cost > goal.budget->amount)
    return "costs " + format_money(Money{*run.cost, price ? price->currency : ""}) +
           ", over the budget of " + format_money(*goal.budget);
  return std::nullopt;
}

void check_goal(const RunGoal& goal, const Scenario& scenario) {
  const ReliabilityConfig& rel = scenario.reliability;
  const bool sized = rel.tokens.has_value() || rel.steps.value > 1;
  const std::optional<Money>& price = scenario.cluster.cost.price_per_gpu_hour;
  const std::string flag = "--objective " + std::string(kObjectiveNames.to_string(goal.objective));
  if (!sized && (goal.deadline_s || goal.budget || goal.objective != Objective::kTime))
    throw InputError(
        Diagnostic{SourceLocation{},
                   goal.deadline_s ? "--deadline"
                   : goal.budget   ? "--budget"
                                   : flag,
                   "a deadline, a budget or a cost or energy objective needs the run's size: set "
                   "training.tokens (e.g. --set training.tokens=300B) or training.steps"});
  if ((goal.budget || goal.objective == Objective::kCost) && !price)
    throw InputError(Diagnostic{
        SourceLocation{}, goal.budget ? "--budget" : flag,
        "a cost needs the price of a GPU-hour: set cluster.price_per_gpu_hour (e.g. --set "
        "cluster.price_per_gpu_hour=2.49USD)"});
  if (goal.budget && price && goal.budget->currency != price->currency)
    throw InputError(Diagnostic{SourceLocation{}, "--budget",
                                "the budget is in " + goal.budget->currency +
                                    " but cluster.price_per_gpu_hour is in " + price->currency +
                                    "; one search takes one currency"});
  if (goal.objective == Objective::kEnergy && scenario.cluster.gpu.max_power.value() <= 0)
    throw InputError(
        Diagnostic{SourceLocation{}, flag,
                   "the GPU '" + scenario.cluster.gpu.name +
                       "' has no power figures in the catalog; set cluster.gpu.max_power and "
                       "cluster.gpu.idle_power to rank by energy"});
}

// The rows no other row beats on both time to train and cost (on time alone without a price):
// the offers worth weighing against each other.
void mark_pareto(std::vector<PlanRow>& rows) {
  auto cost = [](const PlanRow& r) { return r.run.cost.value_or(0); };
  for (PlanRow& a : rows) {
    a.pareto = !a.error.empty() ? false : true;
    if (!a.pareto) continue;
    for (const PlanRow& b : rows) {
      if (&a == &b || !b.error.empty()) continue;
      const bool no_worse = b.run.time_to_train_s <= a.run.time_to_train_s && cost(b) <= cost(a);
      const bool better = b.run.time_to_train_s < a.run.time_to_train_s || cost(b) < cost(a);
      if (no_worse && better) {
        a.pareto = false;
        break;
      }
    }
  }
}

}  // namespace dtsim::driver
