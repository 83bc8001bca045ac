#include "driver/prediction_interval.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "core/base/units.h"
#include "driver/published_runs.h"

namespace dtsim::driver {

namespace {

// Student t quantiles at 0.9 (a two-sided 80 % interval) for 1 to 30 degrees of freedom, from
// the standard table (e.g. NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.6.7.2);
// beyond 30 the normal quantile 1.2816.
constexpr double kT90[] = {3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372,
                           1.363, 1.356, 1.350, 1.345, 1.341, 1.337, 1.333, 1.330, 1.328, 1.325,
                           1.323, 1.321, 1.319, 1.318, 1.316, 1.315, 1.314, 1.313, 1.311, 1.310};
constexpr double kZ90 = 1.2816;

double t90(int degrees_of_freedom) {
  if (degrees_of_freedom < 1) return INFINITY;
  if (degrees_of_freedom <= 30) return kT90[degrees_of_freedom - 1];
  return kZ90;
}

std::string field(const YAML::Node& node, const char* key, const std::string& where) {
  if (!node[key]) throw std::runtime_error(where + ": missing key '" + key + "'");
  return node[key].as<std::string>();
}

std::string stem(const std::string& file) {
  const size_t dot = file.rfind('.');
  return dot == std::string::npos ? file : file.substr(0, dot);
}

// The scale words of a basis: "8-64 GPUs".
std::string gpu_range(const std::vector<const PublishedResidual*>& runs) {
  int lo = runs.front()->gpus, hi = lo;
  for (const PublishedResidual* r : runs) {
    lo = std::min(lo, r->gpus);
    hi = std::max(hi, r->gpus);
  }
  return lo == hi ? std::to_string(lo) + " GPUs"
                  : std::to_string(lo) + "-" + std::to_string(hi) + " GPUs";
}

}  // namespace

std::string gpu_generation(const std::string& gpu_name) {
  std::string g = gpu_name.substr(0, gpu_name.find('-'));
  for (char& c : g) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return g;
}

std::string parallelism_family(int tp, int pp, int ep, int zero_stage) {
  if (ep > 1) return "moe";
  if (tp > 1 || pp > 1) return "3d";
  return zero_stage >= 3 ? "fsdp" : "dp";
}

std::vector<PublishedResidual> parse_residuals(const std::string& yaml_text,
                                               const std::string& where) {
  const YAML::Node root = YAML::Load(yaml_text);
  std::vector<PublishedResidual> out;
  for (const YAML::Node& entry : root["runs"]) {
    const std::string at = where + ": run " + std::to_string(out.size() + 1);
    PublishedResidual r;
    r.run = stem(field(entry, "file", at));
    r.gpu = field(entry, "gpu", at);
    r.family = field(entry, "family", at);
    r.gpus = std::stoi(field(entry, "gpus", at));
    r.error_pct = std::stod(field(entry, "recorded_error_pct", at));
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<PublishedResidual>& published_residuals() {
  static const std::vector<PublishedResidual> residuals =
      parse_residuals(published_runs_yaml(), "scenarios/validation/published.yaml (built in)");
  return residuals;
}

StepTimeInterval step_time_interval(double step_time_s, const IntervalQuery& query,
                                    const std::vector<PublishedResidual>& residuals) {
  StepTimeInterval interval;
  interval.coverage = kIntervalCoverage;
  if (!query.covered_kind) {
    interval.basis = "no comparable published runs: " + query.uncovered_reason;
    return interval;
  }
  std::vector<const PublishedResidual*> same_gpu;
  for (const PublishedResidual& r : residuals)
    if (r.gpu == query.gpu && r.run != query.scenario) same_gpu.push_back(&r);
  if (same_gpu.size() < static_cast<size_t>(kMinRuns)) {
    interval.basis = "no comparable published runs: " + std::to_string(same_gpu.size()) +
                     " published " + query.gpu + " run(s) in dtsim's validation set, fewer than " +
                     std::to_string(kMinRuns);
    return interval;
  }
  // Narrowest first: GPU, family and scale; GPU and family; GPU alone.
  std::vector<const PublishedResidual*> same_family, chosen;
  for (const PublishedResidual* r : same_gpu)
    if (r->family == query.family) same_family.push_back(r);
  for (const PublishedResidual* r : same_family)
    if (r->gpus <= query.gpus * kScaleFactor && r->gpus * kScaleFactor >= query.gpus)
      chosen.push_back(r);
  std::string what;
  if (chosen.size() >= static_cast<size_t>(kMinRuns)) {
    what = query.gpu + " " + query.family + " runs on " + gpu_range(chosen);
  } else if (same_family.size() >= static_cast<size_t>(kMinRuns)) {
    chosen = same_family;
    what = query.gpu + " " + query.family + " runs (" + gpu_range(chosen) +
           "; too few within 8x of " + std::to_string(query.gpus) + " GPUs)";
  } else {
    chosen = same_gpu;
    what = query.gpu + " runs of every parallelism family (too few " + query.family + " runs)";
  }
  const double n = static_cast<double>(chosen.size());
  double mean = 0;
  for (const PublishedResidual* r : chosen) mean += std::log(1.0 / (1.0 + r->error_pct / 100));
  mean /= n;
  double var = 0;
  for (const PublishedResidual* r : chosen) {
    const double d = std::log(1.0 / (1.0 + r->error_pct / 100)) - mean;
    var += d * d;
  }
  const double sd = std::sqrt(var / (n - 1));
  const double half = t90(static_cast<int>(chosen.size()) - 1) * sd * std::sqrt(1 + 1 / n);
  interval.low_s = step_time_s * std::exp(mean - half);
  interval.high_s = step_time_s * std::exp(mean + half);
  interval.runs = static_cast<int>(chosen.size());
  interval.basis =
      std::to_string(chosen.size()) + " comparable published runs: " + what +
      "; dtsim's analytic engine was " + format_number("%+.1f %%", 100 * (std::exp(-mean) - 1)) +
      " on them in the mean (residual spread " + format_number("%.1f %%", 100 * sd) + ")";
  return interval;
}

IntervalQuery interval_query(const Results& r, const std::string& model_family,
                             const std::string& sync) {
  IntervalQuery q;
  q.scenario = r.scenario;
  q.gpu = gpu_generation(r.gpu);
  q.family = parallelism_family(r.tp, r.pp, r.ep, r.zero_stage);
  q.gpus = r.gpus;
  if (model_family != "gpt" && model_family != "llama" && model_family != "moe") {
    q.covered_kind = false;
    q.uncovered_reason =
        "the published runs are decoder language models (gpt, llama, moe), "
        "not " +
        model_family;
  } else if (sync != "synchronous") {
    q.covered_kind = false;
    q.uncovered_reason = "the published runs train synchronously, not " + sync;
  }
  return q;
}

}  // namespace dtsim::driver
