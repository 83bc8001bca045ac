// Scaling analysis of a sweep (`dtsim analyze`): speedup and efficiency against the GPU count or
// any varied key, Amdahl and Gustafson fits of the serial fraction, the Karp-Flatt metric per
// point, and where the efficiency goes. The text report and the JSON live here, with no Qt; the
// plots (gui/plot) draw from the same ScalingAnalysis.
//
// Contract:
// - Speedup is a throughput ratio against the point with the smallest x (the baseline):
//   S = samples_per_s(x) / samples_per_s(x0), and the scale is n = x / x0. With a fixed global
//   batch (strong scaling) S is the classic T(x0) / T(x); with a batch that grows with n (weak
//   scaling) it is Gustafson's scaled speedup. Efficiency E = S / n (a fraction).
// - The serial fraction f of both fits is a fraction of the baseline's time, not of a single
//   GPU's: the baseline plays the role of "one processor".
// - Amdahl (Amdahl 1967): S = 1 / (f + (1 - f) / n). Since 1/S - 1/n = f (1 - 1/n) is linear in
//   f, f is fitted by least squares through the origin on that form (Eigen), which recovers f
//   exactly from noise-free data. Gustafson (Gustafson 1988): S = n - f (n - 1), fitted the same
//   way on n - S = f (n - 1). Each fit has a two-sided confidence interval from Student's t with
//   m - 1 degrees of freedom, where m counts the points with n > 1.
// - Karp-Flatt (Karp & Flatt 1990): e = (1/S - 1/n) / (1 - 1/n) per point; undefined at n = 1.
// - Efficiency loss by cause: a point's cost per sample is n / samples_per_s (scale-seconds per
//   sample), split by the shares of its step-time breakdown. Cause k's loss is
//   (cost_k(x) - cost_k(x0)) / cost(x); the five causes sum to 1 - E exactly. A negative loss
//   means that cause is cheaper per sample than at the baseline. Failures come on top:
//   E_with_failures = E * goodput(x) / goodput(x0), and their loss is E - E_with_failures.
// - Batch ceiling: under strong scaling whose data parallelism grows with x, the global batch B
//   holds at most B replicas (one sample each), so n <= B / dp(x0); the limit offered is the
//   smaller of that and Amdahl's 1/f.
// - Only rows with status ok count; the others are listed as skipped. Bad input throws
//   InputError naming the file (and the row): an unknown or non-numeric x key, a non-positive
//   or repeated x, a row without throughput, and fewer than kMinimumPoints ok rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::driver {

struct ResultsFile;

// A baseline and two scaled points: the fewest that give a fit and its interval (one degree of
// freedom).
inline constexpr int kMinimumPoints = 3;

// What the analysis reads from one ok row.
struct ScalingPoint {
  std::string config;                       // the row's configuration id ("cluster.nodes=4")
  double x = 0;                             // the value of the x key
  double gpus = 0;                          // config.gpus (0 when absent)
  std::optional<double> global_batch_size;  // config.global_batch_size, samples
  std::optional<double> data_parallel;      // config.dp, replicas
  double samples_per_s = 0;                 // throughput.samples_per_s
  double step_time_s = 0;
  double compute_s = 0, exposed_communication_s = 0, pipeline_bubble_s = 0, straggler_wait_s = 0,
         other_s = 0;             // breakdown_s.*
  std::optional<double> goodput;  // reliability.goodput, a fraction, when present
};

enum class ScalingKind {
  kStrong,   // the global batch is the same at every point
  kWeak,     // the global batch grows in proportion to the scale n
  kMixed,    // the batch changes, but not in proportion to n
  kUnknown,  // the rows carry no config.global_batch_size
};
const char* scaling_kind_name(ScalingKind kind);  // "strong", "weak", "mixed", "unknown"

// A least-squares fit of one serial fraction.
struct SerialFractionFit {
  double serial_fraction = 0;  // f, a fraction of the baseline's time
  double standard_error = 0;   // of f
  double confidence = 0.95;    // of the interval
  double interval_low = 0, interval_high = 0;
  int degrees_of_freedom = 0;  // points with n > 1, minus one
  double t_quantile = 0;       // Student's t at (1 + confidence) / 2
  double rms_residual = 0;     // root mean square of the measured minus the fitted speedup, x
};

// Amdahl's speedup limit 1/f; nullopt when f <= 0 (no limit).
std::optional<double> amdahl_limit(double serial_fraction);
double amdahl_speedup(double scale, double serial_fraction);     // 1 / (f + (1 - f) / n)
double gustafson_speedup(double scale, double serial_fraction);  // n - f (n - 1)
// (1/S - 1/n) / (1 - 1/n); nullopt at n = 1, where it is 0/0.
std::optional<double> karp_flatt(double scale, double speedup);

