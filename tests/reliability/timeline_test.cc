// The whole-run timeline against figures computed by hand (issue 14, acceptance 4) and against
// the first-order checkpoint formulas (Young 1974; acceptance 5).
#include "core/reliability/timeline.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim::reliability {
namespace {

RunPolicy base_policy() {
  RunPolicy p;
  p.steps = 1000;
  p.step_time = Seconds(10);
  p.interval_steps = 100;  // a checkpoint every 1000 s of training
  p.mode = CheckpointMode::kSync;
  p.write_time = Seconds(30);
  p.detection_timeout = Seconds(600);
  p.restart_overhead = Seconds(300);
  p.data_parallel = 4;
  return p;
}

double sum_parts(const RunOutcome& o) {
  return (o.useful + o.lost.total()).value();
}

TEST(Timeline, NoFailuresCostsOnlyTheCheckpointWrites) {
  const RunPolicy p = base_policy();
  const RunOutcome o = simulate_run(p, {}, {}, 1);
  // 10 intervals of 100 steps; no checkpoint after the last step: 9 writes.
  EXPECT_DOUBLE_EQ(o.time_to_train.value(), 1000 * 10.0 + 9 * 30.0);
  EXPECT_DOUBLE_EQ(o.lost.checkpoint.value(), 9 * 30.0);
  EXPECT_EQ(o.interruptions, 0);
  EXPECT_EQ(o.checkpoints_written, 9);
  EXPECT_DOUBLE_EQ(o.goodput, 10000.0 / 10270.0);
  EXPECT_DOUBLE_EQ(o.step_time_p99.value(), 10.0);
}

// Acceptance 4: a failure at T loses exactly the work since the last checkpoint, plus the
// detection and restart time.
TEST(Timeline, ScriptedFailureLosesWorkSinceLastCheckpointPlusDetectionAndRestart) {
  const RunPolicy p = base_policy();
  // Checkpoint 3 (after step 300) is durable at 3 x 1000 + 3 x 30 = 3090 s. The failure at
  // 3500 s is 41 whole steps (410 s) into the next interval: it loses 410 s of work.
  const double t_fail = 3500, last_durable = 3 * 1000 + 3 * 30.0;
  const RunOutcome o = simulate_run(p, {}, {{Seconds(t_fail), ComponentClass::kSoftware, -1}}, 1);
  const double lost_work = t_fail - last_durable;
  EXPECT_DOUBLE_EQ(o.lost.rework.value(), lost_work);
  EXPECT_DOUBLE_EQ(o.lost.detection.value(), 600);
  EXPECT_DOUBLE_EQ(o.lost.restart.value(), 300);
  EXPECT_DOUBLE_EQ(o.time_to_train.value(), 10270.0 + lost_work + 600 + 300);
  EXPECT_EQ(o.interruptions, 1);
  EXPECT_EQ(o.interruptions_by_cause[static_cast<size_t>(ComponentClass::kSoftware)], 1);
  EXPECT_NEAR(sum_parts(o), o.time_to_train.value(), 1e-6);
  // The trace's log: the failure at T, its rework, training again after detection and restart.
  ASSERT_EQ(o.log.size(), 1u);
  EXPECT_DOUBLE_EQ(o.log[0].at.value(), t_fail);
  EXPECT_EQ(o.log[0].cause, ComponentClass::kSoftware);
  EXPECT_DOUBLE_EQ(o.log[0].rework.value(), lost_work);
  EXPECT_DOUBLE_EQ(o.log[0].resumed.value(), t_fail + 600 + 300);
}

TEST(Timeline, FailureDuringAsyncWriteRestoresThePreviousCheckpoint) {
  RunPolicy p = base_policy();
  p.mode = CheckpointMode::kAsync;
  p.snapshot_time = Seconds(2);
  p.write_time = Seconds(500);
  // Snapshot 1 at 1000 s (stall to 1002 s), durable at 1502 s. Snapshot 2 at 2002 s (to 2004 s),
  // durable at 2504 s. A failure at 2400 s finds checkpoint 2 still being written: it restores
  // checkpoint 1 (step 100, durable at 1502 s, but the work since 1002 s is lost).
  const RunOutcome o = simulate_run(p, {}, {{Seconds(2400), ComponentClass::kSoftware, -1}}, 1);
  EXPECT_DOUBLE_EQ(o.lost.rework.value(), 2400 - 1002 - 2.0);  // minus snapshot 2's stall
  EXPECT_DOUBLE_EQ(o.lost.checkpoint.value(), 9 * 2 + 2.0);    // 9 kept writes + the lost one
  EXPECT_NEAR(sum_parts(o), o.time_to_train.value(), 1e-6);
}

TEST(Timeline, NodeFailureWithoutSpareWaitsForRepairUnlessElastic) {
  RunPolicy p = base_policy();
  p.spare_nodes = 0;
  p.repair_time = Seconds(7200);
  const std::vector<ScriptedFailure> one_node{{Seconds(3500), ComponentClass::kNode, 2}};
  const RunOutcome waits = simulate_run(p, {}, one_node, 1);
  // Detected at 4100 s; the node is back at 3500 + 7200 s.
  EXPECT_DOUBLE_EQ(waits.lost.repair_wait.value(), 3500 + 7200 - 4100.0);
  EXPECT_EQ(waits.final_data_parallel, 4);

  p.elastic = true;
  const RunOutcome shrinks = simulate_run(p, {}, one_node, 1);
  EXPECT_DOUBLE_EQ(shrinks.lost.repair_wait.value(), 0);
  EXPECT_EQ(shrinks.final_data_parallel, 3);
  EXPECT_GT(shrinks.lost.elastic.value(), 0);
  EXPECT_DOUBLE_EQ(shrinks.step_time_p99.value(), 10.0 * 4 / 3);
  EXPECT_NEAR(sum_parts(shrinks), shrinks.time_to_train.value(), 1e-6);

  p.elastic = false;
  p.spare_nodes = 1;
  const RunOutcome spare = simulate_run(p, {}, one_node, 1);
  EXPECT_EQ(spare.spares_used, 1);
  EXPECT_DOUBLE_EQ(spare.lost.repair_wait.value(), 0);
}

TEST(Timeline, StepTimeSamplerGivesTheDistribution) {
  RunPolicy p = base_policy();
  p.steps = 20000;
  p.interval_steps = 0;
  // 19 steps in 20 take 1 s, one takes 3 s.
  p.step_time_sampler = [](std::mt19937_64& rng) {
    return Seconds(std::uniform_int_distribution<int>(0, 19)(rng) == 0 ? 3.0 : 1.0);
  };
  const RunOutcome o = simulate_run(p, {}, {}, 5);
  EXPECT_DOUBLE_EQ(o.step_time_p50.value(), 1);
  EXPECT_DOUBLE_EQ(o.step_time_p99.value(), 3);
  // Mean 1.1 s per step; the binomial count of slow steps has a standard deviation of 31.
  EXPECT_NEAR(o.time_to_train.value(), 20000 * 1.1, 2 * 4 * 31);
  EXPECT_DOUBLE_EQ(o.goodput, 1);
}

// The jump over whole checkpoint periods gives what stepping one step at a time gives (a
// sampler that always returns the step time turns the jump off).
TEST(Timeline, JumpingOverPeriodsAgreesWithSteppingOneByOne) {
  for (const CheckpointMode mode : {CheckpointMode::kSync, CheckpointMode::kAsync}) {
    RunPolicy p = base_policy();
    p.steps = 200000;
    p.mode = mode;
    p.snapshot_time = Seconds(1);
    p.write_time = Seconds(mode == CheckpointMode::kSync ? 30 : 400);
    p.spare_nodes = 1;
    p.repair_time = Seconds(20000);
    p.elastic = true;
    const std::vector<FailureProcess> f{{ComponentClass::kNode, 16, Seconds(16 * 20000.0)},
                                        {ComponentClass::kSoftware, 1, Seconds(50000)}};
    const RunOutcome jump = simulate_run(p, f, {}, 11);
    p.step_time_sampler = [](std::mt19937_64&) { return Seconds(10); };
    const RunOutcome step = simulate_run(p, f, {}, 11);
    EXPECT_GT(jump.interruptions, 50);
    EXPECT_EQ(jump.interruptions, step.interruptions);
    EXPECT_EQ(jump.checkpoints_written, step.checkpoints_written);
    EXPECT_EQ(jump.final_data_parallel, step.final_data_parallel);
    EXPECT_NEAR(jump.time_to_train.value(), step.time_to_train.value(),
                1e-9 * step.time_to_train.value());
    EXPECT_NEAR(jump.lost.rework.value(), step.lost.rework.value(),
                1e-9 * step.time_to_train.value());
  }
}

TEST(Timeline, SeededAndDeterministic) {
  RunPolicy p = base_policy();
  p.steps = 100000;
  const std::vector<FailureProcess> gpus{
      {ComponentClass::kGpu, 1024, Seconds(3.6e8), FailureDistribution::kWeibull, 0.8}};
  const RunOutcome a = simulate_run(p, gpus, {}, 7), b = simulate_run(p, gpus, {}, 7);
  EXPECT_GT(a.interruptions, 0);
  EXPECT_EQ(a.interruptions, b.interruptions);
  EXPECT_EQ(a.time_to_train.value(), b.time_to_train.value());
  EXPECT_NEAR(sum_parts(a), a.time_to_train.value(), 1e-6 * a.time_to_train.value());
}

TEST(Timeline, WeibullOfShapeOneIsExponential) {
  // Same mean: the failure count over a long run agrees within the Poisson noise.
  RunPolicy p = base_policy();
  p.steps = 2'000'000;
  p.interval_steps = 200;
  p.detection_timeout = p.restart_overhead = Seconds(0);
  const FailureProcess exp{ComponentClass::kGpu, 64, Seconds(64 * 36000.0)};
  FailureProcess wei = exp;
  wei.distribution = FailureDistribution::kWeibull;
  wei.shape = 1;
  for (const FailureProcess& f : {exp, wei}) {
    const RunOutcome o = simulate_run(p, {f}, {}, 3);
    // Failures over the wall time (which checkpoints and rework lengthen) at one per 36000 s.
    const double expected = o.time_to_train.value() / 36000;
    EXPECT_NEAR(static_cast<double>(o.interruptions), expected, 4 * std::sqrt(expected));
  }
}

// Acceptance 5: with exponential failures, the mean goodput over seeds matches the first-order
// formula, and Young's interval minimises the simulated lost time within one grid step.
struct FirstOrder {
  static constexpr double kStep = 1, kMtbf = 36000, kWrite = 60, kRecovery = 300;
  static RunPolicy policy(double interval_s) {
    RunPolicy p;
    p.steps = 20'000'000;  // 20 M s of training: about 550 failures
    p.step_time = Seconds(kStep);
    p.interval_steps = static_cast<int64_t>(std::llround(interval_s / kStep));
    p.write_time = Seconds(kWrite);
    p.detection_timeout = Seconds(0);
    p.restart_overhead = Seconds(kRecovery);
    return p;
  }
  static std::vector<FailureProcess> failures() {
    // 2048 nodes whose job MTBF is 10 h.
    return {{ComponentClass::kNode, 2048, Seconds(2048 * kMtbf)}};
  }
};

TEST(Timeline, MeanGoodputMatchesFirstOrderFormula) {
  const Seconds tau = young_interval(Seconds(FirstOrder::kWrite), Seconds(FirstOrder::kMtbf));
  EXPECT_NEAR(tau.value(), std::sqrt(2 * 60 * 36000.0), 1e-9);
  double sum = 0;
  constexpr int kSeeds = 8;
  for (int seed = 0; seed < kSeeds; ++seed)
    sum += simulate_run(FirstOrder::policy(tau.value()), FirstOrder::failures(), {},
                        static_cast<uint64_t>(seed))
               .goodput;
  const double expected = first_order_goodput(
      Seconds(FirstOrder::kWrite), tau, Seconds(FirstOrder::kMtbf), Seconds(FirstOrder::kRecovery));
  EXPECT_NEAR(sum / kSeeds, expected, 0.05 * expected);
  // Tighter than the acceptance: the lost fraction itself within 15%.
  EXPECT_NEAR(1 - sum / kSeeds, 1 - expected, 0.15 * (1 - expected));
}

TEST(Timeline, YoungIntervalMinimisesSimulatedLostTime) {
  const double tau =
      young_interval(Seconds(FirstOrder::kWrite), Seconds(FirstOrder::kMtbf)).value();
  // A geometric grid around the optimum, ratio 1.25; Young's interval is at index 6.
  std::vector<double> grid;
  for (int i = -6; i <= 6; ++i) grid.push_back(tau * std::pow(1.25, i));
  size_t best = 0;
  double best_lost = INFINITY;
  for (size_t i = 0; i < grid.size(); ++i) {
    double lost = 0;
    for (uint64_t seed = 0; seed < 4; ++seed) {  // the same failures for every interval
      const RunOutcome o =
          simulate_run(FirstOrder::policy(grid[i]), FirstOrder::failures(), {}, seed);
      lost += o.lost.total().value();
    }
    if (lost < best_lost) {
      best_lost = lost;
      best = i;
    }
  }
  EXPECT_LE(std::abs(static_cast<int>(best) - 6), 1) << "best interval " << grid[best] << " s";
}

TEST(Timeline, DalyIsCloseToYoungWhenCheckpointsAreCheap) {
  const Seconds c(60), m(36000);
  const double young = young_interval(c, m).value(), daly = daly_interval(c, m).value();
  EXPECT_NEAR(daly, young * (1 + std::sqrt(60 / 72000.0) / 3 + 60 / 72000.0 / 9) - 60, 1e-9);
  EXPECT_LT(std::abs(daly - young) / young, 0.05);
  EXPECT_DOUBLE_EQ(daly_interval(Seconds(100), Seconds(10)).value(), 10);
}

}  // namespace
}  // namespace dtsim::reliability
