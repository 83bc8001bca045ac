// The step times and memory of the example scenarios, pinned: each scenario in scenarios/ runs
// on the analytic engine and must reproduce the step time and the peak memory per GPU recorded
// here to a relative 1e-9. A change to a model that moves them is deliberate: update the table
// in the same commit and say why. The figures were recorded with `dtsim simulate FILE --engine
// analytic --json` (step_time_s, memory.peak_bytes_per_gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "driver/predict.h"

namespace dtsim {
namespace {

struct Pinned {
  std::string file;  // in scenarios/
  double step_time_s = 0;
  double peak_bytes_per_gpu = 0;
};
void PrintTo(const Pinned& p, std::ostream* os) {
  *os << p.file;
}

const std::vector<Pinned>& pinned() {
  static const std::vector<Pinned> table = {
      {"bert-large-dp32-v100-ethernet-powersgd.yaml", 0.31985155769653095, 17096000568.0},
      {"bert-large-dp32-v100-ethernet.yaml", 0.3311756795685435, 16424334784.0},
      {"default.yaml", 1.727319729739422, 72481808384.0},
      {"gpt3-1.3b-dp16-async-straggler.yaml", 0.38784776334587195, 56669954048.0},
      {"gpt3-1.3b-dp16-easgd.yaml", 0.24224357243147537, 77752426496.0},
      {"gpt3-1.3b-dp16-local-sgd.yaml", 0.23926320190230305, 72481808384.0},
      {"gpt3-1.3b-dp16-parameter-server.yaml", 0.5637735390272676, 56669954048.0},
      {"gpt3-1.3b-dp16-ssp-straggler.yaml", 0.2996850487536643, 72481808384.0},
      {"gpt3-1.3b-pp8-pipedream-2bw.yaml", 0.35905092665519334, 17785446400.0},
      {"gpt3-13b-zero3-64-a100.yaml", 8.894492507495661, 9366896704.0},
      {"gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml", 26.292636336664394, 59786031104.0},
      {"gpt3-2.7b-dp64-h100.yaml", 1.334549052221526, 53589960704.0},
      {"llama3-405b-16384-h100-failures.yaml", 7.441586642781421, 76783351808.0},
      {"llama3-405b-tp8-pp16-dp128-16384-h100.yaml", 7.441586642781421, 76783351808.0},
      {"llama3-70b-zero1-512-h100.yaml", 9.192673993840694, 38930006016.0},
      {"llama3-8b-dp64-h100-oom.yaml", 6.832923366188005, 153160851456.0},
      {"mixtral-8x7b-ep8-64-h100.yaml", 4.075590704192595, 48121905152.0},
      {"mlp-4gpu-pcie.yaml", 0.00936018862469565, 1252119400.0},
      {"resnet50-dp8-a100.yaml", 0.08223457488171815, 12198560224.0},
      {"tpu-style-torus-4x4x4.yaml", 0.23566260158074542, 72481808384.0},
  };
  return table;
}

// A new scenario needs its figures here.
TEST(PinnedResults, EveryExampleScenarioIsPinned) {
  for (const auto& e : std::filesystem::directory_iterator(DTSIM_SOURCE_DIR "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    const std::string file = e.path().filename().string();
    EXPECT_TRUE(std::any_of(pinned().begin(), pinned().end(),
                            [&](const Pinned& p) { return p.file == file; }))
        << file << " has no pinned results";
  }
}

class PinnedScenario : public ::testing::TestWithParam<Pinned> {};

TEST_P(PinnedScenario, ReproducesItsStepTimeAndMemory) {
  const Pinned& p = GetParam();
  const auto prediction = driver::predict(
      driver::load(DTSIM_SOURCE_DIR "/scenarios/" + p.file, {"simulate.engine=analytic"}));
  const Results& r = prediction.results;
  EXPECT_NEAR(r.step_time_s, p.step_time_s, 1e-9 * p.step_time_s);
  EXPECT_NEAR(r.peak_bytes_per_gpu, p.peak_bytes_per_gpu, 1e-9 * p.peak_bytes_per_gpu);
  // The scenarios that demonstrate the out-of-memory verdict still give their results.
  EXPECT_EQ(r.fits, p.file.find("-oom") == std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, PinnedScenario, ::testing::ValuesIn(pinned()),
                         [](const auto& info) {
                           std::string name =
                               std::filesystem::path(info.param.file).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace dtsim
