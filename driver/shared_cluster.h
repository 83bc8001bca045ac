// Two jobs on one cluster (scenario key background.scenario): the other job's scenario is planned
// on its own, placed on further nodes of this scenario's cluster, and both Jobs run together on
// one platform, so that they share the network links both cross (leaf, rail and pod uplinks).
//
// Contract:
// - The other scenario must describe the same hardware (GPU, GPUs per node, intra-node fabric and
//   every network figure) on a fat-tree, rail-optimized or star network; anything else is an
//   InputError located at background.scenario. Its own background section must be empty, and
//   neither scenario may have stragglers (their ranks would need renumbering).
// - Placement (background.placement): `after` gives this job nodes 0..n-1 and the other job the
//   next m; `interleaved` alternates them node by node (this job first) while both have nodes
//   left. Ranks fill each job's nodes in order, as on a cluster of its own.
// - The combined run has this scenario's engine and iterations; only the simgrid engine runs two
//   Jobs on one platform, so any other engine is refused (InputError naming it).
// - Each job's results come from its own spans, renumbered to its own ranks. This job is also run
//   alone on its own cluster, so that the results can state the slowdown sharing causes.
#pragma once

#include <optional>
#include <string>

#include "core/exec/executor.h"
#include "core/report/metrics.h"
#include "driver/predict.h"

namespace dtsim::driver {

struct SharedRun {
  Trace this_job;       // this job's spans in the shared run, by its own ranks
  BackgroundJob other;  // the other job's figures, and this job's alone
};

// The shared run when the plan's scenario has background.scenario; nullopt otherwise.
std::optional<SharedRun> run_with_background_job(const Plan& plan, Executor& engine,
                                                 const RunOptions& options,
                                                 double max_memory_bytes);

}  // namespace dtsim::driver
