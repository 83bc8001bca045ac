// dtsim compare: signed errors per metric and per op kind between two results, and the
// --max-error gate's exit status.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "core/base/error.h"
#include "driver/compare.h"
#include "tests/support/scratch_dir.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;

// dtsim simulate --json of the default scenario with `overrides`, written to a file in the
// test's scratch folder.
std::string result_file(const std::string& name, const std::vector<std::string>& overrides) {
  const fs::path path = dtsim::testing::scratch_dir().path() / ("compare_" + name + ".json");
  cli::SimulateOptions o;
  o.scenario = DTSIM_SOURCE_DIR "/scenarios/default.yaml";
  o.overrides = overrides;
  o.overrides.push_back("simulate.engine=analytic");
  o.json = true;
  std::ostringstream out;
  EXPECT_EQ(cli::run_simulate(o, out), 0);
  std::ofstream(path) << out.str();
  return path.string();
}

nlohmann::json read(const std::string& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

TEST(Compare, SignedErrorsPerMetricAndOpKind) {
  const std::string fast = result_file("fast", {});
  const std::string slow = result_file("slow", {"cluster.gpu.gemm_efficiency=0.3"});
  const driver::Comparison c = driver::compare_results(slow, fast);
  const nlohmann::json p = read(slow), m = read(fast);
  ASSERT_EQ(c.metrics.size(), 6u);
  EXPECT_EQ(c.metrics[0].name, "step time");
  ASSERT_TRUE(c.metrics[0].error);
  const double expected = (p["step_time_s"].get<double>() - m["step_time_s"].get<double>()) /
                          m["step_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(*c.metrics[0].error, expected);
  EXPECT_GT(*c.metrics[0].error, 0.1);  // slower GEMMs: the prediction is slower
  // A metric both sides have as 0 (no pipeline) has error 0, not undefined.
  EXPECT_EQ(c.metrics[3].name, "pipeline bubble");
  EXPECT_EQ(c.metrics[3].error.value_or(-1), 0.0);
  // GEMM time grows, attention (its own efficiency) does not.
  bool saw_gemm = false;
  for (const auto& k : c.by_kind) {
    if (k.name == "gemm") {
      saw_gemm = true;
      EXPECT_GT(k.error.value_or(0), 0.5);
    }
    if (k.name == "attention") {
      EXPECT_NEAR(k.error.value_or(1), 0.0, 1e-12);
    }
  }
  EXPECT_TRUE(saw_gemm);

  // The gate: exit 1 beyond the limit, 0 within it.
  cli::CompareOptions o;
  o.predicted = slow;
  o.measured = fast;
  std::ostringstream out;
  o.max_error_percent = expected * 100 / 2;
  EXPECT_EQ(cli::run_compare(o, out), 1);
  o.max_error_percent = expected * 100 * 2;
  EXPECT_EQ(cli::run_compare(o, out), 0);
  o.json = true;
  std::ostringstream js;
  EXPECT_EQ(cli::run_compare(o, js), 0);
  const nlohmann::json j = nlohmann::json::parse(js.str());
  EXPECT_TRUE(j["within_limit"].get<bool>());
  EXPECT_DOUBLE_EQ(j["metrics"][0]["error_fraction"].get<double>(), expected);
}

// Results of different jobs compare, with a warning naming each key that differs; results of
// one job under different hardware figures compare without one.
TEST(Compare, WarnsWhenTheResultsAreOfDifferentJobs) {
  const std::string base = result_file("base", {});
  const std::string tp2 = result_file("tp2", {"parallelism.tensor=2"});
  const driver::Comparison c = driver::compare_results(tp2, base);
  bool tp = false, dp = false;
  for (const auto& w : c.warnings) {
    tp = tp || w.rfind("config.tp differs: 2 in the prediction, 1 in the measurement", 0) == 0;
    dp = dp || w.rfind("config.dp differs", 0) == 0;
  }
  EXPECT_TRUE(tp && dp) << ::testing::PrintToString(c.warnings);
  const std::string slow = result_file("slow_gemm", {"cluster.gpu.gemm_efficiency=0.3"});
  EXPECT_TRUE(driver::compare_results(slow, base).warnings.size() == 1)
      << "only the GPU's name (with gemm_efficiency set) differs";
}

TEST(Compare, ErrorUndefinedWhereOnlyThePredictionHasTime) {
  const std::string a = result_file("a", {});
  nlohmann::json j = read(a);
  j["breakdown_s"]["exposed_communication"] = 0;
  const std::string b = dtsim::testing::scratch_dir().file("compare_zero.json");
  std::ofstream(b) << j.dump();
  const driver::Comparison c = driver::compare_results(a, b);
  EXPECT_EQ(c.metrics[2].name, "exposed communication");
  EXPECT_FALSE(c.metrics[2].error.has_value());
}

TEST(Compare, ABadFileIsBadInputNamingItAndTheKey) {
  const std::string a = result_file("b", {});
  EXPECT_THROW(driver::compare_results(a, "/nonexistent/result.json"), InputError);
  nlohmann::json j = read(a);
  j.erase("step_time_s");
  const std::string broken = dtsim::testing::scratch_dir().file("compare_broken.json");
  std::ofstream(broken) << j.dump();
  try {
    driver::compare_results(a, broken);
    ADD_FAILURE() << "a result without step_time_s was compared";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics()[0].key_path, "step_time_s");
    EXPECT_EQ(e.diagnostics()[0].location.file, broken);
  }
}

}  // namespace
}  // namespace dtsim
