// Stragglers (issue 14): slow ranks and random transient slowdowns against closed forms, on the
// analytic and the SimGrid engine, and folding that stays exact when a replica is perturbed.
// SimGrid runs each simulation in a forked child (sim/simgrid_executor.h), so one test may run
// several.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/exec/analytic_executor.h"
#include "core/exec/compute_cost.h"
#include "core/report/report.h"
#include "core/strategy/layout.h"
#include "driver/predict.h"
#include "driver/rank_program.h"
#include "models/scenario_model.h"
#include "sim/simgrid_executor.h"
#include "sim_fixtures.h"

namespace dtsim {
namespace {

// Synchronous data parallelism over 16 H100s (2 nodes), gradient all-reduce after backward with
// no overlap: a step is forward + backward, the all-reduce, then the optimizer.
std::string dp_scenario(const std::string& engine, int iterations, const std::string& stragglers,
                        const std::string& bucket = "25MiB") {
  return "cluster:\n"
         "  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  intra_node: nvswitch\n"
         "  network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8}\n"
         "model: {preset: gpt3-1.3b}\n"
         "parallelism: {data: auto}\n"
         "training:\n  global_batch_size: 64\n  micro_batch_size: 4\n  precision: bf16\n"
         "  gradient_bucket: " +
         bucket +
         "\n  overlap_grad_reduce: false\n"
         "simulate: {engine: " +
         engine + ", iterations: " + std::to_string(iterations) +
         ", seed: 7}\n"
         "stragglers: " +
         stragglers + "\n";
}

Scenario scenario_from(const std::string& yaml) {
  return load_scenario_text(yaml, "straggler.yaml", {}, models::check_scenario);
}

driver::Prediction predict_text(const std::string& yaml) {
  return driver::predict(scenario_from(yaml));
}

// Compute time per step of one rank, by phase: the optimizer's kernels and the rest (forward and
// backward), from the trace of a run without stragglers.
struct ComputeSplit {
  double forward_backward_s = 0;
  double optimizer_s = 0;
};
ComputeSplit compute_split(const driver::Prediction& p, Rank rank) {
  ComputeSplit c;
  const Program* prog = p.job.program_for(rank);
  for (const Span& s : p.trace.spans) {
    if (s.rank != rank || s.kind != SpanKind::kCompute) continue;
    const Op& op = prog->streams[static_cast<size_t>(s.stream)].ops[s.op_index];
    (op.label.phase == Phase::kOptimizer ? c.optimizer_s : c.forward_backward_s) +=
        (s.end - s.start).value();
  }
  c.forward_backward_s /= p.trace.iterations;
  c.optimizer_s /= p.trace.iterations;
  return c;
}

// Acceptance 1: one rank at slowdown 1.3 raises the step by 0.3 x compute (every kernel of the
// slow rank takes 1.3 times as long and the all-reduce waits for it), and the other ranks spend
// the forward and backward part of it waiting: straggler_wait.
void expect_one_slow_rank(const std::string& engine) {
  const auto base = predict_text(dp_scenario(engine, 1, "[]"));
  const auto slow = predict_text(dp_scenario(engine, 1, "[{ranks: [5], slowdown: 1.3}]"));
  const double compute = base.results.breakdown_s.compute;
  const double expected = 0.3 * compute;
  const double increase = slow.results.step_time_s - base.results.step_time_s;
  EXPECT_NEAR(increase, expected, 0.02 * expected) << engine;
  EXPECT_EQ(base.results.breakdown_s.straggler_wait, 0) << engine;
  const ComputeSplit split = compute_split(base, 0);
  EXPECT_NEAR(slow.results.breakdown_s.straggler_wait, 0.3 * split.forward_backward_s,
              0.02 * 0.3 * split.forward_backward_s)
      << engine;
  // The breakdown still sums to the step.
  const Breakdown& b = slow.results.breakdown_s;
  EXPECT_NEAR(b.compute + b.exposed_communication + b.pipeline_bubble + b.straggler_wait + b.other,
              slow.results.step_time_s, 1e-9 * slow.results.step_time_s);
  // Per rank in the trace: every rank but the slow one waits at the all-reduce.
  std::set<Rank> waited;
  for (const Span& w : slow.trace.straggler_waits) waited.insert(w.rank);
  EXPECT_FALSE(waited.count(5)) << engine;
  EXPECT_TRUE(waited.count(0)) << engine;
}

TEST(Stragglers, OneSlowRankAnalytic) {
  expect_one_slow_rank("analytic");
}

// The Chrome trace marks each wait on the waiting rank's thread, with the op it waited for.
TEST(Stragglers, ChromeTraceShowsTheWaits) {
  const auto slow = predict_text(dp_scenario("analytic", 1, "[{ranks: [5], slowdown: 1.3}]"));
  const nlohmann::json trace = chrome_trace(slow.trace, slow.job, slow.cluster, slow.model);
  int waits = 0;
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "straggler_wait") {
      ++waits;
      EXPECT_GT(e["dur"].get<double>(), 0);
      EXPECT_FALSE(e["args"]["waited_for"].get<std::string>().empty());
    }
  EXPECT_EQ(waits, static_cast<int>(slow.trace.straggler_waits.size()));
  EXPECT_GT(waits, 0);
}

TEST(Stragglers, OneSlowRankSimGrid) {
  expect_one_slow_rank("simgrid");
}

TEST(Stragglers, SlowNodeIsEveryRankOfIt) {
  const auto by_node = predict_text(dp_scenario("analytic", 1, "[{nodes: [1], slowdown: 1.2}]"));
  const auto by_rank = predict_text(dp_scenario("analytic", 1, "[{ranks: [9], slowdown: 1.2}]"));
  EXPECT_NEAR(by_node.results.step_time_s, by_rank.results.step_time_s,
              1e-12 * by_rank.results.step_time_s);
}

// Acceptance 2: each of N ranks, independently with probability p per step, runs the step's
// kernels f times as long. The all-reduce makes every rank wait for the slowest, and a rank's
// optimizer (time a) ends its step k-1 right before its forward and backward (time b) of step k,
// so a step lasts comm + max over ranks of X_i = a F_i' + b F_i, with F_i' (step k-1) and F_i
// (step k) independent, f with probability p and 1 otherwise. X takes the values
//   v1 = a + b, v2 = a f + b, v3 = a + b f, v4 = (a + b) f   (a < b)
// with P(X <= v1) = (1-p)^2, P(X <= v2) = 1-p, P(X <= v3) = 1-p^2, so the maximum of N has
//   E[max] = v1 + (v2-v1)(1-(1-p)^(2N)) + (v3-v2)(1-(1-p)^N) + (v4-v3)(1-(1-p^2)^N).
// With a = 0 this is the b (1 + (f-1)(1-(1-p)^N)).
void expect_random_mean(const std::string& engine, int steps) {
  const double p = 0.02, f = 1.3;
  const int n = 16;
  // Large buckets: few collectives, so that 200 SimGrid steps stay small.
  const auto base = predict_text(dp_scenario(engine, 1, "[]", "1GiB"));
  const auto run = predict_text(dp_scenario(
      engine, steps,
      "[{random: {p: " + std::to_string(p) + ", slowdown: " + std::to_string(f) + "}}]", "1GiB"));
  const ComputeSplit c = compute_split(base, 0);
  const double a = c.optimizer_s, b = c.forward_backward_s;
  ASSERT_LT(a, b);
  const double comm = base.results.step_time_s - a - b;
  const double v1 = a + b, v2 = a * f + b, v3 = a + b * f, v4 = (a + b) * f;
  const double e_max = v1 + (v2 - v1) * (1 - std::pow(1 - p, 2 * n)) +
                       (v3 - v2) * (1 - std::pow(1 - p, n)) +
                       (v4 - v3) * (1 - std::pow(1 - p * p, n));
  const double expected = comm + e_max;
  EXPECT_NEAR(run.results.step_time_s, expected, 0.03 * expected) << engine;
  // The draws do slow some steps: the mean is above the unperturbed step.
  EXPECT_GT(run.results.step_time_s, base.results.step_time_s * 1.01) << engine;
  EXPECT_GT(run.results.breakdown_s.straggler_wait, 0) << engine;
}

TEST(Stragglers, RandomPerStepMatchesExpectedMaximumAnalytic) {
  expect_random_mean("analytic", 200);
}

TEST(Stragglers, RandomPerStepMatchesExpectedMaximumSimGrid) {
  expect_random_mean("simgrid", 200);
}

TEST(Stragglers, SameSeedSameRunOtherSeedOtherRun) {
  const std::string s = "[{random: {p: 0.05, slowdown: 1.5, per: op}}]";
  const auto one = predict_text(dp_scenario("analytic", 3, s));
  const auto two = predict_text(dp_scenario("analytic", 3, s));
  EXPECT_EQ(one.results.step_time_s, two.results.step_time_s);
  Scenario other = scenario_from(dp_scenario("analytic", 3, s));
  other.simulate.seed = 8;
  EXPECT_NE(driver::predict(std::move(other)).results.step_time_s, one.results.step_time_s);
}

// Throttling: slowed for the first half of each period; with a period far longer than the run,
// every step starts in the slowed half and the run is as if the ranks were slow.
TEST(Stragglers, ThrottleInItsSlowHalfIsASlowRank) {
  const auto throttled = predict_text(dp_scenario(
      "analytic", 2, "[{throttle: {ranks: [2], period: 10min, slowdown: 1.1, duty: 0.5}}]"));
  const auto slow = predict_text(dp_scenario("analytic", 2, "[{ranks: [2], slowdown: 1.1}]"));
  EXPECT_NEAR(throttled.results.step_time_s, slow.results.step_time_s,
              1e-9 * slow.results.step_time_s);
}

// Acceptance 3: a ring all-reduce over n single-GPU nodes (alpha 2 us, beta 25 GB/s per hop,
// testing::star_of) with one NIC at half its rate. Every ring step moves one chunk over every
// edge and waits for the slowest, so the bandwidth term is set by the degraded edge's beta/2:
//   t = 2(n-1) alpha + 2(n-1)/n x S / (beta/2).
TEST(Stragglers, DegradedNicSetsTheRingAllReduceTime) {
  const int n = 8;
  const double s = 256.0 * 1024 * 1024, alpha = 2e-6, beta = 25e9;
  const Cluster c = testing::star_of(n);
  const Job job = testing::concurrent_collectives({testing::first_ranks(n)}, Bytes(s), n);
  RunOptions options;
  Perturbation link;
  link.kind = Perturbation::Kind::kDegradedLink;
  link.node = 3;
  link.nic = 0;
  link.fraction = 0.5;
  options.perturbations.push_back(link);
  const double expected = 2 * (n - 1) * alpha + 2.0 * (n - 1) / n * s / (beta * link.fraction);
  const double nominal = 2 * (n - 1) * alpha + 2.0 * (n - 1) / n * s / beta;
  const double analytic = testing::longest_span(AnalyticExecutor().run(job, c, options));
  EXPECT_NEAR(analytic, expected, 1e-6 * expected);
  for (const std::string fidelity : {"chunk", "collective"}) {
    const double simgrid = testing::longest_span(
        sim::SimGridExecutor(
            sim::SimGridOptions{kFidelitySettingNames.from_valid(fidelity), DType::kBf16})
            .run(job, c, options));
    EXPECT_NEAR(simgrid, expected, 0.01 * expected) << fidelity;
    EXPECT_GT(simgrid, 1.5 * nominal) << fidelity;
  }
}

TEST(Stragglers, DegradedUplinksAreRefusedNotIgnored) {
  for (const std::string engine : {"analytic", "simgrid"}) try {
      predict_text(dp_scenario(engine, 1, "[{link: {node: 1, uplink: true}, fraction: 0.5}]"));
      FAIL() << "a degraded uplink ran on " << engine;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("uplink"), std::string::npos) << e.what();
    }
}