// The fits over (scale, speedup) pairs: scales >= 1, at least two of them > 1 (else InputError).
SerialFractionFit fit_amdahl(const std::vector<double>& scale, const std::vector<double>& speedup,
                             double confidence = 0.95);
SerialFractionFit fit_gustafson(const std::vector<double>& scale,
                                const std::vector<double>& speedup, double confidence = 0.95);

// The p-quantile of Student's t with `degrees_of_freedom` (> 0), for 0 < p < 1.
double student_t_quantile(double p, int degrees_of_freedom);

// Efficiency lost relative to the baseline, by cause (fractions; see the contract).
struct EfficiencyLoss {
  double compute = 0, exposed_communication = 0, pipeline_bubble = 0, straggler_wait = 0, other = 0;
  double failures = 0;  // E - E_with_failures
};

struct AnalyzedPoint {
  ScalingPoint point;
  double scale = 1;                  // n = x / x0
  double speedup = 1;                // S, x the baseline's throughput
  double efficiency = 1;             // S / n, a fraction
  std::optional<double> karp_flatt;  // e, a fraction; nullopt at the baseline
  EfficiencyLoss loss;
  double efficiency_with_failures = 1;  // E * goodput / goodput of the baseline
};

struct SkippedRow {
  std::string config;
  std::string status;  // error | timeout
  int exit_code = 0;
  std::string error;
};

struct ScalingAnalysis {
  std::string file;  // empty when analysed from points
  std::string x_key = "config.gpus";
  ScalingKind kind = ScalingKind::kUnknown;
  std::string kind_evidence;          // "the global batch is 512 samples at every point"
  std::vector<AnalyzedPoint> points;  // by increasing x; points[0] is the baseline
  std::vector<SkippedRow> skipped;
  int dropped_partial_lines = 0;
  bool failures_modelled = false;  // some point's goodput is below 1
  SerialFractionFit amdahl, gustafson;
  // Strong scaling that grows data parallelism: a global batch of B samples holds at most B
  // replicas of one sample each, so the scale (and the speedup, S <= n) cannot pass B / dp of
  // the baseline however many GPUs are added. nullopt where that does not bind the series.
  std::optional<double> batch_ceiling;
  std::string batch_ceiling_evidence;
  // What the analysis offers as the limit: the smaller of Amdahl's 1/f and the batch ceiling;
  // nullopt when neither applies.
  std::optional<double> speedup_limit() const;
};

// The analysis of ok points (any order). InputError (naming `file` when given) for fewer than
// kMinimumPoints, a non-positive or repeated x, or a non-positive throughput.
ScalingAnalysis analyze_points(std::vector<ScalingPoint> points, const std::string& x_key,
                               const std::string& file = "");

// The analysis of a results file read by read_results(): ok rows become points along `x_key`
// (a varied key or a result key such as config.gpus), the others are listed as skipped.
ScalingAnalysis analyze_results(const ResultsFile& results, const std::string& x_key);

// One scaling series of a results file that varies more than x: the rows that share the values
// of the `by` keys, as a plotting tool's hue groups them.
struct ScalingSeries {
  std::vector<std::pair<std::string, std::string>> by;  // key, value: what the rows share
  std::string label;                                    // "training.recompute=full"
  ScalingAnalysis analysis;  // empty (no points) when `unanalysed` says why
  // Why a series of a split has no analysis: none of its rows is ok (every configuration
  // failed or does not fit); its rows are in analysis.skipped. Empty for an analysed series.
  std::string unanalysed;
};

// The series of a results file along `x_key`. `by` names the keys that split the rows; empty
// means: every varied key, other than x, whose values change among rows of one x (a key tied
// to x, such as cluster.nodes along config.gpus, does not split). With no such key the file is
// one series, as analyze_results() gives it. `where` (KEY=VALUE each) keeps only matching rows
// first. A series none of whose rows is ok is listed unanalysed; InputError, naming the file and
// the series, for a key that no row has, a series with too few ok rows, or no series analysed.
std::vector<ScalingSeries> analyze_series(const ResultsFile& results, const std::string& x_key,
                                          std::vector<std::string> by = {},
                                          const std::vector<std::string>& where = {});

// "GPUs" for config.gpus, else the key itself: the x axis's name in reports and plots.
std::string x_axis_name(const std::string& x_key);

// The text report: units on every number, and a short "how to read this".
std::string render_analysis(const ScalingAnalysis& analysis);
// The same as JSON (fractions as fractions, every key naming its unit).
nlohmann::json analysis_to_json(const ScalingAnalysis& analysis);

}  // namespace dtsim::driver
