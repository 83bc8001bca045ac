#include "core/analytic_executor.h"

#include "core/activity_graph.h"

namespace dtsim {

Trace AnalyticExecutor::run(const Job& job, const ClusterConfig& cluster, int iterations) {
  const ActivityGraph graph = lower(job, cluster, iterations, CollectiveBody::kClosedForm);
  return trace_from_times(graph, job, finish_times_without_contention(graph, cluster), name());
}

}  // namespace dtsim
