#include "driver/analysis.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/units.h"
#include "driver/sweep_results.h"

namespace dtsim::driver {
namespace {

using nlohmann::json;

InputError bad_input(const std::string& file, const std::string& key, const std::string& why) {
  return InputError(Diagnostic{SourceLocation{file, 0, 0}, key, why});
}

// The whole of `text` as a number, else nullopt ("4" and "4.0" match as values of one key).
std::optional<double> as_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// --- Student's t, from the regularized incomplete beta function -------------------------------

// The continued fraction of I_x(a, b) by the modified Lentz method (Press et al., Numerical
// Recipes, 3rd ed., section 6.4); it converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEpsilon) break;
  }
  return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, int nu) {
  const double tail = 0.5 * regularized_incomplete_beta(nu / 2.0, 0.5, nu / (nu + t * t));
  return t > 0 ? 1 - tail : tail;
}

// --- fits --------------------------------------------------------------------------------------

// y = f a by least squares through the origin, with the interval from the residuals.
// `model` maps (n, f) to the speedup, for the residual in speedup units.
SerialFractionFit fit_through_origin(const std::vector<double>& scale,
                                     const std::vector<double>& speedup, double confidence,
                                     double (*regressor)(double n),
                                     double (*response)(double n, double s),
                                     double (*model)(double n, double f)) {
  if (scale.size() != speedup.size())
    throw std::invalid_argument("fit: scale and speedup differ in length");
  std::vector<size_t> used;
  for (size_t i = 0; i < scale.size(); ++i)
    if (scale[i] > 1) used.push_back(i);
  const int m = static_cast<int>(used.size());
  if (m < kMinimumPoints - 1)
    throw bad_input("", "",
                    "a fit of the serial fraction needs at least " +
                        std::to_string(kMinimumPoints - 1) + " points beyond the baseline; found " +
                        std::to_string(m));
  Eigen::MatrixXd a(m, 1);
  Eigen::VectorXd y(m);
  for (int k = 0; k < m; ++k) {
    a(k, 0) = regressor(scale[used[k]]);
    y(k) = response(scale[used[k]], speedup[used[k]]);
  }
  SerialFractionFit fit;
  fit.serial_fraction = a.colPivHouseholderQr().solve(y)(0);
  const Eigen::VectorXd residual = y - a * fit.serial_fraction;
  fit.degrees_of_freedom = m - 1;
  const double variance = residual.squaredNorm() / fit.degrees_of_freedom;
  fit.standard_error = std::sqrt(variance / a.squaredNorm());
  fit.confidence = confidence;
  fit.t_quantile = student_t_quantile((1 + confidence) / 2, fit.degrees_of_freedom);
  fit.interval_low = fit.serial_fraction - fit.t_quantile * fit.standard_error;
  fit.interval_high = fit.serial_fraction + fit.t_quantile * fit.standard_error;
  double squares = 0;
  for (size_t i : used) {
    const double r = speedup[i] - model(scale[i], fit.serial_fraction);
    squares += r * r;
  }
  fit.rms_residual = std::sqrt(squares / m);
  return fit;
}

// --- reading rows ------------------------------------------------------------------------------

// The value at a dotted path of a result, or null when absent.
const json* result_value(const json& result, const std::string& key) {
  const json* at = &result;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!at->is_object()) return nullptr;
    const auto it = at->find(part);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string::npos) return at;
    start = dot + 1;
  }
}

// The row's value of `key` as text, for messages; nullopt when the row lacks the key.
std::optional<std::string> raw_value(const SweepRow& row, const std::string& key) {
  for (const auto& [k, v] : row.overrides)
    if (k == key) return v;
  if (const json* v = result_value(row.result, key))
    return v->is_string() ? v->get<std::string>() : v->dump();
  return std::nullopt;
}

std::string row_name(const SweepRow& row, size_t index) {
  return "row " + std::to_string(index + 1) +
         (row.config.empty() ? "" : " (" + printable(row.config, 120) + ")");
}

// --- formatting --------------------------------------------------------------------------------

