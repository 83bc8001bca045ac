// The scaling analysis (driver/analysis.h): the fits recover known serial fractions, the
// Karp-Flatt and Gustafson formulas, the strong/weak detection, the attribution of lost
// efficiency, and the refusals of bad input.
#include "driver/analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/base/error.h"
#include "driver/sweep_results.h"

namespace dtsim::driver {
namespace {

const std::vector<double> kScales = {1, 2, 4, 8, 16, 32, 64};

// Amdahl's law written out here, not through the code under test.
double amdahl(double n, double f) {
  return 1 / (f + (1 - f) / n);
}

// A point whose throughput is `speedup` times 100 samples/s, at x = 8 * n GPUs.
ScalingPoint point(double n, double speedup, double batch) {
  ScalingPoint p;
  p.config = "cluster.nodes=" + std::to_string(static_cast<int>(n));
  p.x = 8 * n;
  p.gpus = p.x;
  p.global_batch_size = batch;
  p.samples_per_s = 100 * speedup;
  p.step_time_s = batch / p.samples_per_s;
  p.compute_s = p.step_time_s;
  return p;
}

TEST(AmdahlFit, RecoversSerialFractionFromExactData) {
  for (double f : {0.0, 0.002, 0.037, 0.25}) {
    std::vector<double> s;
    for (double n : kScales) s.push_back(amdahl(n, f));
    const SerialFractionFit fit = fit_amdahl(kScales, s);
    EXPECT_NEAR(fit.serial_fraction, f, 1e-6) << "f = " << f;
    EXPECT_LE(fit.interval_low, f + 1e-9);
    EXPECT_GE(fit.interval_high, f - 1e-9);
    EXPECT_LT(fit.interval_high - fit.interval_low, 1e-6);
    EXPECT_EQ(fit.degrees_of_freedom, static_cast<int>(kScales.size()) - 2);
  }
}

// Measured speedups with 2 % multiplicative noise around Amdahl's law.
std::vector<double> noisy_amdahl(double f, std::mt19937& rng) {
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<double> s;
  for (double n : kScales) s.push_back(n == 1 ? 1 : amdahl(n, f) * (1 + noise(rng)));
  return s;
}

TEST(AmdahlFit, NoisyDataLieWithinTheReportedInterval) {
  const double f = 0.03;
  std::mt19937 rng(20240601);
  const SerialFractionFit fit = fit_amdahl(kScales, noisy_amdahl(f, rng));
  EXPECT_GT(fit.interval_high - fit.interval_low, 0);
  EXPECT_LE(fit.interval_low, f);
  EXPECT_GE(fit.interval_high, f);
  EXPECT_NE(fit.serial_fraction, f);  // the noise moved the estimate: the interval did the work
  EXPECT_GT(fit.rms_residual, 0);
}

TEST(AmdahlFit, IntervalCoversTheTrueFractionAboutAsOftenAsItsConfidence) {
  // Over many seeds a 95 % interval should hold f about 95 % of the time; the band allows for
  // the sampling error of 2000 trials and for the noise being multiplicative on S, not additive
  // on 1/S as the fit assumes.
  const double f = 0.05;
  std::mt19937 rng(7);
  int covered = 0;
  constexpr int kTrials = 2000;
  for (int t = 0; t < kTrials; ++t) {
    const SerialFractionFit fit = fit_amdahl(kScales, noisy_amdahl(f, rng));
    covered += fit.interval_low <= f && f <= fit.interval_high;
  }
  const double coverage = static_cast<double>(covered) / kTrials;
  EXPECT_GT(coverage, 0.90);
  EXPECT_LT(coverage, 0.99);
}

TEST(AmdahlFit, LimitIsTheInverseOfTheSerialFraction) {
  EXPECT_DOUBLE_EQ(*amdahl_limit(0.04), 25.0);
  EXPECT_FALSE(amdahl_limit(0.0).has_value());
  EXPECT_FALSE(amdahl_limit(-0.01).has_value());
  EXPECT_NEAR(amdahl_speedup(1e12, 0.04), 25.0, 1e-6);
}

TEST(AmdahlFit, NeedsTwoPointsBeyondTheBaseline) {
  EXPECT_THROW(fit_amdahl({1, 2}, {1, 1.9}), InputError);
}

TEST(GustafsonFit, RecoversSerialFractionFromExactData) {
  for (double f : {0.0, 0.01, 0.2}) {
    std::vector<double> s;
    for (double n : kScales) s.push_back(n - f * (n - 1));
    const SerialFractionFit fit = fit_gustafson(kScales, s);
    EXPECT_NEAR(fit.serial_fraction, f, 1e-9) << "f = " << f;
    EXPECT_LT(fit.interval_high - fit.interval_low, 1e-9);
  }
}

TEST(GustafsonSpeedup, EqualsItsFormula) {
  for (double n : {1.0, 2.0, 3.0, 16.0, 1000.0})
    for (double f : {0.0, 0.1, 0.5, 1.0})
      EXPECT_DOUBLE_EQ(gustafson_speedup(n, f), n - f * (n - 1));
  EXPECT_DOUBLE_EQ(gustafson_speedup(1, 0.3), 1.0);  // the baseline is its own reference
}

TEST(KarpFlatt, EqualsItsFormula) {
  for (double n : {2.0, 4.0, 7.0, 64.0})
    for (double s : {1.0, 1.5, 3.9, n}) {
      const auto e = karp_flatt(n, s);
      ASSERT_TRUE(e.has_value());
      EXPECT_DOUBLE_EQ(*e, (1 / s - 1 / n) / (1 - 1 / n)) << "n " << n << " S " << s;
    }
  EXPECT_DOUBLE_EQ(*karp_flatt(8, 8), 0.0);    // ideal scaling: no serial part
  EXPECT_FALSE(karp_flatt(1, 1).has_value());  // 0/0 at the baseline
}

TEST(KarpFlatt, IsAmdahlsFractionOnAmdahlData) {
  // Karp & Flatt 1990: on data that follow Amdahl's law exactly, e is f at every scale.
  for (double n : {2.0, 8.0, 128.0}) EXPECT_NEAR(*karp_flatt(n, amdahl(n, 0.07)), 0.07, 1e-12);
}

TEST(StudentT, MatchesPublishedQuantiles) {
  // Two-sided 95 % and 99 % critical values, as printed in any table of Student's t.
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.995, 10), 3.1693, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.025, 5), -2.5706, 1e-4);
  EXPECT_DOUBLE_EQ(student_t_quantile(0.5, 3), 0.0);
}

