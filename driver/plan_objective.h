// What `dtsim plan` optimises and must meet: the fastest run, the cheapest or the least energy,
// within a deadline and a budget (--objective, --deadline, --budget).
//
// Contract:
// - A configuration's run is its steps (training.steps, or training.tokens over the tokens a step
//   trains) times its step time: the search's analytic step, then the SimGrid child's whole run
//   (the failures model's time to train when the scenario sets failures). GPU-hours = GPUs x time
//   to train / 3600; cost = GPU-hours x cluster.price_per_gpu_hour; energy = steps x the step's
//   facility energy (core/report/energy.h).
// - A deadline or a budget drops every configuration that misses it, before the ranking and again
//   once simulated; none is ever returned as meeting a goal it misses.
// - A goal the scenario cannot answer is an InputError naming the flag: a deadline without the
//   run's size, a cost without a price, a budget in another currency than the price, an energy
//   objective on a GPU without power figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/enum_table.h"
#include "core/base/units.h"
#include "core/scenario/scenario.h"

namespace dtsim::driver {

enum class Objective { kTime, kCost, kEnergy };
inline constexpr auto kObjectiveNames = make_enum_table<Objective>(
    {{Objective::kTime, "time"}, {Objective::kCost, "cost"}, {Objective::kEnergy, "energy"}});

struct RunGoal {
  Objective objective = Objective::kTime;
  std::optional<double> deadline_s;  // --deadline
  std::optional<Money> budget;       // --budget
};

// One configuration's whole run.
struct RunFigures {
  int64_t steps = 1;
  double time_to_train_s = 0;
  double gpu_hours = 0;
  std::optional<double> cost;      // with a price, in its currency
  std::optional<double> energy_j;  // with the GPU's power figures
};

// steps x step_s on `gpus` GPUs; energy_per_step_j < 0: not known.
RunFigures run_figures(int64_t steps, double step_s, int gpus, const std::optional<Money>& price,
                       double energy_per_step_j);

// A run's length for people: hours below two days, days above ("11.9 h", "41.2 days").
std::string run_time_text(double seconds);

// What the ranking sorts by (smaller is better): time to train, cost or energy.
double objective_value(Objective objective, const RunFigures& run);

// Why the run misses the goal ("takes 41.2 days, past the deadline of 30 days"); none when it
// meets it.
std::optional<std::string> goal_miss(const RunGoal& goal, const RunFigures& run,
                                     const std::optional<Money>& price);

// The goal checked against the scenario the search runs on: InputError naming the flag.
void check_goal(const RunGoal& goal, const Scenario& scenario);

}  // namespace dtsim::driver