std::string fmt(const char* format, double value) {
  return format_number(format, value);
}

std::string percent(double fraction) {
  return fmt("%.1f %%", fraction * 100);
}

// Percentage points, signed: a loss of efficiency.
std::string points(double fraction) {
  return fmt("%+.1f pp", fraction * 100);
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string x_text(const ScalingAnalysis& a, double x) {
  return a.x_key == "config.gpus" ? number(x) + " GPUs" : number(x);
}

json fit_json(const SerialFractionFit& f) {
  return {{"serial_fraction", f.serial_fraction},
          {"standard_error", f.standard_error},
          {"confidence", f.confidence},
          {"interval", {f.interval_low, f.interval_high}},
          {"degrees_of_freedom", f.degrees_of_freedom},
          {"t_quantile", f.t_quantile},
          {"rms_residual_speedup", f.rms_residual}};
}

}  // namespace

const char* scaling_kind_name(ScalingKind kind) {
  switch (kind) {
    case ScalingKind::kStrong:
      return "strong";
    case ScalingKind::kWeak:
      return "weak";
    case ScalingKind::kMixed:
      return "mixed";
    case ScalingKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<double> ScalingAnalysis::speedup_limit() const {
  const std::optional<double> amdahl_1_f = amdahl_limit(amdahl.serial_fraction);
  if (amdahl_1_f && batch_ceiling) return std::min(*amdahl_1_f, *batch_ceiling);
  return amdahl_1_f ? amdahl_1_f : batch_ceiling;
}

std::optional<double> amdahl_limit(double serial_fraction) {
  if (serial_fraction <= 0) return std::nullopt;
  return 1 / serial_fraction;
}

double amdahl_speedup(double scale, double serial_fraction) {
  return 1 / (serial_fraction + (1 - serial_fraction) / scale);
}

double gustafson_speedup(double scale, double serial_fraction) {
  return scale - serial_fraction * (scale - 1);
}

std::optional<double> karp_flatt(double scale, double speedup) {
  if (scale == 1) return std::nullopt;
  return (1 / speedup - 1 / scale) / (1 - 1 / scale);
}

SerialFractionFit fit_amdahl(const std::vector<double>& scale, const std::vector<double>& speedup,
                             double confidence) {
  // 1/S - 1/n = f (1 - 1/n): linear in f (Amdahl 1967, rearranged).
  return fit_through_origin(
      scale, speedup, confidence, [](double n) { return 1 - 1 / n; },
      [](double n, double s) { return 1 / s - 1 / n; }, amdahl_speedup);
}

SerialFractionFit fit_gustafson(const std::vector<double>& scale,
                                const std::vector<double>& speedup, double confidence) {
  // n - S = f (n - 1) (Gustafson 1988, rearranged).
  return fit_through_origin(
      scale, speedup, confidence, [](double n) { return n - 1; },
      [](double n, double s) { return n - s; }, gustafson_speedup);
}

double student_t_quantile(double p, int degrees_of_freedom) {
  if (!(p > 0 && p < 1) || degrees_of_freedom < 1)
    throw std::invalid_argument("student_t_quantile: p in (0, 1) and degrees of freedom >= 1");
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, degrees_of_freedom);
  double low = 0, high = 1;
  while (student_t_cdf(high, degrees_of_freedom) < p) high *= 2;
  // Bisection to double precision: the CDF is monotone, and 200 halvings exhaust a double.
  for (int i = 0; i < 200 && high - low > 1e-14 * high; ++i) {
    const double mid = (low + high) / 2;
    (student_t_cdf(mid, degrees_of_freedom) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

std::string x_axis_name(const std::string& x_key) {
  return x_key == "config.gpus" ? "GPUs" : x_key;
}

ScalingAnalysis analyze_points(std::vector<ScalingPoint> points, const std::string& x_key,
                               const std::string& file) {
  ScalingAnalysis a;
  a.file = file;
  a.x_key = x_key;
  if (static_cast<int>(points.size()) < kMinimumPoints)
    throw bad_input(file, "",
                    "scaling fits need at least " + std::to_string(kMinimumPoints) +
                        " ok rows with different values of " + x_key +
                        " (a baseline and two scaled points); found " +
                        std::to_string(points.size()));
  std::stable_sort(points.begin(), points.end(),
                   [](const ScalingPoint& l, const ScalingPoint& r) { return l.x < r.x; });
  for (size_t i = 0; i < points.size(); ++i) {
    const ScalingPoint& p = points[i];
    if (!(p.x > 0) || !std::isfinite(p.x))
      throw bad_input(file, x_key,
                      "the scale is x divided by the smallest x, so x must be a positive "
                      "number; configuration '" +
                          printable(p.config, 120) + "' has " + number(p.x));
    if (i > 0 && p.x == points[i - 1].x)
      throw bad_input(file, x_key,
                      "configurations '" + printable(points[i - 1].config, 120) + "' and '" +
                          printable(p.config, 120) + "' both have " + x_key + " = " + number(p.x) +
                          "; a scaling series needs one row per value of x (analyze the rows "
                          "of one series, or choose another --x)");
    if (!(p.samples_per_s > 0) || !std::isfinite(p.samples_per_s))
      throw bad_input(
          file, "throughput.samples_per_s",
          "configuration '" + printable(p.config, 120) + "' has no positive throughput");
  }
  const ScalingPoint& base = points.front();
  const double base_goodput = base.goodput.value_or(1);
  // Cost per sample of each cause at a point: n / samples_per_s split by the breakdown shares.
  const auto costs = [](const ScalingPoint& p, double n) {
    const double parts[5] = {p.compute_s, p.exposed_communication_s, p.pipeline_bubble_s,
                             p.straggler_wait_s, p.other_s};
    double sum = 0;
    for (double v : parts) sum += v;
    std::array<double, 5> c{};
    const double total = n / p.samples_per_s;
    for (int k = 0; k < 5; ++k) c[k] = sum > 0 ? total * parts[k] / sum : (k == 0 ? total : 0);
    return c;
  };
  const auto base_costs = costs(base, 1);
  for (const ScalingPoint& p : points) {
    AnalyzedPoint ap;
    ap.point = p;
    ap.scale = p.x / base.x;
    ap.speedup = p.samples_per_s / base.samples_per_s;
    ap.efficiency = ap.speedup / ap.scale;
    ap.karp_flatt = karp_flatt(ap.scale, ap.speedup);
    const auto c = costs(p, ap.scale);
    const double total = ap.scale / p.samples_per_s;
    double* loss[5] = {&ap.loss.compute, &ap.loss.exposed_communication, &ap.loss.pipeline_bubble,
                       &ap.loss.straggler_wait, &ap.loss.other};
    for (int k = 0; k < 5; ++k) *loss[k] = (c[k] - base_costs[k]) / total;
    ap.efficiency_with_failures = ap.efficiency * p.goodput.value_or(1) / base_goodput;
    ap.loss.failures = ap.efficiency - ap.efficiency_with_failures;
    if (p.goodput && *p.goodput < 1) a.failures_modelled = true;
    a.points.push_back(ap);
  }

  // Strong or weak: does the global batch stay put, or grow with the scale?
  bool all_batches = true, same = true, proportional = true;
  for (const AnalyzedPoint& ap : a.points) {
    if (!ap.point.global_batch_size || !base.global_batch_size) {
      all_batches = false;
      break;
    }
    const double b = *ap.point.global_batch_size, b0 = *base.global_batch_size;
    if (std::fabs(b - b0) > 1e-9 * b0) same = false;
    if (std::fabs(b / b0 - ap.scale) > 1e-6 * ap.scale) proportional = false;
  }
  if (!all_batches) {
    a.kind = ScalingKind::kUnknown;
    a.kind_evidence = "the rows do not carry config.global_batch_size";
  } else if (same) {
    a.kind = ScalingKind::kStrong;
    a.kind_evidence =
        "the global batch is " + number(*base.global_batch_size) + " samples at every point";
  } else if (proportional) {
    a.kind = ScalingKind::kWeak;
    a.kind_evidence = "the global batch grows with the scale, from " +
                      number(*base.global_batch_size) + " to " +
                      number(*a.points.back().point.global_batch_size) + " samples";
  } else {
    a.kind = ScalingKind::kMixed;
    a.kind_evidence = "the global batch changes (" + number(*base.global_batch_size) + " to " +
                      number(*a.points.back().point.global_batch_size) +
                      " samples) but not in proportion to the scale";
  }

  // The batch ceiling: strong scaling that grows data parallelism stops at one sample per
  // replica.
  const ScalingPoint& last = a.points.back().point;
  if (a.kind == ScalingKind::kStrong && base.data_parallel && last.data_parallel &&
      *base.data_parallel > 0 && *last.data_parallel > *base.data_parallel) {
    a.batch_ceiling = *base.global_batch_size / *base.data_parallel;
    a.batch_ceiling_evidence =
        "the global batch of " + number(*base.global_batch_size) +
        " samples holds at most that many data-parallel replicas (one sample each); the "
        "baseline runs " +
        number(*base.data_parallel) + ", so data parallelism can grow at most " +
        fmt("%.4gx", *a.batch_ceiling);
  }

  std::vector<double> n, s;
  for (const AnalyzedPoint& ap : a.points) {
    n.push_back(ap.scale);
    s.push_back(ap.speedup);
  }
  a.amdahl = fit_amdahl(n, s);
  a.gustafson = fit_gustafson(n, s);
  return a;
}

ScalingAnalysis analyze_results(const ResultsFile& results, const std::string& x_key) {
  const std::string& file = results.path;
  std::vector<ScalingPoint> points;
  std::vector<SkippedRow> skipped;
  bool key_seen = false;
  int ok_rows = 0;
  for (size_t i = 0; i < results.rows.size(); ++i) {
    const SweepRow& row = results.rows[i];
    if (raw_value(row, x_key)) key_seen = true;
    if (!row.ok()) {
      skipped.push_back({row.config, row.status, row.exit_code, row.error});
      continue;
    }
    ++ok_rows;
  }
  if (!key_seen && !results.rows.empty()) {  // with no rows at all, "too few" says more
    std::vector<std::string> candidates = results.varied_keys;
    for (const auto& c : result_columns()) candidates.push_back(c);
    const std::string hint = did_you_mean(x_key, candidates);
    std::string varied;
    for (const auto& k : results.varied_keys) varied += (varied.empty() ? "" : ", ") + k;
    throw bad_input(
        file, "--x",
        "no row has the key '" + printable(x_key, 120) + "'" +
            (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
            " --x takes a varied key (this file varies: " + (varied.empty() ? "none" : varied) +
            ") or a numeric result key such as config.gpus");
  }
  const auto not_fitting = std::count_if(
      skipped.begin(), skipped.end(), [](const SkippedRow& s) { return s.status == kDoesNotFit; });
  if (ok_rows < kMinimumPoints)
    throw bad_input(file, "",
                    "scaling fits need at least " + std::to_string(kMinimumPoints) +
                        " ok rows (a baseline and two scaled points); the file has " +
                        std::to_string(ok_rows) + " ok of " + std::to_string(results.rows.size()) +
                        " rows" +
                        (not_fitting > 0 ? " (" + std::to_string(not_fitting) +
                                               " do not fit in the GPU's memory and are left out)"
                                         : std::string()));
  for (size_t i = 0; i < results.rows.size(); ++i) {
    const SweepRow& row = results.rows[i];
    if (!row.ok()) continue;
    ScalingPoint p;
    p.config = row.config;
    const std::optional<double> x = number_of(row, x_key);
    if (!x) {
      const auto raw = raw_value(row, x_key);
      throw bad_input(file, x_key,
                      row_name(row, i) + (raw ? " has " + x_key + " = '" + printable(*raw, 80) +
                                                    "', not a number; --x needs a numeric key"
                                              : " has no " + x_key));
    }
    p.x = *x;
    const auto need = [&](const char* key) {
      const std::optional<double> v = number_of(row, key);
      if (!v)
        throw bad_input(file, key,
                        row_name(row, i) + " has status ok but no number at " + key +
                            "; analyze reads results of dtsim sweep");
      return *v;
    };
    p.samples_per_s = need("throughput.samples_per_s");
    p.step_time_s = need("step_time_s");
    p.compute_s = need("breakdown_s.compute");
    p.exposed_communication_s = need("breakdown_s.exposed_communication");
    p.pipeline_bubble_s = need("breakdown_s.pipeline_bubble");
    // Keys added to results later than the others: absent reads as none.
    p.straggler_wait_s = number_of(row, "breakdown_s.straggler_wait").value_or(0);
    p.other_s = number_of(row, "breakdown_s.other").value_or(0);
    p.gpus = number_of(row, "config.gpus").value_or(0);
    p.global_batch_size = number_of(row, "config.global_batch_size");
    p.data_parallel = number_of(row, "config.dp");
    p.goodput = number_of(row, "reliability.goodput");
    points.push_back(std::move(p));
  }
  ScalingAnalysis a = analyze_points(std::move(points), x_key, file);
  a.skipped = std::move(skipped);
  a.dropped_partial_lines = results.dropped_partial_lines;
  return a;
}

std::vector<ScalingSeries> analyze_series(const ResultsFile& results, const std::string& x_key,
                                          std::vector<std::string> by,
                                          const std::vector<std::string>& where) {
  const std::string& file = results.path;
  // --where: the rows whose value of each key matches.
  ResultsFile kept = results;
  for (const std::string& w : where) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw bad_input(file, "--where", "expected KEY=VALUE, found '" + printable(w, 120) + "'");
    const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    bool seen = false;
    std::erase_if(kept.rows, [&](const SweepRow& row) {
      const auto v = raw_value(row, key);
      seen = seen || v.has_value();
      if (!v) return true;
      const auto a = number_of(row, key);
      const auto b = as_number(value);
      return !(*v == value || (a && b && *a == *b));
    });
    if (!seen)
      throw bad_input(file, "--where",
                      "no row has the key '" + printable(key, 120) +
                          "'; --where takes a varied key of the sweep or a result key");
  }
  if (kept.rows.empty() && !results.rows.empty())
    throw bad_input(file, "--where", "no row matches every --where");
  // The default split: varied keys whose values change among rows of one x (a numeric x: one
  // that is not is reported as such by the analysis of the whole).
  const bool numeric_x = std::all_of(kept.rows.begin(), kept.rows.end(), [&](const SweepRow& r) {
    return !r.ok() || !raw_value(r, x_key) || number_of(r, x_key).has_value();
  });
  if (by.empty() && numeric_x) {
    for (const std::string& key : kept.varied_keys) {
      if (key == x_key) continue;
      std::map<std::string, std::string> value_at_x;  // x's text -> this key's first value
      bool splits = false;
      for (const SweepRow& row : kept.rows) {
        const auto x = raw_value(row, x_key);
        const auto v = raw_value(row, key);
        if (!x || !v) continue;
        const auto [it, fresh] = value_at_x.emplace(*x, *v);
        splits = splits || (!fresh && it->second != *v);
      }
      if (splits) by.push_back(key);
    }
  }
  if (by.empty()) return {ScalingSeries{{}, "", analyze_results(kept, x_key), ""}};
  for (const std::string& key : by) {
    if (key == x_key)
      throw bad_input(file, "--by", "'" + printable(key, 120) + "' is the x key; split by another");
    if (std::none_of(kept.rows.begin(), kept.rows.end(),
                     [&](const SweepRow& row) { return raw_value(row, key).has_value(); }))
      throw bad_input(file, "--by", "no row has the key '" + printable(key, 120) + "'");
  }
  // Rows by the values of the `by` keys, in the order each combination first appears.
  std::vector<ScalingSeries> out;
  std::vector<ResultsFile> parts;
  // The file's description without its rows, which each part takes its own of.
  std::vector<SweepRow> rows = std::move(kept.rows);
  const ResultsFile shell = kept;
  std::map<std::vector<std::pair<std::string, std::string>>, size_t> series_of;
  for (SweepRow& row : rows) {
    std::vector<std::pair<std::string, std::string>> values;
    for (const std::string& key : by) values.emplace_back(key, raw_value(row, key).value_or("-"));
    const auto [at, fresh] = series_of.emplace(values, out.size());
    if (fresh) {
      std::string label;
      for (const auto& [k, v] : values) label += (label.empty() ? "" : ", ") + k + "=" + v;
      out.push_back(ScalingSeries{values, label, {}, ""});
      parts.push_back(shell);
    }
    parts[at->second].rows.push_back(std::move(row));
  }
  size_t analysed = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto ok = std::count_if(parts[i].rows.begin(), parts[i].rows.end(),
                                  [](const SweepRow& r) { return r.ok(); });
    if (ok == 0 && out.size() > 1) {
      size_t not_fitting = 0;
      for (const SweepRow& r : parts[i].rows) {
        out[i].analysis.skipped.push_back({r.config, r.status, r.exit_code, r.error});
        not_fitting += r.status == kDoesNotFit;
      }
      out[i].analysis.file = file;
      out[i].analysis.x_key = x_key;
      out[i].unanalysed = "none of its " + std::to_string(parts[i].rows.size()) + " rows is ok (" +
                          std::to_string(not_fitting) +
                          " do not fit in the GPU's memory, the others failed)";
      continue;
    }
    ++analysed;
    try {
      out[i].analysis = analyze_results(parts[i], x_key);
    } catch (const InputError& e) {
      const Diagnostic& d = e.diagnostics().front();
      throw bad_input(file, d.key_path,
                      "series " + printable(out[i].label, 200) + ": " + d.message);
    }
  }
  if (analysed == 0)
    throw bad_input(file, "",
                    "no series has an ok row: " + printable(out.front().label, 200) + " " +
                        out.front().unanalysed);
  return out;
}

std::string render_analysis(const ScalingAnalysis& a) {
  std::ostringstream out;
  char buf[512];
  const AnalyzedPoint& base = a.points.front();
  const std::string base_text = x_text(a, base.point.x);
  const std::string axis = x_axis_name(a.x_key);
  out << "dtsim analyze: " << (a.file.empty() ? "points" : printable(a.file, 200)) << "\n";
  out << "  " << a.points.size() << " ok rows analysed, " << a.skipped.size()
      << " skipped; x = " << a.x_key << ", baseline " << base_text << "\n";
  if (a.dropped_partial_lines > 0)
    out << "  " << a.dropped_partial_lines
        << " unfinished last line dropped (a row cut off while it was written)\n";
  out << "\nScaling: " << scaling_kind_name(a.kind) << " (" << a.kind_evidence << ")\n";
  switch (a.kind) {
    case ScalingKind::kStrong:
      out << "  speedup S = throughput / baseline throughput = baseline step time / step time:\n"
             "  how many times faster the same global batch is processed.\n";
      break;
    case ScalingKind::kWeak:
      out << "  speedup S = throughput / baseline throughput: Gustafson's scaled speedup, how\n"
             "  many times more samples per second the larger job processes at its larger batch.\n";
      break;
    case ScalingKind::kMixed:
    case ScalingKind::kUnknown:
      out << "  speedup S = throughput / baseline throughput (samples per second); the work per\n"
             "  step is neither fixed nor proportional to the scale, so compare the fits with "
             "care.\n";
      break;
  }
  out << "  scale n = x / " << number(base.point.x) << "; efficiency E = S / n (ideal: S = n, E = "
      << "100 %).\n\n";

  std::snprintf(buf, sizeof buf, "  %14s %8s %20s %12s %9s %11s %12s\n", axis.substr(0, 14).c_str(),
                "scale", "throughput", "step time", "speedup", "efficiency", "Karp-Flatt e");
  out << buf;
  for (const AnalyzedPoint& ap : a.points) {
    std::snprintf(buf, sizeof buf, "  %14s %8s %20s %12s %9s %11s %12s\n",
                  number(ap.point.x).c_str(), fmt("%.2fx", ap.scale).c_str(),
                  fmt("%.4g samples/s", ap.point.samples_per_s).c_str(),
                  format_duration(Seconds(ap.point.step_time_s)).c_str(),
                  fmt("%.3fx", ap.speedup).c_str(), percent(ap.efficiency).c_str(),
                  ap.karp_flatt ? fmt("%.3g %%", *ap.karp_flatt * 100).c_str() : "-");
    out << buf;
  }

  const auto fit_lines = [&](const SerialFractionFit& f) {
    out << "  serial fraction f = " << fmt("%.4g", f.serial_fraction) << " ("
        << fmt("%.3g %%", f.serial_fraction * 100) << " of the baseline's time)\n";
    out << "  " << fmt("%.0f %%", f.confidence * 100) << " interval ["
        << fmt("%.4g", f.interval_low) << ", " << fmt("%.4g", f.interval_high)
        << "] (Student's t = " << fmt("%.3f", f.t_quantile) << ", " << f.degrees_of_freedom
        << " degree" << (f.degrees_of_freedom == 1 ? "" : "s") << " of freedom)\n  fit error "
        << fmt("%.3gx", f.rms_residual) << " RMS on the speedup\n";
  };
  const bool amdahl_first = a.kind != ScalingKind::kWeak;
  out << "\nAmdahl's law (Amdahl 1967), S(n) = 1 / (f + (1 - f) / n)"
      << (amdahl_first ? ", the model of strong scaling:" : ":") << "\n";
  fit_lines(a.amdahl);
  if (const auto limit = amdahl_limit(a.amdahl.serial_fraction))
    out << "  speedup limit 1/f = " << fmt("%.4gx", *limit)
        << " the baseline, however far x grows: at "
        << "most " << fmt("%.0f samples/s", *limit * base.point.samples_per_s) << "\n";
  else
    out << "  no speedup limit: the fitted f is not positive (scaling at or above ideal)\n";
  if (a.batch_ceiling) {
    out << "  batch ceiling " << fmt("%.4gx", *a.batch_ceiling) << ": " << a.batch_ceiling_evidence
        << "\n";
    const double limit = *a.speedup_limit();
    out << "  the limit is therefore " << fmt("%.4gx", limit) << " ("
        << (limit == *a.batch_ceiling ? "the batch ceiling" : "Amdahl's 1/f")
        << ", the smaller): at most " << fmt("%.0f samples/s", limit * base.point.samples_per_s)
        << "\n";
  }
  out << "\nGustafson's law (Gustafson 1988), S(n) = n - f (n - 1)"
      << (amdahl_first ? ":" : ", the model of weak scaling:") << "\n";
  fit_lines(a.gustafson);

  out << "\nWhere the efficiency goes (percentage points lost against the baseline, by cause):\n";
  std::snprintf(buf, sizeof buf, "  %14s %11s %9s %13s %9s %10s %9s%s\n",
                axis.substr(0, 14).c_str(), "efficiency", "compute", "exposed comm", "bubble",
                "straggler", "other", a.failures_modelled ? "     failures   with failures" : "");
  out << buf;
  for (const AnalyzedPoint& ap : a.points) {
    char failures[64] = "";
    if (a.failures_modelled)
      std::snprintf(failures, sizeof failures, " %12s %15s", points(ap.loss.failures).c_str(),
                    percent(ap.efficiency_with_failures).c_str());
    std::snprintf(buf, sizeof buf, "  %14s %11s %9s %13s %9s %10s %9s%s\n",
                  number(ap.point.x).c_str(), percent(ap.efficiency).c_str(),
                  points(ap.loss.compute).c_str(), points(ap.loss.exposed_communication).c_str(),
                  points(ap.loss.pipeline_bubble).c_str(), points(ap.loss.straggler_wait).c_str(),
                  points(ap.loss.other).c_str(), failures);
    out << buf;
  }
  if (!a.failures_modelled)
    out << "  failures: none modelled (goodput 100 % at every point; add failures: to the "
           "scenario to see their cost)\n";

  if (!a.skipped.empty()) {
    out << "\nSkipped rows (only status ok counts; a does-not-fit configuration cannot run):\n";
    for (const SkippedRow& s : a.skipped)
      out << "  " << printable(s.config, 120) << ": " << s.status << ", exit " << s.exit_code
          << (s.error.empty() ? "" : ": " + printable(s.error, 200)) << "\n";
  }

  out << "\nHow to read this:\n"
         "  - speedup near the scale (efficiency near 100 %) is ideal scaling; the Karp-Flatt e "
         "is the\n"
         "    serial fraction each point implies on its own: a constant e points to a fixed "
         "serial part,\n"
         "    an e that grows with x to overhead that grows with the job (communication, "
         "bubbles).\n"
         "  - f is a fraction of the baseline's step, so the limit 1/f multiplies the baseline's "
         "throughput.\n"
         "  - the loss columns add up to 100 % - efficiency: the extra time per sample each "
         "cause costs\n"
         "    compared with the baseline; a negative value means that cause is cheaper than at "
         "the baseline.\n"
         "  - failures (when modelled): efficiency with failures = efficiency x goodput / the "
         "baseline's goodput.\n";
  return out.str();
}

json analysis_to_json(const ScalingAnalysis& a) {
  json points = json::array();
  for (const AnalyzedPoint& ap : a.points) {
    const ScalingPoint& p = ap.point;
    json j = {{"config", p.config},
              {"x", p.x},
              {"gpus", p.gpus},
              {"scale", ap.scale},
              {"samples_per_s", p.samples_per_s},
              {"step_time_s", p.step_time_s},
              {"speedup", ap.speedup},
              {"efficiency", ap.efficiency},
              {"karp_flatt_serial_fraction", ap.karp_flatt ? json(*ap.karp_flatt) : json()},
              {"breakdown_s",
               {{"compute", p.compute_s},
                {"exposed_communication", p.exposed_communication_s},
                {"pipeline_bubble", p.pipeline_bubble_s},
                {"straggler_wait", p.straggler_wait_s},
                {"other", p.other_s}}},
              {"goodput", p.goodput.value_or(1)},
              {"efficiency_loss",
               {{"compute", ap.loss.compute},
                {"exposed_communication", ap.loss.exposed_communication},
                {"pipeline_bubble", ap.loss.pipeline_bubble},
                {"straggler_wait", ap.loss.straggler_wait},
                {"other", ap.loss.other},
                {"failures", ap.loss.failures}}},
              {"efficiency_with_failures", ap.efficiency_with_failures}};
    j["global_batch_size"] = p.global_batch_size ? json(*p.global_batch_size) : json();
    points.push_back(std::move(j));
  }
  json skipped = json::array();
  for (const SkippedRow& s : a.skipped)
    skipped.push_back({{"config", s.config},
                       {"status", s.status},
                       {"exit_code", s.exit_code},
                       {"error", s.error}});
  json amdahl = fit_json(a.amdahl);
  const auto limit = amdahl_limit(a.amdahl.serial_fraction);
  amdahl["speedup_limit"] = limit ? json(*limit) : json();
  const auto offered = a.speedup_limit();
  return {{"file", a.file},
          {"x_key", a.x_key},
          {"scaling", scaling_kind_name(a.kind)},
          {"scaling_evidence", a.kind_evidence},
          {"baseline_x", a.points.front().point.x},
          {"points", points},
          {"amdahl", amdahl},
          {"gustafson", fit_json(a.gustafson)},
          {"batch_ceiling", a.batch_ceiling ? json{{"scale", *a.batch_ceiling},
                                                   {"evidence", a.batch_ceiling_evidence}}
                                            : json()},
          {"speedup_limit", offered ? json(*offered) : json()},
          {"failures_modelled", a.failures_modelled},
          {"skipped", skipped},
          {"dropped_partial_lines", a.dropped_partial_lines}};
}

}  // namespace dtsim::driver
