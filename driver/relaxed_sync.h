// Relaxed data-parallel synchronisation: training.sync ssp and local-sgd (docs/models.md,
// "Relaxed synchronisation"), as closed forms over the synchronous step an engine simulated.
//
// Contract:
// - The scenario is pure data parallelism with the gradient all-reduce after backward
//   (check_training_modes refuses the rest), so one synchronous step with one persistent slow
//   rank is T_sync = C* + X: C*, the slowest replica's kernels per step (s), and X, the rest of
//   the step (the all-reduce and the ops around it, s).
// - local-sgd, period H (Stich 2019; Lin et al. 2020): H local steps without the gradient
//   all-reduce, then one all-reduce of the parameters, which the slowest replica gates:
//   T = (H·C* + X) / H = C* + X / H per step. Assumption: the averaging all-reduce costs what the
//   gradient all-reduce does (same element count, both in the gradients' reduction dtype).
// - ssp, bound s (Ho et al. 2013): s = 0 is synchronous. For s >= 1 a replica starts step c + 1
//   while step c's update is still in flight (its reads may miss up to s updates), so each
//   replica's communication overlaps its next step's kernels: a two-stage pipeline whose period
//   is max(C*, X). Fast replicas run at most s steps ahead of the slowest, so in steady state the
//   job advances at the slowest replica's rate: T = max(C*, X). The transient (the first s steps,
//   where fast replicas pull ahead) is left out: it changes a run of N steps by at most s·X.
// - apply_relaxed_sync rewrites step_time_s, the rates that follow from it and the breakdown
//   (the saving taken from exposed communication, then straggler wait, then other), and says what
//   it did in Results::notes. It does nothing for training.sync synchronous.
#pragma once

#include "core/ir/trace.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"

namespace dtsim::driver {

// The closed forms above; `slowest_compute_s` is C*, `synchronous_step_s` is T_sync (s).
double local_sgd_step_s(double slowest_compute_s, double synchronous_step_s, int period);
double ssp_step_s(double slowest_compute_s, double synchronous_step_s, int staleness);

// C*: the most compute-span time any simulated rank spends per step in `trace` (s).
double slowest_compute_per_step_s(const Trace& trace);

void apply_relaxed_sync(const Scenario& scenario, const Trace& trace, Results& results);

}  // namespace dtsim::driver