// Folding stays exact: TP 2 x PP 2 x DP 4 on 16 GPUs. The folded Job simulates replica 0's
// ranks, one TP rank per stage; a straggler at TP rank 1 of replica 2 moves the simulated TP
// position to 1 and adds replica 2 at that position, and no other rank; the step equals the
// unfolded Job's. Two stragglers at different TP positions unfold their replica whole.
driver::Plan plan_with(const std::string& yaml, const std::string& stragglers) {
  return driver::plan_scenario(scenario_from(yaml + "stragglers: " + stragglers + "\n"));
}

std::set<Rank> simulated_ranks(const Job& job) {
  std::set<Rank> out;
  for (const Program& p : job.programs) out.insert(p.rank);
  return out;
}

double folded_and_unfolded_end(const driver::Plan& plan, double* unfolded_end) {
  const RunOptions options = driver::run_options(plan.scenario);
  AnalyticExecutor engine;
  *unfolded_end = engine.run(driver::unfolded_job(plan), plan.cluster, options).makespan().value();
  return engine.run(plan.job, plan.cluster, options).makespan().value();
}

const char* kTpPpDpScenario =
    "cluster:\n"
    "  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  intra_node: nvswitch\n"
    "  network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8}\n"
    "model: {preset: gpt3-1.3b}\n"
    "parallelism: {tensor: 2, pipeline: 2, data: auto}\n"
    "training: {global_batch_size: 64, micro_batch_size: 4, overlap_grad_reduce: false}\n"
    "simulate: {engine: analytic}\n";

