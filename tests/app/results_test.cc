// The result contract (design.md section 5) and the Chrome trace file's structure.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "driver/predict.h"

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

const std::string kDefault = DTSIM_SOURCE_DIR "/scenarios/default.yaml";

nlohmann::json simulate_json(std::vector<std::string> overrides = {}) {
  SimulateOptions o;
  o.scenario = kDefault;
  o.overrides = std::move(overrides);
  o.json = true;
  std::ostringstream out;
  EXPECT_EQ(run_simulate(o, out), 0);
  return nlohmann::json::parse(out.str());
}

TEST(Results, JsonHasEveryContractKey) {
  nlohmann::json j = simulate_json();
  const std::vector<std::string> keys = {"engine",
                                         "scenario",
                                         "step_time_s",
                                         "throughput.samples_per_s",
                                         "throughput.tokens_per_s",
                                         "flops.model_tflops_per_gpu",
                                         "flops.hardware_tflops_per_gpu",
                                         "flops.mfu",
                                         "flops.hfu",
                                         "breakdown_s.compute",
                                         "breakdown_s.exposed_communication",
                                         "breakdown_s.pipeline_bubble",
                                         "breakdown_s.straggler_wait",
                                         "breakdown_s.other",
                                         "memory.peak_bytes_per_gpu",
                                         "memory.capacity_bytes",
                                         "memory.fits",
                                         "memory.per_category_bytes.weights",
                                         "memory.per_category_bytes.gradients",
                                         "memory.per_category_bytes.optimizer",
                                         "memory.per_category_bytes.activations",
                                         "memory.per_category_bytes.buffers",
                                         "model.parameters",
                                         "model.flops_per_step",
                                         "reliability.goodput",
                                         "reliability.expected_interruptions"};
  for (const auto& k : keys) {
    nlohmann::json::json_pointer ptr("/" + std::regex_replace(k, std::regex("\\."), "/"));
    EXPECT_TRUE(j.contains(ptr)) << "missing " << k;
  }
  EXPECT_EQ(j["engine"], "simgrid");  // the default engine
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["throughput"]["samples_per_s"].get<double>(),
                   512.0 / j["step_time_s"].get<double>());
}

TEST(Results, SameInputGivesByteIdenticalJson) {
  SimulateOptions o;
  o.scenario = kDefault;
  o.json = true;
  std::ostringstream a, b;
  run_simulate(o, a);
  run_simulate(o, b);
  EXPECT_EQ(a.str(), b.str());
}

TEST(Results, ChromeTraceIsWellFormedAndSpansDoNotOverlapPerStream) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dtsim_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  SimulateOptions o;
  o.scenario = kDefault;
  o.trace = (dir / "trace.json").string();
  o.output = (dir / "result.json").string();
  std::ostringstream out;
  ASSERT_EQ(run_simulate(o, out), 0);
  std::ifstream f(o.trace);
  nlohmann::json t = nlohmann::json::parse(f);
  ASSERT_TRUE(t.contains("traceEvents"));
  ASSERT_TRUE(t["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> per_stream;
  size_t complete = 0;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    ASSERT_TRUE(e.contains("tid"));
    if (e["ph"] != "X") continue;
    ++complete;
    ASSERT_TRUE(e.contains("ts"));
    ASSERT_TRUE(e.contains("dur"));
    ASSERT_GE(e["dur"].get<double>(), 0);
    per_stream[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
        {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  EXPECT_GT(complete, 100u);
  EXPECT_GE(per_stream.size(), 2u);  // compute and gradient-communication streams
  for (auto& [stream, spans] : per_stream) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-6)
          << "overlap on pid " << stream.first << " tid " << stream.second;
  }
  // -o wrote the same object that --json prints.
  std::ifstream rf(o.output);
  nlohmann::json written = nlohmann::json::parse(rf);
  EXPECT_EQ(written, simulate_json());
  std::filesystem::remove_all(dir);
}

TEST(Results, NoOverlapCostsMoreThanOverlap) {
  nlohmann::json overlapped = simulate_json();
  nlohmann::json serial = simulate_json({"training.overlap_grad_reduce=false"});
  EXPECT_GT(serial["step_time_s"].get<double>(), overlapped["step_time_s"].get<double>());
  EXPECT_GT(serial["breakdown_s"]["exposed_communication"].get<double>(),
            overlapped["breakdown_s"]["exposed_communication"].get<double>());
}

}  // namespace
}  // namespace dtsim::cli

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

// Narayanan et al. 2021: model FLOPs per step 72 B s l h^2 (1 + s/6h + V/12lh); with full
// recompute the hardware executes 96 B s l h^2 (1 + s/6h + V/16lh) (the blocks' forward twice,
// the logit layer once).
TEST(Results, FlopCountsFollowNarayananWithAndWithoutFullRecompute) {
  const double B = 64, s = 2048, l = 24, h = 2048, V = 51200;  // gpt3-1.3b
  const std::string yaml =
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\nmodel: {preset: gpt3-1.3b}\n"
      "training: {global_batch_size: 64, micro_batch_size: 2}\nsimulate: {engine: analytic}\n";
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const double recompute = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  Prediction plain = predict(load_scenario_text(yaml, "f.yaml"));
  Prediction full = predict(load_scenario_text(yaml, "f.yaml", {{"training.recompute=full"}}));
  EXPECT_NEAR(plain.results.model_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(plain.results.hardware_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(full.results.model_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(full.results.hardware_flops_per_step, recompute, 1e-9 * recompute);
  EXPECT_GT(full.results.hfu, full.results.mfu);
}

}  // namespace
}  // namespace dtsim::cli

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

TEST(Validate, ShowsPlacementAndTheCollectivesAutoPicks) {
  ValidateOptions o;
  o.scenario = DTSIM_SOURCE_DIR "/scenarios/default.yaml";
  o.overrides = {"cluster.nodes=1", "training.global_batch_size=256"};
  std::ostringstream out;
  ASSERT_EQ(run_validate(o, out), 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("group dp: [0, 1, 2, 3, 4, 5, 6, 7], spans 1 node(s)"), std::string::npos)
      << text;
  // One H100 node: NCCL's model picks NVLS for these large gradient buckets.
  // DDP's buckets: the first 1 MiB, then 25 MiB ones, of fp32 gradients (grad_dtype auto).
  EXPECT_NE(text.find("1 x all-reduce 1.00 MiB fp32: ring/LL"), std::string::npos) << text;
  EXPECT_NE(text.find("x all-reduce 25.00 MiB fp32: nvls/Simple"), std::string::npos) << text;
  EXPECT_NE(text.find("gradients    fp32 (auto for bf16)"), std::string::npos) << text;
  EXPECT_NE(text.find("valid: "), std::string::npos);
}

}  // namespace
}  // namespace dtsim::cli