TEST(AnalyzePoints, StrongScalingSpeedupIsTheStepTimeRatio) {
  std::vector<ScalingPoint> points;
  for (double n : {4.0, 1.0, 2.0, 8.0}) points.push_back(point(n, amdahl(n, 0.1), 512));
  const ScalingAnalysis a = analyze_points(points, "config.gpus");
  EXPECT_EQ(a.kind, ScalingKind::kStrong);
  ASSERT_EQ(a.points.size(), 4u);
  EXPECT_EQ(a.points[0].point.x, 8);  // sorted; the smallest x is the baseline
  for (const AnalyzedPoint& p : a.points) {
    EXPECT_NEAR(p.speedup, a.points[0].point.step_time_s / p.point.step_time_s, 1e-12);
    EXPECT_NEAR(p.efficiency, p.speedup / p.scale, 1e-12);
  }
  EXPECT_NEAR(a.amdahl.serial_fraction, 0.1, 1e-9);
}

// Strong scaling by data parallelism: a batch of 512 over a baseline of 32 replicas can grow 16x
// at most, which caps the offered limit below Amdahl's 1/f = 100x; scaling that holds the
// replicas still (or weak scaling) has no ceiling.
TEST(AnalyzePoints, TheGlobalBatchCapsTheSpeedupLimit) {
  std::vector<ScalingPoint> points;
  for (double n : {1.0, 2.0, 4.0}) {
    points.push_back(point(n, amdahl(n, 0.01), 512));
    points.back().data_parallel = 32 * n;
  }
  const ScalingAnalysis a = analyze_points(points, "config.gpus");
  ASSERT_TRUE(a.batch_ceiling.has_value());
  EXPECT_DOUBLE_EQ(*a.batch_ceiling, 16);
  EXPECT_NEAR(*amdahl_limit(a.amdahl.serial_fraction), 100, 1e-6);
  EXPECT_DOUBLE_EQ(*a.speedup_limit(), 16);
  const std::string text = render_analysis(a);
  EXPECT_NE(text.find("batch ceiling 16x"), std::string::npos) << text;
  EXPECT_NE(text.find("the limit is therefore 16x (the batch ceiling"), std::string::npos) << text;
  EXPECT_EQ(analysis_to_json(a)["speedup_limit"], 16);
  for (auto& p : points) p.data_parallel = 32;
  EXPECT_FALSE(analyze_points(points, "config.gpus").batch_ceiling.has_value());
}

