// The whole-run stage through the driver: a scenario's failures and checkpoints become the
// reliability results, and the worked example of docs/user-guide.md runs (issue 14, acceptance 4
// and 7).
#include <gtest/gtest.h>

#include <cmath>

#include "core/report/report.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

// tests/bad_input/valid/base.yaml's job (gpt3-1.3b on 16 H100), with a whole run.
std::string scenario(const std::string& extra, const std::string& simulate = "{engine: analytic}") {
  return R"(name: whole-run
cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr, nics_per_node: 8}}
model: {preset: gpt3-1.3b}
training: {global_batch_size: 512, micro_batch_size: 4, steps: 2000}
simulate: )" +
         simulate + "\n" + extra;
}

driver::Prediction run(const std::string& text) {
  return driver::predict(load_scenario_text(text));
}

double sum_parts(const reliability::RunOutcome& o) {
  return (o.useful + o.lost.total()).value();
}

TEST(WholeRun, StepsAloneGiveGoodputOne) {
  const driver::Prediction p = run(scenario(""));
  ASSERT_TRUE(p.results.reliability);
  const auto& rel = *p.results.reliability;
  EXPECT_EQ(rel.steps, 2000);
  EXPECT_DOUBLE_EQ(rel.outcome.goodput, 1.0);
  EXPECT_DOUBLE_EQ(rel.outcome.time_to_train.value(), 2000 * p.results.step_time_s);
  EXPECT_EQ(rel.interval_steps, 0);  // no failures: no checkpoints
}

TEST(WholeRun, OneStepAndNoFailuresIsNoWholeRun) {
  const std::string text = R"(cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}
model: {preset: gpt3-1.3b}
training: {global_batch_size: 64, micro_batch_size: 4}
simulate: {engine: analytic}
)";
  const driver::Prediction p = run(text);
  EXPECT_FALSE(p.results.reliability);
  const auto j = results_to_json(p.results);
  EXPECT_EQ(j["reliability"]["modelled"], false);
  EXPECT_EQ(j["reliability"]["goodput"], 1);
}

// Acceptance 4 through a scenario: the checkpoint's write time comes from the model state
// (weights + Adam states of 1.32 B parameters) and the write bandwidth.
TEST(WholeRun, ScriptedFailureThroughTheScenario) {
  const driver::Prediction p = run(scenario(R"(failures: {events: [{at: 1000s, kind: gpu}],
           detection_timeout: 2min}
checkpoint: {interval: 100s, write_bandwidth: 10GBps, restart_overhead: 3min}
)"));
  ASSERT_TRUE(p.results.reliability);
  const auto& rel = *p.results.reliability;
  const double t = p.results.step_time_s;
  const double write = rel.checkpoint_size.value() / 10e9;
  EXPECT_DOUBLE_EQ(rel.checkpoint_size.value(), p.results.parameters * (2 + 12));
  const int64_t k = std::llround(100 / t);
  ASSERT_EQ(rel.interval_steps, k);
  // By hand: checkpoint i is durable at i x (k t + write). The failure at 1000 s loses the time
  // since the last one that ended before it.
  const double period = static_cast<double>(k) * t + write;
  const double last_durable = std::floor(1000 / period) * period;
  EXPECT_NEAR(rel.outcome.lost.rework.value(), 1000 - last_durable, 1e-6);
  EXPECT_DOUBLE_EQ(rel.outcome.lost.detection.value(), 120);
  EXPECT_DOUBLE_EQ(rel.outcome.lost.restart.value(), 180);
  // The trace gets the whole run as one more process: the failure at 1000 s, down for 300 s.
  nlohmann::json trace = chrome_trace(p.trace, p.job, p.cluster, p.model);
  add_whole_run(trace, rel);
  int failures = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "failure") continue;
    ++failures;
    EXPECT_EQ(e["name"], "gpu failure: detection and restart");
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1000e6);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 300e6);
    EXPECT_NEAR(e["args"]["rework_s"].get<double>(), 1000 - last_durable, 1e-6);
  }
  EXPECT_EQ(failures, 1);
  EXPECT_NEAR(rel.outcome.time_to_train.value(),
              rel.failure_free_time.value() + (1000 - last_durable) + 120 + 180, 1e-6);
  EXPECT_EQ(
      rel.outcome.interruptions_by_cause[static_cast<size_t>(reliability::ComponentClass::kGpu)],
      1);
  EXPECT_EQ(rel.outcome.spares_used, 1);  // a GPU failure swaps its node
}

TEST(WholeRun, SeveralSimulatedIterationsFeedTheStepTimes) {
  // The analytic engine repeats the step exactly, so drawing each step's time from three
  // simulated iterations gives the run of one.
  const auto one = run(scenario("failures: {gpu_mtbf: 2000h}\n"));
  const auto three =
      run(scenario("failures: {gpu_mtbf: 2000h}\n", "{engine: analytic, iterations: 3}"));
  ASSERT_TRUE(one.results.reliability && three.results.reliability);
  EXPECT_NEAR(three.results.reliability->outcome.time_to_train.value(),
              one.results.reliability->outcome.time_to_train.value(),
              1e-9 * one.results.reliability->outcome.time_to_train.value());
}

TEST(WholeRun, TokensGiveStepsFromTheGlobalBatchAndSequence) {
  const std::string text = R"(cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}
model: {preset: gpt3-1.3b}
training: {global_batch_size: 64, micro_batch_size: 4, tokens: 1e9}
simulate: {engine: analytic}
)";
  const driver::Prediction p = run(text);
  ASSERT_TRUE(p.results.reliability);
  // gpt3-1.3b's 2048-token sequences, 64 per step: ceil(1e9 / 131072) = 7630.
  EXPECT_EQ(p.results.reliability->steps, 7630);
}

TEST(WholeRun, WorkedExampleRuns) {
  const driver::Prediction p = driver::predict(
      driver::load(DTSIM_SOURCE_DIR "/scenarios/llama3-405b-16384-h100-failures.yaml"));
  ASSERT_TRUE(p.results.reliability);
  const auto& rel = *p.results.reliability;
  const auto& o = rel.outcome;
  // 419 unexpected interruptions in 1296 h: one every 3.09 h.
  EXPECT_NEAR(rel.job_mtbf.value() / 3600, 1296.0 / 419, 0.01);
  EXPECT_GT(o.interruptions, 0);
  EXPECT_NEAR(static_cast<double>(o.interruptions), rel.expected_interruptions,
              5 * std::sqrt(rel.expected_interruptions));
  EXPECT_GT(o.goodput, 0.5);
  EXPECT_LT(o.goodput, 1.0);
  EXPECT_NEAR(sum_parts(o), o.time_to_train.value(), 1e-6 * o.time_to_train.value());
  EXPECT_TRUE(rel.interval_is_young_daly);
  EXPECT_GE(rel.checkpoint_interval.value(), rel.checkpoint_write.value());
  const auto j = results_to_json(p.results);
  EXPECT_EQ(j["reliability"]["modelled"], true);
  for (const char* key : {"goodput", "expected_interruptions", "time_to_train_s",
                          "young_daly_interval_s", "checkpoint_interval_s", "step_time_p99_s"})
    EXPECT_TRUE(j["reliability"].contains(key)) << key;
  EXPECT_NE(render_summary(p.results).find("reliability (whole run"), std::string::npos);
}

}  // namespace
}  // namespace dtsim
