// dtsim plan's search (driver/plan_search.h): its evaluator and segments against the analytic
// engine it stands in for, constraints, bad input, and the search against an exhaustive SimGrid
// run of a small case.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/exec/analytic_executor.h"
#include "core/strategy/parameter_server.h"
#include "core/strategy/strategy.h"
#include "driver/plan_search.h"
#include "driver/predict.h"
#include "models/scenario_model.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::driver {
namespace {

const std::string kScenarios = DTSIM_SOURCE_DIR "/scenarios/";

// An op as text, every field that reaches an executor.
std::string op_text(const Op& op) {
  std::ostringstream o;
  o.precision(17);
  o << op.label.name << '|' << op.label.layer << '|' << op.label.micro_batch << '|'
    << static_cast<int>(op.label.phase) << '|' << op.body.index() << '|';
  if (const auto* c = std::get_if<ComputeOp>(&op.body))
    o << static_cast<int>(c->kind) << ',' << c->flops.value() << ',' << c->bytes.value() << ','
      << static_cast<int>(c->dtype) << ',' << c->shape.batch << ',' << c->shape.m << ','
      << c->shape.n << ',' << c->shape.k << ',' << c->shape.fused_attention << ','
      << c->shape.causal << ',' << static_cast<int>(c->traffic) << ',' << c->load_factor << ','
      << c->launches;
  else if (const auto* c = std::get_if<CollectiveOp>(&op.body))
    o << static_cast<int>(c->kind) << ',' << c->group << ',' << c->bytes.value() << ','
      << static_cast<int>(c->dtype) << ',' << static_cast<int>(c->algorithm) << ',' << c->root
      << ',' << static_cast<int>(c->protocol);
  else if (const auto* x = std::get_if<SendOp>(&op.body))
    o << x->peer << ',' << x->bytes.value() << ',' << x->tag;
  else if (const auto* x = std::get_if<RecvOp>(&op.body))
    o << x->peer << ',' << x->bytes.value() << ',' << x->tag;
  else if (const auto* x = std::get_if<MemoryOp>(&op.body))
    o << static_cast<int>(x->category) << ',' << x->bytes.value();
  o << "|waits";
  for (EventId e : op.waits) o << ' ' << e;
  o << "|record " << (op.record ? *op.record : -1);
  return o.str();
}

// Jobs larger than this (ops over all simulated ranks, expanded) are left out of the checks over
// every scenario: building them op by op takes seconds each (the 405B and 1T runs).
constexpr double kMaxCheckedOps = 3e5;

double expanded_ops(const Job& job) {
  double n = 0;
  for (const auto& p : job.programs) n += static_cast<double>(p.op_count());
  return n;
}

// Every scenario of the repository that loads, with each file's name.
std::vector<std::pair<std::string, Scenario>> repository_scenarios() {
  std::vector<std::pair<std::string, Scenario>> out;
  for (const char* dir : {"", "validation/"})
    for (const auto& entry : std::filesystem::directory_iterator(kScenarios + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      try {
        out.emplace_back(entry.path().filename().string(), load(entry.path().string(), {}));
      } catch (const InputError&) {
        // an example of a refused input, or a file of published figures
      }
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Segments are a form of the same Program: expanded, a Job built with them is the Job built
// without, op for op, on every scenario of the repository.
TEST(Segments, ExpandToTheProgramBuiltWithout) {
  size_t with_segments = 0;
  for (const auto& [file, sc] : repository_scenarios()) {
    SCOPED_TRACE(file);
    if (uses_parameter_servers(sc.training)) continue;
    const models::ScenarioGraphs graphs = models::graphs_from_scenario(sc);
    JobOptions options;
    options.segments = true;
    const Job segmented = build_job(graphs.shard, sc, options);
    if (expanded_ops(segmented) > kMaxCheckedOps) continue;
    options.segments = false;
    const Job plain = build_job(graphs.shard, sc, options);
    if (segmented.has_segments()) ++with_segments;
    const Job expanded = expand_segments(segmented);
    ASSERT_EQ(plain.programs.size(), expanded.programs.size());
    for (size_t k = 0; k < plain.programs.size(); ++k) {
      const Program& a = plain.programs[k];
      const Program& b = expanded.programs[k];
      ASSERT_EQ(a.rank, b.rank);
      ASSERT_EQ(a.num_events, b.num_events);
      ASSERT_EQ(a.streams.size(), b.streams.size());
      for (size_t s = 0; s < a.streams.size(); ++s) {
        ASSERT_EQ(a.streams[s].ops.size(), b.streams[s].ops.size()) << a.streams[s].name;
        for (size_t i = 0; i < a.streams[s].ops.size(); ++i)
          ASSERT_EQ(op_text(a.streams[s].ops[i]), op_text(b.streams[s].ops[i]))
              << "rank " << a.rank << " stream " << a.streams[s].name << " op " << i;
      }
    }
    EXPECT_LE(segmented.programs.front().op_count(), plain.programs.front().op_count());
  }
  EXPECT_GE(with_segments, 10u);  // most scenarios are pipelines of several micro-batches
}

// The analytic engine times a Job with segments as it times the expanded Job.
TEST(Segments, EstimateStepEqualsTheAnalyticEngine) {
  size_t checked = 0;
  for (const auto& [file, sc] : repository_scenarios()) {
    SCOPED_TRACE(file);
    if (sc.simulate.engine != "analytic" && sc.simulate.engine != "simgrid") continue;
    const Plan plan = plan_scenario(sc, kDefaultMaxMemoryBytes, true);
    if (expanded_ops(plan.job) > kMaxCheckedOps) continue;
    ++checked;
    AnalyticEstimate expected;
    try {
      expected = analytic_estimate(sc);
    } catch (const InputError&) {
      continue;  // perturbations the analytic engine refuses
    }
    const StepEstimate e = estimate_step(plan.job, plan.cluster, run_options(plan.scenario));
    EXPECT_NEAR(e.step_time_s, expected.step_time_s, 1e-9 * expected.step_time_s);
    EXPECT_NEAR(e.peak_bytes, expected.peak_bytes, 1e-9 * expected.peak_bytes);
    for (size_t k = 0; k < kMemoryCategories; ++k)
      EXPECT_NEAR(e.at_peak[k], expected.at_peak[k], 1e-9 * expected.peak_bytes);
  }
  EXPECT_GE(checked, 20u);
}

struct Case {
  std::string file;
  std::vector<std::string> overrides;
};

// The search's evaluator gives the analytic engine's step time and peak memory, over every
// schedule, recompute mode, ZeRO stage, tensor, sequence, context, pipeline, data and expert
// parallelism, frameworks and precisions; one evaluator serves every case, as one serves a
// search, so its cached shard graphs must not leak one configuration into another.
TEST(StepEvaluator, GivesTheAnalyticEnginesAnswer) {
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
      // DeepSpeed's pipeline runs ZeRO-0 and 1 only; ZeRO-2 with a pipeline under megatron-core.
      {"default.yaml",
       {"parallelism.pipeline=3", "parallelism.data=8", "cluster.nodes=3",
        "parallelism.zero_stage=1", "training.framework=deepspeed",
        "training.global_batch_size=96"}},
      {"default.yaml",
       {"parallelism.pipeline=3", "parallelism.data=8", "cluster.nodes=3",
        "parallelism.zero_stage=2", "training.framework=megatron-core",
        "training.global_batch_size=96"}},
      {"default.yaml",
       {"training.precision=fp32", "training.optimizer=sgd", "parallelism.pipeline=2",
        "parallelism.data=8"}},
      {"llama3-70b-zero1-512-h100.yaml", {}},
      {"gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml", {}},
      // ZeRO-3, MoE with and without expert parallelism, FP8, TP communication overlap,
      // scatter/gather, PipeDream.
      {"gpt3-13b-zero3-64-a100.yaml", {}},
      {"mixtral-8x7b-ep8-64-h100.yaml", {}},
      {"mixtral-8x7b-ep8-64-h100.yaml", {"parallelism.expert=1", "parallelism.pipeline=1"}},
      {"default.yaml", {"training.precision=fp8", "parallelism.pipeline=2", "parallelism.data=8"}},
      {"default.yaml",
       {"parallelism.tensor=4", "parallelism.sequence_parallel=true",
        "parallelism.tp_comm_overlap=true", "parallelism.pipeline=2", "parallelism.data=2"}},
      {"default.yaml",
       {"parallelism.tensor=2", "parallelism.pipeline=4", "parallelism.data=2",
        "parallelism.pipeline_scatter_gather=true"}},
      {"gpt3-1.3b-pp8-pipedream-2bw.yaml", {}},
  };
  StepEvaluator evaluator;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " with " + std::to_string(c.overrides.size()) + " overrides");
    const Scenario sc = load(kScenarios + c.file, c.overrides);
    const AnalyticEstimate f = evaluator.evaluate(sc);
    const AnalyticEstimate e = analytic_estimate(sc);
    EXPECT_NEAR(f.step_time_s, e.step_time_s, 1e-9 * e.step_time_s);
    EXPECT_NEAR(f.peak_bytes, e.peak_bytes, 1e-9 * e.peak_bytes);
    for (size_t k = 0; k < kMemoryCategories; ++k)
      EXPECT_NEAR(f.at_peak[k], e.at_peak[k], 1e-9 * e.peak_bytes);
  }
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

// A pick above the best MFU published for its GPU generation in 16-bit training is flagged with
// that figure; below it, on another GPU, or in FP8 (no figure on file), it is not.
TEST(PlanSearch, WarnsWhenThePickBeatsThePublishedBestMfu) {
  const auto a100 = mfu_warning("A100-SXM-80GB", DType::kBf16, 0.618);
  ASSERT_TRUE(a100.has_value());
  EXPECT_NE(a100->find("61.8%"), std::string::npos) << *a100;
  EXPECT_NE(a100->find("56.3%"), std::string::npos) << *a100;
  EXPECT_NE(a100->find("Korthikanti"), std::string::npos) << *a100;
  EXPECT_FALSE(mfu_warning("A100-SXM-80GB", DType::kBf16, 0.55).has_value());
  const auto h100 = mfu_warning("H100-SXM", DType::kFp16, 0.50);
  ASSERT_TRUE(h100.has_value());
  EXPECT_NE(h100->find("47.1%"), std::string::npos) << *h100;
  EXPECT_FALSE(mfu_warning("H100-SXM", DType::kFp8, 0.60).has_value());
  EXPECT_FALSE(mfu_warning("V100-SXM2-32GB", DType::kFp16, 0.90).has_value());
}

// The small case's whole search under `framework`, ranked by the analytic engine alone, with
// recompute off and one more constraint: what the framework rules leave of it.
PlanReport framework_search(const std::string& framework, const std::string& constraint) {
  PlanRequest req = small_request(100000);
  req.overrides.push_back("training.framework=" + framework);
  req.constraints = {parse_plan_constraint("training.recompute=none"),
                     parse_plan_constraint(constraint)};
  req.simulate = false;
  return plan_search(req);
}

// Under training.framework: deepspeed the search ranks no pipeline with ZeRO-2 or ZeRO-3, which
// DeepSpeed's pipeline engine refuses, and counts those candidates as refused by that key; the
// same search under megatron-core ranks them.
TEST(PlanSearch, LeavesOutWhatTheFrameworkCannotRun) {
  auto ranked = [](const std::string& framework, size_t* refused_by_zero) {
    const PlanReport rep = framework_search(framework, "training.micro_batch_size=2");
    const auto it = rep.invalid_by_key.find("parallelism.zero_stage");
    *refused_by_zero = it == rep.invalid_by_key.end() ? 0 : it->second;
    size_t pipelined_zero2 = 0;
    for (const PlanRow& row : rep.ranked)
      if (row.config.pp > 1 && row.config.zero_stage >= 2) ++pipelined_zero2;
    return pipelined_zero2;
  };
  size_t refused_deepspeed = 0, refused_megatron = 0;
  EXPECT_EQ(ranked("deepspeed", &refused_deepspeed), 0u);
  EXPECT_GT(refused_deepspeed, 0u);
  EXPECT_GT(ranked("megatron-core", &refused_megatron), 0u)
      << "the case should offer pipelines with ZeRO-2 or 3 where the framework runs them";
}

// Context parallelism is searched only under a framework that has it (core/scenario/
// bind_training.cc cites each rule's source).
TEST(PlanSearch, OffersContextParallelismOnlyWhereTheFrameworkHasIt) {
  auto search = [](const std::string& framework) {
    return framework_search(framework, "parallelism.zero_stage=1");
  };
  const auto with_context = [](const PlanReport& rep) {
    size_t n = 0;
    for (const PlanRow& row : rep.ranked) n += row.config.cp > 1 ? 1 : 0;
    return n;
  };
  EXPECT_GT(with_context(search("megatron-core")), 0u)
      << "the case should offer context parallelism where the framework has it";
  for (const char* framework : {"megatron-lm-2021", "pytorch-ddp", "deepspeed"}) {
    const PlanReport rep = search(framework);
    EXPECT_EQ(with_context(rep), 0u) << framework;
    EXPECT_GT(rep.invalid_by_key.count("parallelism.context"), 0u) << framework;
  }
}

// --rank-by high: the rows are in the order of their intervals' upper ends, and each row's
// interval is the one `dtsim simulate` gives its step time.
TEST(PlanSearch, RanksByTheIntervalsUpperEndWhenAsked) {
  PlanRequest req = small_request(100000);
  req.simulate = false;
  req.rank_by = RankBy::kHigh;
  const PlanReport rep = plan_search(req);
  ASSERT_GE(rep.ranked.size(), 5u);
  EXPECT_EQ(rep.rank_by, RankBy::kHigh);
  for (size_t i = 0; i < rep.ranked.size(); ++i) {
    const PlanRow& row = rep.ranked[i];
    ASSERT_GT(row.interval.runs, 0) << row.interval.basis;
    EXPECT_LT(row.interval.low_s, row.interval.high_s);
    if (i > 0) {
      EXPECT_LE(rep.ranked[i - 1].interval.high_s, row.interval.high_s);
    }
  }
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

// The ZeRO-3 configurations are ranked within a budget of work, not of wall time: a budget that
// runs out part way leaves the same configurations ranked on every run.
TEST(PlanSearch, ABudgetThatRunsOutRanksTheSameConfigurationsEveryRun) {
  PlanRequest req = small_request(100000);
  req.constraints.clear();
  req.simulate = false;
  req.engine_budget_ops = 1;  // the first ZeRO-3 configuration spends it
  auto ranked = [](const PlanReport& rep) {
    std::vector<std::string> out;
    for (const PlanRow& row : rep.ranked)
      out.push_back(row.config.describe() + " " + std::to_string(row.step_time_s));
    return out;
  };
  const PlanReport first = plan_search(req);
  const PlanReport second = plan_search(req);
  EXPECT_EQ(first.engine_evaluations, 1u);
  EXPECT_GT(first.not_evaluated, 0u) << "the small case should have ZeRO-3 configurations";
  EXPECT_EQ(first.not_evaluated, second.not_evaluated);
  EXPECT_EQ(first.engine_ops, second.engine_ops);
  EXPECT_EQ(ranked(first), ranked(second));
}

// Every configuration the search ranks has the step time and peak memory `dtsim simulate
// --engine analytic` gives it (here without the constraints: every ZeRO stage, recompute mode,
// schedule and micro-batch size of the small case).
TEST(PlanSearch, RanksByTheAnalyticEnginesAnswer) {
  PlanRequest req = small_request(100000);
  req.constraints.clear();
  req.simulate = false;
  const PlanReport rep = plan_search(req);
  ASSERT_EQ(rep.ranked.size(), rep.fits);
  ASSERT_GE(rep.fits, 100u);
  EXPECT_EQ(rep.not_evaluated, 0u);
  for (const PlanRow& row : rep.ranked) {
    SCOPED_TRACE(row.config.describe());
    EXPECT_FALSE(row.simulated);
    EXPECT_TRUE(row.error.empty());
    std::vector<std::string> overrides = req.overrides;
    for (auto& o : row.config.overrides()) overrides.push_back(o);
    const AnalyticEstimate e = analytic_estimate(load(req.scenario, overrides));
    EXPECT_NEAR(row.analytic.step_time_s, e.step_time_s, 1e-9 * e.step_time_s);
    EXPECT_NEAR(row.analytic.peak_bytes, e.peak_bytes, 1e-9 * e.peak_bytes);
  }
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

// A plan starts from the model, the cluster and the batch alone: a scenario without a
// parallelism section, whose batch does not divide pure data parallelism over the world (48 over
// 32 GPUs, which `dtsim simulate` refuses), is searched, and its pick divides the batch.
TEST(PlanSearch, StartsFromTheModelClusterAndBatchAlone) {
  testing::ScratchDir dir("plan-bare");
  const std::string path = dir.file("bare.yaml");
  std::ofstream(path) << "model:\n  preset: gpt3-125m\ncluster:\n  gpu: H100-SXM\n  nodes: 4\n"
                         "  gpus_per_node: 8\ntraining:\n  global_batch_size: 48\n";
  EXPECT_THROW(load(path), InputError);
  PlanRequest req;
  req.scenario = path;
  req.constraints = {parse_plan_constraint("training.recompute=none"),
                     parse_plan_constraint("parallelism.zero_stage=1"),
                     parse_plan_constraint("parallelism.context=1")};
  req.top = 3;
  req.simulate = false;
  req.dtsim = DTSIM_BINARY;
  const PlanReport rep = plan_search(req);
  ASSERT_FALSE(rep.ranked.empty());
  EXPECT_EQ(rep.global_batch_size, 48);
  EXPECT_EQ(rep.gpus, 32);
  for (const PlanRow& row : rep.ranked)
    EXPECT_EQ(48 % (row.config.dp * row.config.micro_batch_size), 0) << row.config.describe();
}

}  // namespace
}  // namespace dtsim::driver

namespace dtsim::driver {
namespace {

// The small case over a whole run: 2000 steps, at a price, on GPUs with power figures.
PlanRequest run_request(int top) {
  PlanRequest r = small_request(top);
  r.overrides.push_back("training.steps=2000");
  r.overrides.push_back("cluster.price_per_gpu_hour=2USD");
  return r;
}

// With a deadline, no configuration returned misses it, simulated or not; with --objective cost
// the first is the cheapest of those that meet it, each simulated with SimGrid.
TEST(PlanGoal, ADeadlineDropsWhatMissesItAndCostRanksTheCheapestFirst) {
  // Every configuration that fits, simulated: the reference.
  const PlanReport all = plan_search(run_request(1000));
  ASSERT_GE(all.fits, 10u);
  std::vector<double> times;
  for (const PlanRow& row : all.ranked) {
    ASSERT_TRUE(row.simulated) << row.error;
    ASSERT_TRUE(row.run_from_simulation);
    EXPECT_EQ(row.run.steps, 2000);
    times.push_back(row.run.time_to_train_s);
  }
  std::sort(times.begin(), times.end());
  // A deadline between the fastest and the slowest leaves some out.
  const double deadline = times[times.size() / 2];
  PlanRequest req = run_request(1000);
  req.goal.objective = Objective::kCost;
  req.goal.deadline_s = deadline;
  const PlanReport met = plan_search(req);
  ASSERT_FALSE(met.ranked.empty());
  EXPECT_GT(met.miss_goal, 0u);
  double cheapest = std::numeric_limits<double>::infinity();
  for (const PlanRow& row : all.ranked)
    if (row.run.time_to_train_s <= deadline) cheapest = std::min(cheapest, *row.run.cost);
  for (const PlanRow& row : met.ranked) {
    SCOPED_TRACE(row.config.describe());
    if (!row.simulated) {
      EXPECT_TRUE(row.misses_goal) << row.error;  // only a simulated miss is left unranked
      continue;
    }
    EXPECT_LE(row.run.time_to_train_s, deadline);
    EXPECT_NEAR(*row.run.cost, row.run.gpu_hours * 2, 1e-9 * *row.run.cost);
  }
  ASSERT_TRUE(met.ranked.front().simulated);
  EXPECT_DOUBLE_EQ(*met.ranked.front().run.cost, cheapest);
  // One cluster: the cheapest run is the fastest, on the front of time and cost.
  EXPECT_TRUE(met.ranked.front().pareto);
}

TEST(PlanGoal, EnergyRanksByTheRunsEnergy) {
  PlanRequest req = run_request(1000);
  req.simulate = false;
  req.goal.objective = Objective::kEnergy;
  const PlanReport rep = plan_search(req);
  ASSERT_GE(rep.ranked.size(), 2u);
  for (size_t i = 0; i + 1 < rep.ranked.size(); ++i) {
    ASSERT_TRUE(rep.ranked[i].run.energy_j);
    EXPECT_LE(*rep.ranked[i].run.energy_j, *rep.ranked[i + 1].run.energy_j);
  }
  // The search's energy is simulate's: the same step model and power model.
  const PlanRow& best = rep.ranked.front();
  std::vector<std::string> overrides = req.overrides;
  for (auto& o : best.config.overrides()) overrides.push_back(o);
  overrides.push_back("simulate.engine=analytic");
  const Prediction p = predict(load(req.scenario, overrides));
  ASSERT_TRUE(p.results.run);
  EXPECT_NEAR(*best.run.energy_j, p.results.run->energy_j, 1e-9 * p.results.run->energy_j);
}

TEST(PlanGoal, AGoalTheScenarioCannotAnswerNamesTheFlag) {
  auto flag_of = [](const PlanRequest& r) -> std::string {
    try {
      plan_search(r);
    } catch (const InputError& e) {
      return e.diagnostics().front().key_path + ": " + e.diagnostics().front().message;
    }
    return "accepted";
  };
  PlanRequest r = small_request(1);  // no run size
  r.goal.deadline_s = 86400;
  EXPECT_EQ(flag_of(r).rfind("--deadline: ", 0), 0u) << flag_of(r);
  r = small_request(1);
  r.overrides.push_back("training.steps=100");
  r.goal.objective = Objective::kCost;  // no price
  EXPECT_NE(flag_of(r).find("cluster.price_per_gpu_hour"), std::string::npos) << flag_of(r);
  r = run_request(1);
  r.goal.budget = Money{1e6, "EUR"};  // the price is in USD
  EXPECT_NE(flag_of(r).find("one search takes one currency"), std::string::npos) << flag_of(r);
  r = run_request(1);
  r.goal.deadline_s = 1;  // one second for 2000 steps
  EXPECT_EQ(flag_of(r).rfind("--deadline: none of the", 0), 0u) << flag_of(r);
}

}  // namespace
}  // namespace dtsim::driver