TEST(Stragglers, TwoStragglersAtTwoTpPositionsUnfoldTheirReplicaWhole) {
  const driver::Plan plain = plan_with(kTpPpDpScenario, "[]");
  const RankLayout layout = rank_layout(plain.scenario.parallelism);
  const Rank a = layout.rank(1, 0, 1, 2), b = layout.rank(0, 0, 0, 2);
  const driver::Plan perturbed =
      plan_with(kTpPpDpScenario,
                "[{ranks: [" + std::to_string(a) + ", " + std::to_string(b) + "], slowdown: 1.3}]");
  std::set<Rank> expected = simulated_ranks(plain.job);
  for (int pp = 0; pp < 2; ++pp)
    for (int tp = 0; tp < 2; ++tp) expected.insert(layout.rank(tp, 0, pp, 2));
  EXPECT_EQ(simulated_ranks(perturbed.job), expected);
  double unfolded_end = 0;
  const double folded_end = folded_and_unfolded_end(perturbed, &unfolded_end);
  EXPECT_NEAR(folded_end, unfolded_end, 1e-9 * unfolded_end);
}

TEST(Stragglers, OnlyThePerturbedReplicaIsUnfolded) {
  const std::string yaml = kTpPpDpScenario;
  const driver::Plan plain = plan_with(yaml, "[]");
  const RankLayout layout = rank_layout(plain.scenario.parallelism);
  const Rank slow = layout.rank(1, 0, 1, 2);  // TP rank 1 of stage 1 in replica 2
  const driver::Plan perturbed =
      plan_with(yaml, "[{ranks: [" + std::to_string(slow) + "], slowdown: 1.3}]");
  for (const Program& p : plain.job.programs)
    EXPECT_EQ(layout.coordinates(p.rank)[3], 0) << "the folded Job simulates replica 0";
  EXPECT_EQ(plain.job.programs.size(), 2u);  // one TP rank of each of the 2 stages
  std::set<Rank> expected;
  for (int pp = 0; pp < 2; ++pp)
    for (int dp : {0, 2}) expected.insert(layout.rank(1, 0, pp, dp));
  EXPECT_EQ(simulated_ranks(perturbed.job), expected);  // 4 of 16

  const RunOptions options = driver::run_options(perturbed.scenario);
  const Job unfolded = driver::unfolded_job(perturbed);
  AnalyticExecutor engine;
  const double folded_end =
      engine.run(perturbed.job, perturbed.cluster, options).makespan().value();
  const double unfolded_end = engine.run(unfolded, perturbed.cluster, options).makespan().value();
  EXPECT_NEAR(folded_end, unfolded_end, 1e-9 * unfolded_end);
  const double plain_end =
      engine.run(plain.job, plain.cluster, driver::run_options(plain.scenario)).makespan().value();
  const double plain_unfolded_end =
      engine.run(driver::unfolded_job(plain), plain.cluster, driver::run_options(plain.scenario))
          .makespan()
          .value();
  EXPECT_NEAR(plain_end, plain_unfolded_end, 1e-9 * plain_end);
  EXPECT_GT(folded_end, plain_end * 1.05);
}

