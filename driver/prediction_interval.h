// How sure a prediction is: an 80 % interval for the step time from dtsim's own errors on
// published runs like it (scenarios/validation/published.yaml, docs/validation.md section 6).
//
// The method (docs/validation.md, "Prediction intervals"): each published run r has a residual
// e_r = ln(published_r / predicted_r), the factor by which the real step was slower than dtsim
// said. For a new prediction p, the comparable runs' residuals give their mean m and standard
// deviation s, and the interval is p * exp(m +/- t * s * sqrt(1 + 1/n)), with t the Student t
// quantile of (1 + coverage) / 2 for n - 1 degrees of freedom: the textbook prediction interval
// for one new draw from the residuals' distribution, which holds its coverage for small n where
// empirical percentiles of a handful of runs do not. Because m is the residuals' mean, a model
// that is too fast on comparable runs gets an interval that sits above its prediction.
//
// Comparable runs: the same GPU generation, the same parallelism family (dp, fsdp, 3d, moe) and a
// GPU count within a factor of kScaleFactor; when fewer than kMinRuns remain, the scale is
// dropped, then the family. A run never calibrates its own interval: the query's scenario name
// leaves the run of that name out (so the validation set's coverage is leave-one-out). Where no
// comparable runs exist (a GPU generation, a model family or a kind of training that no
// published run covers), there is no interval and the basis says why.
#pragma once

#include <string>
#include <vector>

#include "core/report/metrics.h"

namespace dtsim::driver {

inline constexpr double kIntervalCoverage = 0.8;
inline constexpr int kMinRuns = 5;         // fewest residuals an interval rests on
inline constexpr double kScaleFactor = 8;  // "comparable scale": GPU counts within 8x

// One published run's residual, from the validation manifest.
struct PublishedResidual {
  std::string run;       // the scenario file's stem, e.g. "nemo-llama2-7b-dp8-fp8-8-h100"
  std::string gpu;       // GPU generation: "A100", "H100", ...
  std::string family;    // parallelism family: "dp", "fsdp", "3d", "moe"
  int gpus = 0;          // GPUs in the run
  double error_pct = 0;  // 100 (predicted - published) / published, analytic engine
};

// What a prediction is compared by.
struct IntervalQuery {
  std::string scenario;  // its name: a published run of this name is left out
  std::string gpu;       // generation, as gpu_generation() gives it
  std::string family;    // parallelism_family()
  int gpus = 0;
  // Only decoder language models trained synchronously are in the published set; anything
  // else (a CNN, BERT, asynchronous or parameter-server training) has no comparable runs.
  bool covered_kind = true;
  std::string uncovered_reason;  // when !covered_kind: what no published run covers
};

// "A100-SXM-80GB" -> "A100"; "H100-SXM" -> "H100".
std::string gpu_generation(const std::string& gpu_name);
// "moe" with expert parallelism, "3d" with tensor or pipeline parallelism, "fsdp" for data
// parallelism with sharded weights (ZeRO-3, FSDP), else "dp".
std::string parallelism_family(int tp, int pp, int ep, int zero_stage);

// The residuals recorded in the validation manifest built into dtsim (the copy of
// scenarios/validation/published.yaml taken when dtsim was built).
const std::vector<PublishedResidual>& published_residuals();
// Parses a manifest's text; `where` names it in errors.
std::vector<PublishedResidual> parse_residuals(const std::string& yaml_text,
                                               const std::string& where);

// The interval for a prediction of `step_time_s`.
StepTimeInterval step_time_interval(double step_time_s, const IntervalQuery& query,
                                    const std::vector<PublishedResidual>& residuals);
// The query for a result (its GPU, parallelism and name) and the kind the caller knows.
IntervalQuery interval_query(const Results& r, const std::string& model_family,
                             const std::string& sync);

}  // namespace dtsim::driver
