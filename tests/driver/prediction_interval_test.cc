// The prediction interval (driver/prediction_interval.h) against its closed form, and the rules
// that pick the comparable runs.
#include "driver/prediction_interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim::driver {
namespace {

// A run whose real step was exp(residual) times dtsim's prediction.
PublishedResidual run(const std::string& name, const std::string& family, int gpus,
                      double residual) {
  return {name, "H100", family, gpus, 100 * (std::exp(-residual) - 1)};
}

IntervalQuery query(const std::string& family, int gpus) {
  IntervalQuery q;
  q.scenario = "mine";
  q.gpu = "H100";
  q.family = family;
  q.gpus = gpus;
  return q;
}

TEST(PredictionInterval, IsTheStudentTPredictionIntervalOfTheLogResiduals) {
  // Residuals 0.1, 0, -0.1, 0.05, -0.05: mean 0, sample variance 0.025 / 4 = 0.00625; t at 0.9
  // for 4 degrees of freedom is 1.533; half width 1.533 x sqrt(0.00625) x sqrt(1 + 1/5).
  std::vector<PublishedResidual> set = {run("a", "3d", 64, 0.1), run("b", "3d", 64, 0.0),
                                        run("c", "3d", 64, -0.1), run("d", "3d", 64, 0.05),
                                        run("e", "3d", 64, -0.05)};
  const StepTimeInterval i = step_time_interval(10.0, query("3d", 64), set);
  const double half = 1.533 * std::sqrt(0.00625) * std::sqrt(1.2);
  EXPECT_EQ(i.runs, 5);
  EXPECT_DOUBLE_EQ(i.coverage, 0.8);
  EXPECT_NEAR(i.low_s, 10.0 * std::exp(-half), 1e-9);
  EXPECT_NEAR(i.high_s, 10.0 * std::exp(half), 1e-9);
}

TEST(PredictionInterval, SitsAboveAPredictionThatIsTooFastOnComparableRuns) {
  // Every comparable run was 10 % slower than predicted, give or take 1 %.
  std::vector<PublishedResidual> set;
  for (int k = 0; k < 6; ++k)
    set.push_back(run("r" + std::to_string(k), "dp", 8, std::log(1.1) + 0.01 * (k % 2 ? 1 : -1)));
  const StepTimeInterval i = step_time_interval(2.0, query("dp", 8), set);
  EXPECT_GT(i.low_s, 2.0);
  EXPECT_NEAR(std::sqrt(i.low_s * i.high_s), 2.2, 1e-9);            // centred on the mean residual
  EXPECT_NE(i.basis.find("-9.1 %"), std::string::npos) << i.basis;  // 1/1.1 - 1
}

TEST(PredictionInterval, NeverUsesTheRunItPredicts) {
  std::vector<PublishedResidual> set = {run("a", "3d", 64, 0.0),   run("b", "3d", 64, 0.01),
                                        run("c", "3d", 64, -0.01), run("d", "3d", 64, 0.02),
                                        run("e", "3d", 64, -0.02), run("mine", "3d", 64, 5.0)};
  const StepTimeInterval i = step_time_interval(1.0, query("3d", 64), set);
  EXPECT_EQ(i.runs, 5);
  EXPECT_LT(i.high_s, 1.1);  // the outlier named like the query did not widen it
}

TEST(PredictionInterval, WidensTheComparisonOnlyWhenTooFewRunsAreAlike) {
  std::vector<PublishedResidual> set;
  for (int k = 0; k < 5; ++k) set.push_back(run("small" + std::to_string(k), "3d", 8, 0.01 * k));
  set.push_back(run("big", "3d", 4096, 0.3));
  // 5 runs within 8x of 16 GPUs: the large run stays out.
  EXPECT_EQ(step_time_interval(1.0, query("3d", 16), set).runs, 5);
  // At 4096 GPUs only one run is that close: every 3d run, and the basis says so.
  const StepTimeInterval wide = step_time_interval(1.0, query("3d", 4096), set);
  EXPECT_EQ(wide.runs, 6);
  EXPECT_NE(wide.basis.find("too few within 8x"), std::string::npos) << wide.basis;
  // No dp run: every H100 run.
  const StepTimeInterval any = step_time_interval(1.0, query("dp", 16), set);
  EXPECT_EQ(any.runs, 6);
  EXPECT_NE(any.basis.find("too few dp runs"), std::string::npos) << any.basis;
}

TEST(PredictionInterval, SaysWhyWhereNoComparableRunsExist) {
  std::vector<PublishedResidual> set;
  for (int k = 0; k < 6; ++k) set.push_back(run("r" + std::to_string(k), "dp", 8, 0.0));
  IntervalQuery b200 = query("dp", 8);
  b200.gpu = "B200";
  const StepTimeInterval none = step_time_interval(1.0, b200, set);
  EXPECT_EQ(none.runs, 0);
  EXPECT_NE(none.basis.find("no comparable published runs"), std::string::npos);
  EXPECT_NE(none.basis.find("B200"), std::string::npos);

  Results cnn;
  cnn.gpu = "H100-SXM";
  const IntervalQuery q = interval_query(cnn, "resnet", "synchronous");
  EXPECT_FALSE(q.covered_kind);
  EXPECT_NE(step_time_interval(1.0, q, set).basis.find("resnet"), std::string::npos);
  EXPECT_FALSE(interval_query(cnn, "gpt", "async").covered_kind);
  EXPECT_TRUE(interval_query(cnn, "llama", "synchronous").covered_kind);
}

TEST(PredictionInterval, GroupsByGenerationAndFamily) {
  EXPECT_EQ(gpu_generation("A100-SXM-80GB"), "A100");
  EXPECT_EQ(gpu_generation("H100-SXM"), "H100");
  EXPECT_EQ(gpu_generation("h200"), "H200");
  EXPECT_EQ(parallelism_family(1, 1, 1, 1), "dp");
  EXPECT_EQ(parallelism_family(1, 1, 1, 3), "fsdp");
  EXPECT_EQ(parallelism_family(8, 1, 1, 3), "3d");
  EXPECT_EQ(parallelism_family(1, 4, 1, 0), "3d");
  EXPECT_EQ(parallelism_family(1, 4, 8, 1), "moe");
}

TEST(PredictionInterval, ReadsTheBuiltInManifest) {
  const auto& residuals = published_residuals();
  ASSERT_GE(residuals.size(), 15u);
  for (const PublishedResidual& r : residuals) {
    EXPECT_FALSE(r.run.empty());
    EXPECT_GT(r.gpus, 0) << r.run;
    EXPECT_TRUE(r.family == "dp" || r.family == "fsdp" || r.family == "3d" || r.family == "moe")
        << r.run;
  }
  EXPECT_THROW(parse_residuals("runs:\n  - file: x.yaml\n    gpu: H100\n", "t"),
               std::runtime_error);
}

}  // namespace
}  // namespace dtsim::driver