// A straggler in replica 0: replica 1 stands for the unperturbed replicas instead.
TEST(Stragglers, AStragglerInReplicaZeroLetsReplicaOneStandForTheOthers) {
  const driver::Plan plain = plan_with(kTpPpDpScenario, "[]");
  const RankLayout layout = rank_layout(plain.scenario.parallelism);
  const Rank slow = layout.rank(1, 0, 0, 0);
  const driver::Plan perturbed =
      plan_with(kTpPpDpScenario, "[{ranks: [" + std::to_string(slow) + "], slowdown: 1.3}]");
  std::set<Rank> expected;
  for (int pp = 0; pp < 2; ++pp)
    for (int dp : {0, 1}) expected.insert(layout.rank(1, 0, pp, dp));
  EXPECT_EQ(simulated_ranks(perturbed.job), expected);
  double unfolded_end = 0;
  const double folded_end = folded_and_unfolded_end(perturbed, &unfolded_end);
  EXPECT_NEAR(folded_end, unfolded_end, 1e-9 * unfolded_end);
}

// The scenario key: every form binds, with nodes expanded to their ranks.
TEST(Stragglers, EveryFormBinds) {
  const Scenario sc = scenario_from(dp_scenario(
      "analytic", 1,
      "[{ranks: [3, 7], slowdown: 1.3}, {nodes: [1], slowdown: 1.2},"
      " {random: {p: 0.01, slowdown: 2.0, per: op, duration: 3}},"
      " {link: {node: 1, nic: 2}, fraction: 0.5}, {link: {node: 0, uplink: true}, fraction: 0.25},"
      " {throttle: {all: true, period: 10min, slowdown: 1.1, duty: 0.25}}]"));
  const auto& e = sc.stragglers.entries;
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0].kind, StragglerEntry::Kind::kSlow);
  EXPECT_EQ(e[0].ranks, (std::vector<int>{3, 7}));
  EXPECT_EQ(e[0].slowdown, 1.3);
  EXPECT_EQ(e[1].ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(e[2].kind, StragglerEntry::Kind::kRandom);
  EXPECT_EQ(e[2].probability, 0.01);
  EXPECT_TRUE(e[2].per_op);
  EXPECT_EQ(e[2].duration, 3);
  EXPECT_EQ(e[3].kind, StragglerEntry::Kind::kLink);
  EXPECT_EQ(e[3].node, 1);
  EXPECT_EQ(e[3].nic, 2);
  EXPECT_EQ(e[3].fraction, 0.5);
  EXPECT_EQ(e[4].nic, -1);
  EXPECT_EQ(e[5].kind, StragglerEntry::Kind::kThrottle);
  EXPECT_EQ(e[5].ranks.size(), 16u);
  EXPECT_EQ(e[5].period.value(), 600);
  EXPECT_EQ(e[5].duty, 0.25);
  // One perturbation per slow or throttled rank, one per random or link entry.
  EXPECT_EQ(driver::run_options(sc).perturbations.size(), 2u + 8u + 1u + 2u + 16u);
}