TEST(AnalyzePoints, BatchGrowingWithTheScaleIsWeakScaling) {
  std::vector<ScalingPoint> points;
  for (double n : {1.0, 2.0, 4.0}) points.push_back(point(n, n - 0.05 * (n - 1), 64 * n));
  const ScalingAnalysis a = analyze_points(points, "config.gpus");
  EXPECT_EQ(a.kind, ScalingKind::kWeak);
  EXPECT_NEAR(a.gustafson.serial_fraction, 0.05, 1e-9);
  points[2].global_batch_size = 100;
  EXPECT_EQ(analyze_points(points, "config.gpus").kind, ScalingKind::kMixed);
  points[2].global_batch_size.reset();
  EXPECT_EQ(analyze_points(points, "config.gpus").kind, ScalingKind::kUnknown);
}

TEST(AnalyzePoints, LossesByCauseAddUpToTheLostEfficiency) {
  std::vector<ScalingPoint> points;
  for (double n : {1.0, 2.0, 4.0, 8.0}) {
    ScalingPoint p = point(n, amdahl(n, 0.08), 256);
    // The compute shrinks ideally; communication, the bubble and straggler waits make up the
    // rest of the step.
    const double ideal_compute = (256 / 100.0) / n * 0.95;
    p.compute_s = ideal_compute;
    const double rest = p.step_time_s - ideal_compute;
    p.exposed_communication_s = 0.5 * rest;
    p.pipeline_bubble_s = 0.3 * rest;
    p.straggler_wait_s = 0.2 * rest;
    p.goodput = 1 - 0.01 * n;
    points.push_back(p);
  }
  const ScalingAnalysis a = analyze_points(points, "config.gpus");
  EXPECT_TRUE(a.failures_modelled);
  for (const AnalyzedPoint& p : a.points) {
    const EfficiencyLoss& l = p.loss;
    EXPECT_NEAR(
        l.compute + l.exposed_communication + l.pipeline_bubble + l.straggler_wait + l.other,
        1 - p.efficiency, 1e-12);
    EXPECT_NEAR(p.efficiency_with_failures, p.efficiency * p.point.goodput.value() / 0.99, 1e-12);
    EXPECT_NEAR(l.failures, p.efficiency - p.efficiency_with_failures, 1e-12);
  }
  // Compute scales ideally here, so it costs no efficiency; communication costs the most.
  const EfficiencyLoss& last = a.points.back().loss;
  EXPECT_NEAR(last.compute, 0, 1e-12);
  EXPECT_GT(last.exposed_communication, last.pipeline_bubble);
  EXPECT_GT(last.pipeline_bubble, last.straggler_wait);
  EXPECT_GT(last.straggler_wait, 0);
}

TEST(AnalyzePoints, RefusesTooFewRepeatedOrNonPositiveX) {
  std::vector<ScalingPoint> two = {point(1, 1, 64), point(2, 1.9, 64)};
  try {
    analyze_points(two, "config.gpus", "r.csv");
    FAIL() << "two points accepted";
  } catch (const InputError& e) {
    const std::string m = e.diagnostics().front().message;
    EXPECT_NE(m.find("at least 3"), std::string::npos) << m;
    EXPECT_NE(m.find("found 2"), std::string::npos) << m;
    EXPECT_EQ(e.diagnostics().front().location.file, "r.csv");
  }
  std::vector<ScalingPoint> repeated = {point(1, 1, 64), point(2, 1.9, 64), point(2, 1.8, 64)};
  EXPECT_THROW(analyze_points(repeated, "config.gpus"), InputError);
  std::vector<ScalingPoint> zero = {point(1, 1, 64), point(2, 1.9, 64), point(4, 3, 64)};
  zero[0].x = 0;
  EXPECT_THROW(analyze_points(zero, "config.gpus"), InputError);
}

