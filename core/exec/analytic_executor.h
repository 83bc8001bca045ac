// The analytic executor: runs a Job in closed form, with no contention.
//
// Contract:
// - The Job is lowered to the activity graph every engine runs (core/exec/activity_graph.h), with
//   closed-form bodies: kernels from the roofline and collectives from the alpha-beta formulas in
//   core/collectives/cost_model.h. Ordering follows the Program exactly: stream order, event waits,
//   collectives that start when every simulated member of the group has reached them, and
//   send/recv pairs that meet (rendezvous). Times are longest paths through the graph.
// - Instant and deterministic; used directly, for search, and as the oracle that the SimGrid
//   executor is tested against.
// - A Job that cannot finish (a wait on an event nobody records, unmatched collectives) raises
//   RuntimeError naming the stuck ops, never hangs.
#pragma once

#include "core/exec/executor.h"

namespace dtsim {

class AnalyticExecutor : public Executor {
 public:
  std::string name() const override { return "analytic"; }
  Trace run(const Job& job, const Cluster& cluster, const RunOptions& options) override;
};

}  // namespace dtsim
