// Every scenario in scenarios/ loads and runs (one test per file, found at run time, so a new
// scenario is covered without editing this file).
#include <gtest/gtest.h>

#include <filesystem>

#include "driver/predict.h"

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

std::vector<std::string> scenario_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(DTSIM_SOURCE_DIR "/scenarios"))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

class EveryScenario : public ::testing::TestWithParam<std::string> {};

void check_results(const Results& r) {
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_GT(r.samples_per_s, 0);
  EXPECT_GT(r.mfu, 0);
  EXPECT_LT(r.mfu, 1) << "MFU above 100 % is impossible";
  EXPECT_GE(r.hfu, r.mfu);
  EXPECT_GT(r.parameters, 0);
  EXPECT_GT(r.peak_bytes_per_gpu, 0);
  const auto& b = r.breakdown_s;
  EXPECT_NEAR(b.compute + b.exposed_communication + b.pipeline_bubble + b.straggler_wait + b.other,
              r.step_time_s, 1e-9 * r.step_time_s);
  // Files whose name says so demonstrate the out-of-memory verdict; all others must fit.
}

TEST_P(EveryScenario, RunsOnBothEnginesAndTheyAgreeWithoutContention) {
  Prediction analytic = predict(load_scenario(GetParam(), {{"simulate.engine=analytic"}}));
  Prediction simgrid = predict(load_scenario(GetParam(), {{"simulate.engine=simgrid"}}));
  check_results(analytic.results);
  check_results(simgrid.results);
  // Files whose name says so demonstrate the out-of-memory verdict; all others must fit.
  EXPECT_EQ(analytic.results.fits, GetParam().find("-oom") == std::string::npos);
  EXPECT_EQ(simgrid.results.fits, analytic.results.fits);
  // The example clusters are contention-free for data parallelism (one job, non-blocking
  // networks), so the discrete-event engine must reproduce the closed form.
  EXPECT_NEAR(simgrid.results.step_time_s, analytic.results.step_time_s,
              0.01 * analytic.results.step_time_s);
  EXPECT_DOUBLE_EQ(simgrid.results.peak_bytes_per_gpu, analytic.results.peak_bytes_per_gpu);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, EveryScenario, ::testing::ValuesIn(scenario_files()),
                         [](const auto& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace dtsim::cli