TEST(RenderAnalysis, NamesUnitsAndExplainsItself) {
  std::vector<ScalingPoint> points;
  for (double n : {1.0, 2.0, 4.0}) points.push_back(point(n, amdahl(n, 0.1), 512));
  const std::string text = render_analysis(analyze_points(points, "config.gpus", "r.csv"));
  for (const char* expected :
       {"Scaling: strong", "samples/s", "GPUs", " %", "Amdahl 1967", "Gustafson 1988",
        "speedup limit 1/f = 10x", "How to read this", "pp"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  const nlohmann::json j = analysis_to_json(analyze_points(points, "config.gpus"));
  EXPECT_EQ(j["scaling"], "strong");
  EXPECT_NEAR(j["amdahl"]["speedup_limit"].get<double>(), 10, 1e-6);
  EXPECT_TRUE(j["points"][0]["karp_flatt_serial_fraction"].is_null());
  EXPECT_NEAR(j["points"][2]["karp_flatt_serial_fraction"].get<double>(), 0.1, 1e-9);
}

// Rows as read_results() returns them.
SweepRow row(const std::string& nodes, double n, const std::string& status = "ok") {
  SweepRow r;
  r.overrides = {{"cluster.nodes", nodes}};
  r.config = config_id(r.overrides);
  r.status = status;
  if (status != "ok") {
    r.exit_code = 2;
    r.error = "error: the configuration does not fit";
    return r;
  }
  const double s = amdahl(n, 0.05) * 100;
  r.result = {{"step_time_s", 512 / s},
              {"throughput", {{"samples_per_s", s}}},
              {"config", {{"gpus", 8 * n}, {"global_batch_size", 512}}},
              {"breakdown_s",
               {{"compute", 512 / s},
                {"exposed_communication", 0},
                {"pipeline_bubble", 0},
                {"straggler_wait", 0},
                {"other", 0}}},
              {"reliability", {{"goodput", 1.0}}}};
  return r;
}

ResultsFile results(std::vector<SweepRow> rows) {
  ResultsFile f;
  f.path = "scaling.csv";
  f.varied_keys = {"cluster.nodes"};
  f.rows = std::move(rows);
  return f;
}

TEST(AnalyzeResults, ReadsOkRowsAndListsTheOthers) {
  const ScalingAnalysis a = analyze_results(
      results({row("1", 1), row("2", 2), row("4", 4), row("8", 8, "error")}), "cluster.nodes");
  ASSERT_EQ(a.points.size(), 3u);
  EXPECT_EQ(a.points[2].point.x, 4);
  EXPECT_EQ(a.points[2].point.gpus, 32);
  ASSERT_EQ(a.skipped.size(), 1u);
  EXPECT_EQ(a.skipped[0].status, "error");
  EXPECT_NEAR(a.amdahl.serial_fraction, 0.05, 1e-9);
  // The default x, config.gpus, gives the same fit.
  EXPECT_NEAR(analyze_results(results({row("1", 1), row("2", 2), row("4", 4)}), "config.gpus")
                  .amdahl.serial_fraction,
              0.05, 1e-9);
}

std::string message_of(const ResultsFile& f, const std::string& x) {
  try {
    analyze_results(f, x);
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().front().location.file, "scaling.csv");
    return e.diagnostics().front().message;
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(AnalyzeResults, RefusesAnUnknownKey) {
  const std::string m =
      message_of(results({row("1", 1), row("2", 2), row("4", 4)}), "cluster.node");
  EXPECT_NE(m.find("no row has the key 'cluster.node'"), std::string::npos) << m;
  EXPECT_NE(m.find("cluster.nodes"), std::string::npos) << m;  // the suggestion
}

TEST(AnalyzeResults, RefusesANonNumericKey) {
  auto f = results({row("1", 1), row("2", 2), row("4", 4)});
  f.rows[1].overrides = {{"cluster.nodes", "two"}};
  const std::string m = message_of(f, "cluster.nodes");
  EXPECT_NE(m.find("'two', not a number"), std::string::npos) << m;
  EXPECT_NE(m.find("row 2"), std::string::npos) << m;
}

TEST(AnalyzeResults, SaysHowManyOkRowsThereWereWhenTooFew) {
  const std::string m =
      message_of(results({row("1", 1), row("2", 2), row("4", 4, "error"), row("8", 8, "timeout")}),
                 "cluster.nodes");
  EXPECT_NE(m.find("at least 3 ok rows"), std::string::npos) << m;
  EXPECT_NE(m.find("2 ok of 4 rows"), std::string::npos) << m;
}

}  // namespace
}  // namespace dtsim::driver