// Throttling's phase: with a period of two steps and duty 0.4, step 0 starts in the slowed part
// and step 1 (at phase 0.5) outside it: the run is one slow step and one nominal one.
TEST(Stragglers, ThrottlePhaseFollowsTheStepStart) {
  const auto base = predict_text(dp_scenario("analytic", 1, "[]"));
  const double step = base.results.step_time_s;
  const std::string period = std::to_string(2 * step * 1e3) + "ms";
  const auto throttled = predict_text(
      dp_scenario("analytic", 2,
                  "[{throttle: {ranks: [2], period: " + period + ", slowdown: 1.2, duty: 0.4}}]"));
  const auto slow = predict_text(dp_scenario("analytic", 1, "[{ranks: [2], slowdown: 1.2}]"));
  const double expected = (slow.results.step_time_s + step) / 2;
  EXPECT_NEAR(throttled.results.step_time_s, expected, 1e-3 * expected);
}

// Throttling every GPU alike keeps the job folded, and equals a slowdown of every rank.
TEST(Stragglers, ThrottlingEveryGpuAlikeStaysFolded) {
  const driver::Plan plain = plan_with(kTpPpDpScenario, "[]");
  const driver::Plan all = plan_with(
      kTpPpDpScenario, "[{throttle: {all: true, period: 10min, slowdown: 1.1, duty: 0.5}}]");
  EXPECT_EQ(simulated_ranks(all.job), simulated_ranks(plain.job));
  double unfolded_end = 0;
  const double folded_end = folded_and_unfolded_end(all, &unfolded_end);
  EXPECT_NEAR(folded_end, unfolded_end, 1e-9 * unfolded_end);
}

// Relaxed synchronisation (docs/models.md, "Relaxed synchronisation"): one rank at slowdown
// 1.3 under synchronous DP, SSP with staleness 2 (Ho et al. 2013) and local SGD averaging every
// 4 steps (Stich 2019). From the unperturbed synchronous step, C = its kernels per step and
// A = the rest (the all-reduce after backward): synchronous 1.3·C + A, local SGD 1.3·C + A / 4,
// SSP max(1.3·C, A).
std::string with_sync(std::string yaml, const std::string& sync) {
  const std::string anchor = "  overlap_grad_reduce: false\n";
  yaml.replace(yaml.find(anchor), anchor.size(), anchor + sync);
  return yaml;
}

