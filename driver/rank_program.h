// Any rank's Program, and the unfolded Job, for a plan (docs/design.md section 3): what real mode,
// per-rank perturbations and conformance checks run instead of the folded Job that predictions
// simulate.
//
// Contract:
// - build_program(plan, r) is rank r's unfolded Program (core/strategy/strategy.h,
//   build_program); its GroupIds index plan.job.groups, which lists every group of the world
//   whatever the plan folds.
// - unfolded_job(plan) is the plan's Job with every rank's Program (Folding::kNone): the same
//   groups, in the same order, as plan.job.
// - Both resolve the model's shard graph again from plan.scenario (a Plan keeps only the whole
//   graph); the scenario is the one plan_scenario() resolved, so the graph is the same.
#pragma once

#include "core/base/ids.h"
#include "core/ir/program.h"
#include "driver/predict.h"

namespace dtsim::driver {

Program build_program(const Plan& plan, Rank rank);

Job unfolded_job(const Plan& plan);

}  // namespace dtsim::driver
