#include "core/exec/analytic_executor.h"

#include "core/exec/activity_graph.h"

namespace dtsim {

Trace AnalyticExecutor::run(const Job& job, const Cluster& nominal, const RunOptions& options) {
  const Cluster cluster = apply_perturbations(nominal, options);
  const ActivityGraph graph = lower(job, cluster, options.iterations, CollectiveBody::kClosedForm);
  return trace_from_times(graph, job, finish_times_without_contention(graph, cluster), name());
}

}  // namespace dtsim
