#include "driver/relaxed_sync.h"

#include <algorithm>
#include <map>

#include "core/base/units.h"

namespace dtsim::driver {

double local_sgd_step_s(double slowest_compute_s, double synchronous_step_s, int period) {
  const double rest_s = std::max(0.0, synchronous_step_s - slowest_compute_s);
  return slowest_compute_s + rest_s / period;
}

double ssp_step_s(double slowest_compute_s, double synchronous_step_s, int staleness) {
  if (staleness == 0) return synchronous_step_s;
  const double rest_s = std::max(0.0, synchronous_step_s - slowest_compute_s);
  return std::max(slowest_compute_s, rest_s);
}

double slowest_compute_per_step_s(const Trace& trace) {
  std::map<Rank, double> compute_s;
  for (const Span& s : trace.spans)
    if (s.kind == SpanKind::kCompute) compute_s[s.rank] += (s.end - s.start).value();
  double slowest_s = 0;
  for (const auto& [rank, seconds] : compute_s) slowest_s = std::max(slowest_s, seconds);
  return slowest_s / std::max(1, trace.iterations);
}

void apply_relaxed_sync(const Scenario& scenario, const Trace& trace, Results& r) {
  const TrainingConfig& t = scenario.training;
  if (t.sync != "ssp" && t.sync != "local-sgd") return;
  const double sync_s = r.step_time_s;
  const double slowest_s = slowest_compute_per_step_s(trace);
  const double step_s = t.sync == "ssp" ? ssp_step_s(slowest_s, sync_s, t.staleness)
                                        : local_sgd_step_s(slowest_s, sync_s, t.local_sgd_period);
  if (step_s <= 0 || step_s >= sync_s) return;
  const double speedup = sync_s / step_s;
  r.step_time_s = step_s;
  r.samples_per_s *= speedup;
  r.tokens_per_s *= speedup;
  r.model_tflops_per_gpu *= speedup;
  r.hardware_tflops_per_gpu *= speedup;
  r.mfu *= speedup;
  r.hfu *= speedup;
  double saved_s = sync_s - step_s;
  for (double* term : {&r.breakdown_s.exposed_communication, &r.breakdown_s.straggler_wait,
                       &r.breakdown_s.other, &r.breakdown_s.compute}) {
    const double cut_s = std::min(*term, saved_s);
    *term -= cut_s;
    saved_s -= cut_s;
  }
  r.notes.push_back(
      t.sync == "ssp"
          ? "training.sync ssp (staleness " + std::to_string(t.staleness) +
                "): steady-state step max(C, X) = " + format_number("%.4g", step_s) +
                " s from the synchronous step " + format_number("%.4g", sync_s) +
                " s, C the slowest replica's kernels, X the rest (each replica's all-reduce "
                "overlaps its next step; Ho et al. 2013); the first steps, where fast replicas "
                "pull ahead, are left out"
          : "training.sync local-sgd (period " + std::to_string(t.local_sgd_period) +
                "): mean step C + X / H = " + format_number("%.4g", step_s) +
                " s from the synchronous step " + format_number("%.4g", sync_s) +
                " s, C the slowest replica's kernels, X the rest; the parameter averaging is "
                "assumed to cost what the gradient all-reduce does (Stich 2019; Lin et al. 2020)");
}

}  // namespace dtsim::driver
