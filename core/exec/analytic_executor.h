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

#include <array>
#include <optional>

#include "core/exec/executor.h"

namespace dtsim {

class AnalyticExecutor : public Executor {
 public:
  std::string name() const override { return "analytic"; }
  // A Job with segments (core/ir/program.h) runs expanded: the Trace has a span per op.
  Trace run(const Job& job, const Cluster& cluster, const RunOptions& options) override;
};

// What a search needs of the analytic engine's answer, without its Trace: the step time (the
// makespan over the iterations) and the worst simulated rank's peak memory with its parts, as
// compute_results() reads them from run()'s Trace. A Job with segments is lowered with each
// segment as one node (core/exec/activity_graph.h); memory comes from the Program's order where
// each rank's memory ops are on one stream (a stream's ops run in order, so that order is the
// order in time), else from run()'s Trace.
struct StepEstimate {
  double step_time_s = 0;
  double peak_bytes = 0;
  std::array<double, kMemoryCategories> at_peak{};
};
StepEstimate estimate_step(const Job& job, const Cluster& cluster, const RunOptions& options);

// The worst simulated rank's peak memory and its parts, as run()'s Trace gives them, read from
// the Programs alone (no timing): nullopt when some rank's memory ops are on several streams (or
// it has none), whose order in time then depends on the timing. A search drops the
// configurations over the GPU's memory without timing them.
struct MemoryPeak {
  double bytes = 0;
  std::array<double, kMemoryCategories> at_peak{};
};
std::optional<MemoryPeak> peak_in_program_order(const Job& job);

}  // namespace dtsim
