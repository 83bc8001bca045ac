// dtsim plan's search (driver/plan_search.h): the step-level evaluator against the analytic
// engine it stands in for, constraints, bad input, and the search against an exhaustive SimGrid
// run of a small case.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "driver/plan_search.h"
#include "driver/predict.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::driver {
namespace {

const std::string kScenarios = DTSIM_SOURCE_DIR "/scenarios/";

struct Case {
  std::string file;
  std::vector<std::string> overrides;
};

// The step-level evaluator reproduces the analytic engine's step time to kFastModelTolerance and
// its peak memory exactly, over every schedule, recompute mode, ZeRO stage it covers, tensor,
// sequence, context, pipeline and data parallelism, frameworks and precisions.
TEST(FastAnalyticModel, ReproducesTheAnalyticEngine) {
  const std::vector<Case> cases = {
      {"default.yaml", {}},
      {"default.yaml",
       {"parallelism.tensor=2", "parallelism.pipeline=2", "parallelism.data=4",
        "parallelism.schedule=gpipe"}},
      {"default.yaml",
       {"parallelism.tensor=2", "parallelism.pipeline=4", "parallelism.data=2",
        "parallelism.schedule=interleaved", "parallelism.virtual_stages=2",
        "training.global_batch_size=64"}},
      {"default.yaml",
       {"parallelism.pipeline=4", "parallelism.data=4", "parallelism.schedule=interleaved",
        "parallelism.virtual_stages=3", "training.global_batch_size=64",
        "training.micro_batch_size=1", "training.recompute=full"}},
      {"default.yaml",
       {"parallelism.tensor=4", "parallelism.sequence_parallel=true", "parallelism.pipeline=2",
        "parallelism.data=2", "parallelism.zero_stage=1", "training.recompute=selective"}},
      {"default.yaml",
       {"parallelism.context=2", "parallelism.pipeline=2", "parallelism.data=4",
        "parallelism.zero_stage=2", "training.recompute=full", "training.framework=megatron-core"}},
      {"default.yaml",
       {"parallelism.pipeline=4", "parallelism.data=4", "training.precision=fp16",
        "training.framework=megatron-lm-2021"}},
      {"default.yaml",
       {"parallelism.pipeline=2", "parallelism.data=8", "training.precision=fp16",
        "training.overlap_grad_reduce=false", "training.micro_batch_size=2"}},
      {"default.yaml",
       {"parallelism.tensor=8", "parallelism.pipeline=2", "parallelism.data=1",
        "training.framework=nemo"}},
      {"default.yaml",
       {"parallelism.pipeline=3", "parallelism.data=8", "cluster.nodes=3",
        "parallelism.zero_stage=2", "training.framework=deepspeed",
        "training.global_batch_size=96"}},
      {"default.yaml",
       {"training.precision=fp32", "training.optimizer=sgd", "parallelism.pipeline=2",
        "parallelism.data=8"}},
      {"llama3-70b-zero1-512-h100.yaml", {}},
      {"gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " with " + std::to_string(c.overrides.size()) + " overrides");
    const Scenario sc = load(kScenarios + c.file, c.overrides);
    FastAnalyticModel fast;
    ASSERT_TRUE(fast.covers(sc));
    const AnalyticEstimate f = fast.evaluate(sc);
    const AnalyticEstimate e = analytic_estimate(sc);
    EXPECT_TRUE(f.fast);
    EXPECT_NEAR(f.step_time_s, e.step_time_s, kFastModelTolerance * e.step_time_s);
    EXPECT_EQ(f.peak_bytes, e.peak_bytes);
    for (size_t k = 0; k < kMemoryCategories; ++k) EXPECT_EQ(f.at_peak[k], e.at_peak[k]);
  }
}

// One instance serves a whole search: its caches must not leak one configuration into another.
TEST(FastAnalyticModel, OneInstanceAcrossConfigurations) {
  FastAnalyticModel fast;
  for (const auto& o : std::vector<std::vector<std::string>>{
           {"parallelism.tensor=2"},
           {"parallelism.tensor=2", "training.micro_batch_size=2"},
           {"parallelism.pipeline=2", "parallelism.zero_stage=1"},
           {"parallelism.tensor=2", "training.recompute=full"}}) {
    const Scenario sc = load(kScenarios + "default.yaml", o);
    EXPECT_NEAR(fast.evaluate(sc).step_time_s, analytic_estimate(sc).step_time_s,
                kFastModelTolerance * analytic_estimate(sc).step_time_s);
  }
}

TEST(FastAnalyticModel, LeavesWhatItDoesNotModelToTheEngine) {
  FastAnalyticModel fast;
  EXPECT_FALSE(fast.covers(load(kScenarios + "gpt3-13b-zero3-64-a100.yaml")));
  EXPECT_FALSE(fast.covers(load(kScenarios + "mixtral-8x7b-ep8-64-h100.yaml")));
  EXPECT_FALSE(fast.covers(load(kScenarios + "default.yaml", {"training.precision=fp8"})));
  // A MoE model without expert parallelism still keeps its expert weights apart (their state and
  // reduction), which the step-level model leaves out: it once ranked Mixtral 8x7B on 64 H100s
  // with every expert on every GPU first, at a third of the peak memory the engine finds.
  const Scenario moe = load(kScenarios + "mixtral-8x7b-ep8-64-h100.yaml",
                            {"parallelism.expert=1", "parallelism.pipeline=1"});
  EXPECT_EQ(moe.parallelism.expert.value, 1);
  EXPECT_FALSE(fast.covers(moe));
  EXPECT_TRUE(fast.covers(load(kScenarios + "default.yaml")));
}

std::string constraint_message(const std::string& text) {
  try {
    parse_plan_constraint(text);
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().front().key_path, "--constraint");
    return e.diagnostics().front().message;
  }
  ADD_FAILURE() << text << " was accepted";
  return "";
}

TEST(PlanConstraint, ParsesTheThreeOperators) {
  auto c = parse_plan_constraint("parallelism.tensor<=8");
  EXPECT_EQ(c.key, "parallelism.tensor");
  EXPECT_EQ(c.op, PlanConstraint::Op::kLe);
  EXPECT_EQ(c.value, "8");
  c = parse_plan_constraint("training.micro_batch_size>=2");
  EXPECT_EQ(c.op, PlanConstraint::Op::kGe);
  c = parse_plan_constraint("training.recompute=full");
  EXPECT_EQ(c.op, PlanConstraint::Op::kEq);
  EXPECT_EQ(c.value, "full");
}

TEST(PlanConstraint, NamesWhatIsWrong) {
  EXPECT_NE(constraint_message("parallelism.tensor<8").find("expected KEY=VALUE"),
            std::string::npos);
  EXPECT_NE(constraint_message("=8").find("expected KEY=VALUE"), std::string::npos);
  const std::string unknown = constraint_message("parallelism.tensr=2");
  EXPECT_NE(unknown.find("unknown key 'parallelism.tensr'"), std::string::npos);
  EXPECT_NE(unknown.find("did you mean 'parallelism.tensor'"), std::string::npos);
  EXPECT_NE(constraint_message("parallelism.tensor<=eight").find("whole number"),
            std::string::npos);
  EXPECT_NE(constraint_message("training.recompute<=full").find("takes a name"), std::string::npos);
  EXPECT_NE(constraint_message("parallelism.schedule=zigzag").find("expected one of"),
            std::string::npos);
}

PlanRequest small_request(int top) {
  PlanRequest r;
  // GPT-3 125M on one node of 4 H100: small enough to simulate every configuration.
  r.scenario = kScenarios + "default.yaml";
  r.overrides = {"model.preset=gpt3-125m", "cluster.nodes=1", "cluster.gpus_per_node=4",
                 "training.global_batch_size=16"};
  for (const char* c : {"parallelism.zero_stage=0", "training.recompute=none",
                        "parallelism.context=1", "training.micro_batch_size=2"})
    r.constraints.push_back(parse_plan_constraint(c));
  r.top = top;
  r.dtsim = DTSIM_BINARY;
  r.jobs = 2;
  return r;
}

TEST(PlanSearch, RefusesBadInput) {
  PlanRequest r = small_request(0);
  try {
    plan_search(r);
    ADD_FAILURE() << "--top 0 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().front().key_path, "--top");
  }
  r = small_request(1);
  r.overrides = {"model.preset=gpt3-175b", "cluster.nodes=1", "cluster.gpus_per_node=1"};
  try {
    plan_search(r);
    ADD_FAILURE() << "a search where nothing fits was accepted";
  } catch (const InputError& e) {
    const std::string m = e.diagnostics().front().message;
    EXPECT_NE(m.find("fits in memory: the smallest peak is"), std::string::npos) << m;
    EXPECT_NE(m.find("80.00 GiB"), std::string::npos) << m;
  }
  r = small_request(1);
  r.constraints.push_back(parse_plan_constraint("parallelism.tensor>=16"));
  EXPECT_THROW(plan_search(r), InputError);
}

// What plan ranks first (the analytic top 2, simulated) is the best of every configuration that
// fits, each simulated with SimGrid.
TEST(PlanSearch, PicksTheTrueBestOnASmallCase) {
  const PlanReport quick = plan_search(small_request(2));
  ASSERT_FALSE(quick.ranked.empty());
  ASSERT_TRUE(quick.ranked.front().simulated) << quick.ranked.front().error;
  const PlanReport all = plan_search(small_request(1000));
  ASSERT_EQ(all.ranked.size(), all.fits);
  ASSERT_GE(all.fits, 10u) << "the case should offer a real choice";
  for (const auto& row : all.ranked) EXPECT_TRUE(row.simulated) << row.error;
  EXPECT_EQ(quick.ranked.front().config.describe(), all.ranked.front().config.describe());
  EXPECT_DOUBLE_EQ(quick.ranked.front().step_time_s, all.ranked.front().step_time_s);
  EXPECT_GT(all.invalid, 0u) << "the loader refuses some candidates";
}

// A configuration whose simulated peak is over the GPU's memory is never ranked as simulated, nor
// offered as the best, whatever the search estimated: here every child (a stand-in for dtsim
// that prints a result with a 100 GiB peak on an 80 GiB GPU) says so.
TEST(PlanSearch, NeverRanksAConfigurationThatDoesNotFitWhenSimulated) {
  const dtsim::testing::ScratchDir scratch("plan-search");
  const std::string fake = scratch.file("oversized-child.sh");
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\n"
              "echo '{\"step_time_s\": 1.0, \"flops\": {\"mfu\": 0.5}, \"throughput\": "
              "{\"tokens_per_s\": 1.0}, \"breakdown_s\": {\"compute\": 1.0, "
              "\"exposed_communication\": 0, \"pipeline_bubble\": 0}, \"memory\": "
              "{\"peak_bytes_per_gpu\": 107374182400, \"capacity_bytes\": 85899345920}}'\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  PlanRequest r = small_request(2);
  r.dtsim = fake;
  const PlanReport rep = plan_search(r);
  ASSERT_EQ(rep.ranked.size(), 2u);
  for (const auto& row : rep.ranked) {
    EXPECT_FALSE(row.simulated);
    EXPECT_TRUE(row.over_memory);
    EXPECT_NE(row.error.find("does not fit when simulated: 100.00 GiB per GPU of 80.00 GiB"),
              std::string::npos)
        << row.error;
  }
}

}  // namespace
}  // namespace dtsim::driver