void expect_relaxed_sync_beats_synchronous(const std::string& engine) {
  constexpr double kSlowdown = 1.3;
  const std::string slow = "[{ranks: [5], slowdown: 1.3}]";
  const auto base = predict_text(dp_scenario(engine, 1, "[]"));
  const double compute_s = base.results.breakdown_s.compute;
  const double rest_s = base.results.step_time_s - compute_s;
  ASSERT_GT(rest_s, 0) << engine;
  const double sync_s = predict_text(dp_scenario(engine, 1, slow)).results.step_time_s;
  EXPECT_NEAR(sync_s, kSlowdown * compute_s + rest_s, 0.01 * sync_s) << engine;
  const auto local = predict_text(
      with_sync(dp_scenario(engine, 1, slow), "  sync: local-sgd\n  local_sgd_period: 4\n"));
  const double local_expected_s = kSlowdown * compute_s + rest_s / 4;
  EXPECT_NEAR(local.results.step_time_s, local_expected_s, 0.01 * local_expected_s) << engine;
  EXPECT_LT(local.results.step_time_s, sync_s) << engine;
  const auto ssp =
      predict_text(with_sync(dp_scenario(engine, 1, slow), "  sync: ssp\n  staleness: 2\n"));
  const double ssp_expected_s = std::max(kSlowdown * compute_s, rest_s);
  EXPECT_NEAR(ssp.results.step_time_s, ssp_expected_s, 0.01 * ssp_expected_s) << engine;
  EXPECT_LT(ssp.results.step_time_s, sync_s) << engine;
  // EASGD, period 4 (Zhang et al. 2015): C + (A·4/g + E) / 4, with fp32 gradients (g = 4) the
  // parameters' exchange is the gradients', and E the elastic update (20 bytes, 4 FLOPs per fp32
  // parameter); the center variable adds 4 bytes per parameter.
  const auto easgd =
      predict_text(with_sync(dp_scenario(engine, 1, slow), "  sync: easgd\n  easgd_period: 4\n"));
  const double params = base.results.parameters;
  const double elastic_s = compute_time(ComputeOp{KernelKind::kElementwise, Flops(4 * params),
                                                  Bytes(20 * params), DType::kFp32},
                                        base.cluster.gpu)
                               .value();
  const double easgd_expected_s = kSlowdown * compute_s + (rest_s + elastic_s) / 4;
  EXPECT_NEAR(easgd.results.step_time_s, easgd_expected_s, 0.01 * easgd_expected_s) << engine;
  EXPECT_LT(easgd.results.step_time_s, sync_s) << engine;
  EXPECT_NEAR(easgd.results.peak_bytes_per_gpu, base.results.peak_bytes_per_gpu + 4 * params,
              1e-6 * base.results.peak_bytes_per_gpu)
      << engine;
  // Staleness 0 is synchronous training.
  const auto bsp =
      predict_text(with_sync(dp_scenario(engine, 1, slow), "  sync: ssp\n  staleness: 0\n"));
  EXPECT_NEAR(bsp.results.step_time_s, sync_s, 1e-9 * sync_s) << engine;
  // The breakdown still sums to the step, and the rates follow it.
  for (const auto* p : {&local, &ssp, &easgd}) {
    const Breakdown& b = p->results.breakdown_s;
    EXPECT_NEAR(
        b.compute + b.exposed_communication + b.pipeline_bubble + b.straggler_wait + b.other,
        p->results.step_time_s, 1e-9 * p->results.step_time_s)
        << engine;
    EXPECT_NEAR(p->results.samples_per_s * p->results.step_time_s, 64, 1e-9 * 64) << engine;
    EXPECT_FALSE(p->results.notes.empty()) << engine;
  }
}

TEST(Stragglers, RelaxedSyncCostsLessThanSynchronousAnalytic) {
  expect_relaxed_sync_beats_synchronous("analytic");
}

TEST(Stragglers, RelaxedSyncCostsLessThanSynchronousSimGrid) {
  expect_relaxed_sync_beats_synchronous("simgrid");
}

// Relaxed synchronisation is modelled for pure data parallelism only; the rest is refused.
TEST(Stragglers, RelaxedSyncWithOverlappedReductionIsRefused) {
  std::string yaml = dp_scenario("analytic", 1, "[]");
  const std::string off = "overlap_grad_reduce: false";
  yaml.replace(yaml.find(off), off.size(), "overlap_grad_reduce: true\n  sync: local-sgd");
  try {
    scenario_from(yaml);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported yet"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim
