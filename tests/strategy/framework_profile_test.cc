// Framework profiles (training.framework, core/scenario/bind_training.cc): each one's documented
// behaviour shows in the built Program and its timing, and a key the scenario sets overrides it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/exec/engine_registry.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

// A 4-block GPT on 4 A100s, pure data parallelism, 2 micro-batches per replica, bf16.
std::string scenario(const std::string& framework, const std::string& extra_training = "") {
  return "cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 4}\n"
         "model: {family: gpt, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, "
         "seq_length: 1024, vocab_size: 50257}\n"
         "training: {framework: " +
         framework + ", global_batch_size: 8, micro_batch_size: 1, precision: bf16" +
         extra_training + "}\n";
}

struct Observed {
  Scenario scenario;
  std::vector<double> dp_bytes;  // the data-parallel collectives of rank 0, in program order
  double first_dp_start = 0;     // when the first one starts
  double backward_end = 0;       // when rank 0's last backward kernel ends
  double model_parameters = 0;
};

Observed observe(const std::string& yaml) {
  driver::Plan plan = driver::plan_scenario(load_scenario_text(yaml, "framework.yaml"));
  Observed o;
  o.scenario = plan.scenario;
  o.model_parameters = plan.model.parameters();
  const Program& p = *plan.job.program_for(0);
  std::vector<std::pair<StreamId, size_t>> dp_ops;
  for (size_t s = 0; s < p.streams.size(); ++s)
    for (size_t i = 0; i < p.streams[s].ops.size(); ++i)
      if (const auto* c = std::get_if<CollectiveOp>(&p.streams[s].ops[i].body))
        if (plan.job.group(c->group).name == "dp") {
          o.dp_bytes.push_back(c->bytes.value());
          dp_ops.emplace_back(static_cast<StreamId>(s), i);
        }
  RunOptions run;
  const Trace t = make_engine("analytic", engine_settings(plan.scenario))->run(plan.job, plan.cluster, run);
  o.first_dp_start = 1e300;
  for (const Span& span : t.spans) {
    if (span.rank != 0) continue;
    const Op& op = p.streams[static_cast<size_t>(span.stream)].ops[span.op_index];
    if (std::find(dp_ops.begin(), dp_ops.end(), std::make_pair(span.stream, span.op_index)) !=
        dp_ops.end())
      o.first_dp_start = std::min(o.first_dp_start, span.start.value());
    if (std::holds_alternative<ComputeOp>(op.body) && op.label.phase == Phase::kBackward)
      o.backward_end = std::max(o.backward_end, span.end.value());
  }
  return o;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

TEST(FrameworkProfile, MegatronLm2021ReducesOneBufferAfterBackward) {
  const Observed o = observe(scenario("megatron-lm-2021"));
  // One contiguous fp32 gradient buffer (bf16 training accumulates and reduces in fp32), reduced
  // once backward has finished.
  ASSERT_EQ(o.dp_bytes.size(), 1u);
  EXPECT_NEAR(o.dp_bytes[0], 4 * o.model_parameters, 1e-6 * o.dp_bytes[0]);
  EXPECT_GE(o.first_dp_start, o.backward_end);
  EXPECT_FALSE(o.scenario.training.overlap_grad_reduce);
  EXPECT_FALSE(o.scenario.training.flash_attention);
}

TEST(FrameworkProfile, MegatronCoreBucketsFortyMillionParametersWithoutOverlap) {
  const Observed o = observe(scenario("megatron-core"));
  // max(40e6, 1e6 x 4) parameters x 4 bytes of fp32 gradient per bucket.
  EXPECT_DOUBLE_EQ(o.scenario.training.gradient_bucket.value(), 40e6 * 4);
  EXPECT_DOUBLE_EQ(o.scenario.training.first_gradient_bucket.value(), 40e6 * 4);
  ASSERT_GE(o.dp_bytes.size(), 2u);  // the model's ~62M parameters need two buckets
  EXPECT_NEAR(sum(o.dp_bytes), 4 * o.model_parameters, 1e-6 * sum(o.dp_bytes));
  for (double b : o.dp_bytes) EXPECT_LE(b, 40e6 * 4 * (1 + 1e-9));
  EXPECT_GE(o.first_dp_start, o.backward_end);
  EXPECT_TRUE(o.scenario.training.flash_attention);
}

TEST(FrameworkProfile, NemoOverlapsMegatronCoreBucketsWithTheDistributedOptimizer) {
  const Observed o = observe(scenario("nemo"));
  EXPECT_DOUBLE_EQ(o.scenario.training.gradient_bucket.value(), 40e6 * 4);
  EXPECT_EQ(o.scenario.parallelism.zero_stage, 1);
  EXPECT_TRUE(o.scenario.training.overlap_grad_reduce);
  EXPECT_TRUE(o.scenario.training.flash_attention);
  // The distributed optimizer reduce-scatters the gradients, while backward still runs.
  ASSERT_GE(o.dp_bytes.size(), 2u);
  EXPECT_LT(o.first_dp_start, o.backward_end);
}

TEST(FrameworkProfile, PytorchDdpOverlapsSmallBucketsWithBackward) {
  const Observed o = observe(scenario("pytorch-ddp"));
  EXPECT_DOUBLE_EQ(o.scenario.training.gradient_bucket.value(), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(o.scenario.training.first_gradient_bucket.value(), 1.0 * 1024 * 1024);
  ASSERT_GE(o.dp_bytes.size(), 3u);
  EXPECT_NEAR(o.dp_bytes.front(), 1.0 * 1024 * 1024, 1.0);  // the 1 MiB first bucket
  EXPECT_LT(o.first_dp_start, o.backward_end);              // reduced while backward still runs
}

TEST(FrameworkProfile, FsdpShardsEverythingAndOverlaps) {
  const Observed o = observe(scenario("fsdp"));
  EXPECT_EQ(o.scenario.parallelism.zero_stage, 3);
  EXPECT_TRUE(o.scenario.training.overlap_grad_reduce);
  EXPECT_LT(o.first_dp_start, o.backward_end);
}

TEST(FrameworkProfile, DeepspeedReducesHalfABillionElementBucketsAfterBackwardBelowZeroThree) {
  const Observed o = observe(scenario("deepspeed"));
  // reduce_bucket_size 5e8 elements of fp32 gradient: the whole 62M-parameter model in one.
  EXPECT_DOUBLE_EQ(o.scenario.training.gradient_bucket.value(), 5e8 * 4);
  EXPECT_EQ(o.scenario.parallelism.zero_stage, 0);
  EXPECT_FALSE(o.scenario.training.overlap_grad_reduce);
  ASSERT_EQ(o.dp_bytes.size(), 1u);
  EXPECT_GE(o.first_dp_start, o.backward_end);
  // overlap_comm defaults on with ZeRO-3: the shards are reduce-scattered during backward.
  const Observed z3 = observe(scenario("deepspeed") + "parallelism: {zero_stage: 3}\n");
  EXPECT_TRUE(z3.scenario.training.overlap_grad_reduce);
  EXPECT_LT(z3.first_dp_start, z3.backward_end);
}

TEST(FrameworkProfile, KeysTheScenarioSetsOverrideTheProfile) {
  const Observed o = observe(scenario("megatron-lm-2021",
                                      ", overlap_grad_reduce: true, gradient_bucket: 25MiB, "
                                      "first_gradient_bucket: 1MiB"));
  EXPECT_TRUE(o.scenario.training.overlap_grad_reduce);
  EXPECT_DOUBLE_EQ(o.scenario.training.gradient_bucket.value(), 25.0 * 1024 * 1024);
  EXPECT_GT(o.dp_bytes.size(), 1u);
  EXPECT_LT(o.first_dp_start, o.backward_end);
  // The profile's other settings stay.
  EXPECT_FALSE(o.scenario.training.flash_attention);
  const Observed z = observe(
      "cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 4}\n"
      "model: {family: gpt, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, "
      "seq_length: 1024, vocab_size: 50257}\n"
      "parallelism: {zero_stage: 1}\n"
      "training: {framework: fsdp, global_batch_size: 8, micro_batch_size: 1}\n");
  EXPECT_EQ(z.scenario.parallelism.zero_stage, 1);
}

TEST(FrameworkProfile, CustomKeepsTheSchemaDefaults) {
  const Observed custom = observe(scenario("custom"));
  const Observed ddp = observe(scenario("pytorch-ddp"));
  EXPECT_EQ(custom.dp_bytes, ddp.dp_bytes);
  EXPECT_EQ(custom.scenario.training.overlap_grad_reduce, true);
}

// A 2-block Mixtral-style MoE on 8 H100s with expert parallelism 8.
std::string moe_scenario(const std::string& framework, const std::string& extra_training = "") {
  return "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"
         "model: {preset: mixtral-8x7b, num_layers: 2, seq_length: 1024}\n"
         "parallelism: {expert: 8}\n"
         "training: {framework: " +
         framework + ", global_batch_size: 8, micro_batch_size: 1" + extra_training + "}\n";
}

// Names of rank 0's compute ops in its first MoE layer's forward and backward.
std::vector<std::string> moe_ops(const driver::Plan& plan) {
  std::vector<std::string> names;
  const Program& p = *plan.job.program_for(0);
  for (const auto& stream : p.streams)
    for (const auto& op : stream.ops)
      if (std::holds_alternative<ComputeOp>(op.body) && op.label.micro_batch == 0 &&
          op.label.name.rfind("block.0.", 0) == 0)
        names.push_back(op.label.name.substr(8));
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Megatron-core and NeMo route and permute tokens with separate PyTorch operations (v0.9 had no
// fused ones; the later flags default off); a custom framework gets one fused kernel each way,
// and the scenario's keys override either.
TEST(FrameworkProfile, MegatronCorePermutesAndRoutesMoeTokensWithPyTorchOperations) {
  for (const char* framework : {"megatron-core", "nemo"}) {
    SCOPED_TRACE(framework);
    const driver::Plan plan =
        driver::plan_scenario(load_scenario_text(moe_scenario(framework), "framework.yaml"));
    EXPECT_FALSE(plan.scenario.training.moe_permute_fusion);
    EXPECT_FALSE(plan.scenario.training.moe_router_fusion);
    const auto ops = moe_ops(plan);
    for (const char* name : {"token_argsort", "token_gather", "token_unpermute_scatter_add",
                             "token_combine_weight.backward", "router_topk", "aux_loss.backward"})
      EXPECT_TRUE(has(ops, name)) << name;
    EXPECT_FALSE(has(ops, "token_dispatch"));
    EXPECT_FALSE(has(ops, "router_softmax_topk"));
  }
  const driver::Plan custom =
      driver::plan_scenario(load_scenario_text(moe_scenario("custom"), "framework.yaml"));
  auto ops = moe_ops(custom);
  for (const char* name : {"token_dispatch", "token_combine", "router_softmax_topk"})
    EXPECT_TRUE(has(ops, name)) << name;
  EXPECT_FALSE(has(ops, "token_argsort"));
  const driver::Plan overridden = driver::plan_scenario(load_scenario_text(
      moe_scenario("megatron-core", ", moe_permute_fusion: true"), "framework.yaml"));
  ops = moe_ops(overridden);
  EXPECT_TRUE(has(ops, "token_dispatch"));
  EXPECT_TRUE(has(ops, "router_topk"));  // the router stays the profile's
}

// training.moe_load_imbalance reads 'auto' as the random-routing default and a number as given.
TEST(FrameworkProfile, MoeLoadImbalanceTakesAutoOrANumber) {
  const Scenario automatic = load_scenario_text(
      moe_scenario("megatron-core", ", moe_load_imbalance: auto"), "imbalance.yaml");
  EXPECT_FALSE(automatic.training.moe_load_imbalance.has_value());
  const Scenario given = load_scenario_text(
      moe_scenario("megatron-core", ", moe_load_imbalance: 1.25"), "imbalance.yaml");
  ASSERT_TRUE(given.training.moe_load_imbalance.has_value());
  EXPECT_DOUBLE_EQ(*given.training.moe_load_imbalance, 1.25);
}

}  // namespace
}  // namespace dtsim
