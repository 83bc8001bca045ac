#include "driver/rank_program.h"

#include "core/strategy/strategy.h"
#include "models/scenario_model.h"

namespace dtsim::driver {

Program build_program(const Plan& plan, Rank rank) {
  return dtsim::build_program(models::shard_from_scenario(plan.scenario), plan.scenario, rank);
}

Job unfolded_job(const Plan& plan) {
  JobOptions options;
  options.folding = Folding::kNone;
  return build_job(models::shard_from_scenario(plan.scenario), plan.scenario, options);
}

}  // namespace dtsim::driver
