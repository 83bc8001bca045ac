// The per-step kernels of docs/models.md's kernel inventory that the step builder
// (core/strategy/parallel_step.cc) adds around the layer graph: the optimizer's kernels in
// Megatron-core's order (gradient-norm squares, its all-reduce over the gradient-statistics
// group, the clip scale, the Adam step, the master-to-model weight copy; the main-gradient cast
// with 16-bit gradients), Megatron's norm and 1/dp scaling of each gradient bucket before its
// collective, and under FP8 the once-per-step weight casts and the per-pass amax reductions. Each
// is found by label in a small scenario's Programs and its bytes checked against the formula,
// computed here from the layer graph's parameter counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "core/strategy/layout.h"
#include "core/strategy/strategy.h"
#include "models/scenario_model.h"

namespace dtsim {
namespace {

// A 4-block GPT (h 1024) on 8 H100s: tensor 2, pipeline 2, data 2; 4 micro-batches per replica.
Scenario scenario(const std::string& precision, int zero_stage, const std::string& extra = "",
                  const std::string& framework = "megatron-core") {
  return load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"
      "model: {family: gpt, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, "
      "seq_length: 1024, vocab_size: 50304}\n"
      "parallelism: {tensor: 2, pipeline: 2, data: 2, zero_stage: " +
          std::to_string(zero_stage) +
          "}\n"
          "training: {framework: " +
          framework + ", global_batch_size: 8, micro_batch_size: 1, precision: " + precision +
          extra + "}\n",
      "step.yaml");
}

struct Built {
  Scenario sc;
  ModelGraph shard;
  Job job;
};

Built build(const Scenario& sc) {
  Built b{sc, models::shard_from_scenario(sc), {}};
  b.job = build_job(b.shard, b.sc);
  return b;
}

// The first stage's Program (rank 0) and the parameters of its layers (one TP shard).
const Program& first_stage(const Built& b) {
  const Program* p = b.job.program_for(0);
  EXPECT_NE(p, nullptr);
  return *p;
}

ChunkRange first_stage_layers(const Built& b) {
  return pipeline_chunks(b.shard, 2, 1, {}).front();
}

double first_stage_parameters(const Built& b) {
  const ChunkRange range = first_stage_layers(b);
  double params = 0;
  for (int i = range.first; i <= range.last; ++i)
    params += b.shard.layers[static_cast<size_t>(i)].parameters;
  return params;
}

std::vector<const Op*> ops_named(const Program& p, const std::string& name) {
  std::vector<const Op*> out;
  for (const auto& st : p.streams)
    for (const auto& op : st.ops)
      if (op.label.name == name) out.push_back(&op);
  return out;
}

double compute_bytes(const Op* op) {
  return std::get<ComputeOp>(op->body).bytes.value();
}

// The optimizer's ops on the compute stream, in program order.
std::vector<std::string> optimizer_sequence(const Program& p) {
  std::vector<std::string> names;
  for (const auto& op : p.streams.front().ops)
    if (op.label.phase == Phase::kOptimizer) names.push_back(op.label.name);
  return names;
}

TEST(StepKernels, OptimizerRunsMegatronCoresKernelsOverItsShard) {
  for (int zero : {0, 1}) {
    SCOPED_TRACE("zero_stage " + std::to_string(zero));
    const Built b = build(scenario("bf16", zero));
    const Program& p = first_stage(b);
    // The parameters whose update rank 0 runs: its stage's, divided over the 2 data-parallel
    // ranks by the distributed optimizer.
    const double shard = first_stage_parameters(b) / (zero >= 1 ? 2 : 1);
    ASSERT_GT(shard, 0);
    // bf16 keeps fp32 gradients (Megatron's default), so no main-gradient cast.
    EXPECT_EQ(
        optimizer_sequence(p),
        (std::vector<std::string>{"grad_norm_squares", "grad_norm_all_reduce", "grad_clip_scale",
                                  "optimizer_step", "main_params_to_model_params"}));
    const auto norm = ops_named(p, "grad_norm_squares");
    ASSERT_EQ(norm.size(), 1u);
    EXPECT_DOUBLE_EQ(compute_bytes(norm[0]), 4 * shard);  // fp32 main gradients read
    EXPECT_DOUBLE_EQ(compute_bytes(ops_named(p, "grad_clip_scale").at(0)), 8 * shard);
    // Adam: fp32 gradient read; master weight, momentum and variance read and written.
    EXPECT_DOUBLE_EQ(compute_bytes(ops_named(p, "optimizer_step").at(0)), (4 + 2 * 12) * shard);
    EXPECT_DOUBLE_EQ(compute_bytes(ops_named(p, "main_params_to_model_params").at(0)),
                     (4 + 2) * shard);
    // One fp32 summed over the model-parallel ranks (tensor x pipeline = 4) with the plain
    // optimizer, over every rank (8) with the distributed one.
    const auto ar = ops_named(p, "grad_norm_all_reduce");
    ASSERT_EQ(ar.size(), 1u);
    const auto& c = std::get<CollectiveOp>(ar[0]->body);
    EXPECT_EQ(c.kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(c.bytes.value(), 4);
    EXPECT_EQ(b.job.group(c.group).name, "grad_stats");
    EXPECT_EQ(b.job.group(c.group).ranks.size(), zero >= 1 ? 8u : 4u);
  }
}

// Megatron-LM 2021 scaled the gradients only when their norm exceeded clip_grad: no clip kernel.
TEST(StepKernels, MegatronLm2021ComputesTheNormWithoutTheUnconditionalScale) {
  const Built b = build(scenario("bf16", 0, "", "megatron-lm-2021"));
  EXPECT_EQ(optimizer_sequence(first_stage(b)),
            (std::vector<std::string>{"grad_norm_squares", "grad_norm_all_reduce", "optimizer_step",
                                      "main_params_to_model_params"}));
}

// Outside the Megatron profiles the step is one optimizer kernel: gradients read (fp32 here),
// 16-bit weights written, states with the master weights read and written; nothing is zeroed.
TEST(StepKernels, OtherFrameworksRunOneOptimizerKernel) {
  for (const char* framework : {"custom", "pytorch-ddp"}) {
    SCOPED_TRACE(framework);
    const Built b = build(scenario("bf16", 1, "", framework));
    const Program& p = first_stage(b);
    EXPECT_EQ(optimizer_sequence(p), (std::vector<std::string>{"optimizer_step"}));
    EXPECT_TRUE(ops_named(p, "zero_grad_buffer").empty());
    const double shard = first_stage_parameters(b) / 2;
    EXPECT_DOUBLE_EQ(compute_bytes(ops_named(p, "optimizer_step").at(0)), (4 + 2 + 2 * 12) * shard);
  }
}

// Megatron's data-parallel wrapper, before each gradient bucket's collective: the NaN check's
// L2 norm of the bucket (megatron-core and nemo; one read) and the scaling by 1/dp (a read and a
// write; megatron-lm-2021 too); PyTorch's profiles launch neither. Each kernel sits on the
// compute stream, its bucket's collective waits for the scale, and over the buckets the norm
// reads every one of the stage's fp32 gradients once.
TEST(StepKernels, MegatronNormsAndScalesEachGradientBucketBeforeItsCollective) {
  struct Case {
    const char* framework;
    const char* extra;
    bool norm, scale;
  };
  for (const Case& c : {Case{"megatron-core", "", true, true},
                        Case{"megatron-core", ", overlap_grad_reduce: true", true, true},
                        Case{"nemo", "", true, true}, Case{"megatron-lm-2021", "", false, true},
                        Case{"pytorch-ddp", "", false, false}}) {
    SCOPED_TRACE(std::string(c.framework) + c.extra);
    const Built b = build(scenario("bf16", 1, c.extra, c.framework));
    const Program& p = first_stage(b);
    const auto& compute = p.streams.front().ops;
    double norm_bytes = 0;
    int buckets = 0;
    for (const auto& st : p.streams)
      for (const auto& op : st.ops) {
        if (!op.label.name.starts_with("grad_bucket.") ||
            !std::holds_alternative<CollectiveOp>(op.body))
          continue;
        ++buckets;
        const double bucket = std::get<CollectiveOp>(op.body).bytes.value();
        const auto norm = ops_named(p, op.label.name + ".nan_check_norm");
        const auto scale = ops_named(p, op.label.name + ".scale");
        ASSERT_EQ(norm.size(), c.norm ? 1u : 0u);
        ASSERT_EQ(scale.size(), c.scale ? 1u : 0u);
        if (c.norm) {
          EXPECT_DOUBLE_EQ(compute_bytes(norm[0]), bucket);
          norm_bytes += compute_bytes(norm[0]);
        }
        if (!c.scale) continue;
        EXPECT_DOUBLE_EQ(compute_bytes(scale[0]), 2 * bucket);
        // On the compute stream, and the collective waits for it.
        const bool on_compute = std::any_of(compute.begin(), compute.end(),
                                            [&](const Op& o) { return &o == scale[0]; });
        EXPECT_TRUE(on_compute);
        ASSERT_TRUE(scale[0]->record.has_value());
        EXPECT_NE(std::find(op.waits.begin(), op.waits.end(), *scale[0]->record), op.waits.end());
      }
    EXPECT_GT(buckets, 0);
    // fp32 gradients (bf16's default) of the stage's parameters, each read once by the norms.
    if (c.norm) {
      EXPECT_DOUBLE_EQ(norm_bytes, 4 * first_stage_parameters(b));
    }
  }
}

TEST(StepKernels, EachStepZeroesTheGradientBufferFirst) {
  const Built b = build(scenario("bf16", 1));
  const Program& p = first_stage(b);
  const auto zero = ops_named(p, "zero_grad_buffer");
  ASSERT_EQ(zero.size(), 1u);
  // All of the rank's gradients (the buffer is not sharded at ZeRO-1), fp32: 4 bytes written.
  EXPECT_DOUBLE_EQ(compute_bytes(zero[0]), 4 * first_stage_parameters(b));
  // Before any forward kernel.
  for (const auto& op : p.streams.front().ops) {
    if (std::holds_alternative<ComputeOp>(op.body)) {
      EXPECT_EQ(op.label.name, "zero_grad_buffer");
      break;
    }
  }
}

TEST(StepKernels, SixteenBitGradientsAreCastToFp32MainGradientsFirst) {
  const Built b = build(scenario("bf16", 1, ", grad_dtype: bf16"));
  const Program& p = first_stage(b);
  const double shard = first_stage_parameters(b) / 2;
  const auto seq = optimizer_sequence(p);
  ASSERT_FALSE(seq.empty());
  EXPECT_EQ(seq.front(), "main_grad_cast");
  EXPECT_DOUBLE_EQ(compute_bytes(ops_named(p, "main_grad_cast").at(0)), (2 + 4) * shard);
}

TEST(StepKernels, NoGradientNormAllReduceWhereNoOtherRankHoldsAPart) {
  const Scenario sc = load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 2}\n"
      "model: {family: gpt, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
      "seq_length: 512, vocab_size: 50304}\n"
      "training: {framework: megatron-core, global_batch_size: 4, micro_batch_size: 1, "
      "precision: bf16}\n",
      "dp.yaml");
  const Built b = build(sc);
  const Program& p = *b.job.program_for(0);
  // Pure data parallelism with the plain optimizer: the gradients are whole on every rank after
  // the all-reduce, so the model-parallel group has one rank and Megatron reduces nothing.
  EXPECT_TRUE(ops_named(p, "grad_norm_all_reduce").empty());
  EXPECT_EQ(ops_named(p, "grad_norm_squares").size(), 1u);
}

TEST(StepKernels, Fp8CastsEachWeightOncePerStepAndReducesAmaxesPerPass) {
  const Built b = build(scenario("fp8", 1));
  const Program& p = first_stage(b);
  const ChunkRange range = first_stage_layers(b);
  const int m = 4;  // micro-batches per replica
  double blocks = 0;
  for (int i = range.first; i <= range.last; ++i) {
    const Layer& l = b.shard.layers[static_cast<size_t>(i)];
    const auto casts = ops_named(p, l.name + ".fp8_weight_cast_transpose");
    if (l.kind != "transformer") {
      EXPECT_TRUE(casts.empty()) << l.name;
      continue;
    }
    ++blocks;
    // The first micro-batch only: TE caches the FP8 weight for the others.
    ASSERT_EQ(casts.size(), 1u) << l.name;
    EXPECT_EQ(casts[0]->label.micro_batch, 0);
    EXPECT_DOUBLE_EQ(compute_bytes(casts[0]), (2 + 2) * l.parameters);  // read 2, write 1 + 1
  }
  ASSERT_GT(blocks, 0);
  // 4 FP8 GEMMs per block; 3 fp32 amaxes each forward, 2 backward; one reduction per pass of
  // the chunk over its tensor- and data-parallel ranks (4), then the scale update.
  const double gemms = 4 * blocks;
  for (const auto& [direction, per_gemm] :
       std::vector<std::pair<std::string, double>>{{"forward", 3}, {"backward", 2}}) {
    SCOPED_TRACE(direction);
    const auto reductions = ops_named(p, "fp8_amax_reduction_" + direction);
    ASSERT_EQ(reductions.size(), static_cast<size_t>(m));
    for (const Op* op : reductions) {
      const auto& c = std::get<CollectiveOp>(op->body);
      EXPECT_EQ(c.kind, CollectiveKind::kAllReduce);
      EXPECT_DOUBLE_EQ(c.bytes.value(), 4 * per_gemm * gemms);
      EXPECT_EQ(b.job.group(c.group).name, "amax");
      EXPECT_EQ(b.job.group(c.group).ranks.size(), 4u);
    }
    const auto updates = ops_named(p, "fp8_scale_update_" + direction);
    ASSERT_EQ(updates.size(), static_cast<size_t>(m));
    EXPECT_DOUBLE_EQ(compute_bytes(updates[0]), 20 * per_gemm * gemms);
  }
}

TEST(StepKernels, Bf16HasNoFp8Kernels) {
  const Built b = build(scenario("bf16", 1));
  for (const Program& p : b.job.programs)
    for (const auto& st : p.streams)
      for (const auto& op : st.ops) EXPECT_EQ(op.label.name.find("fp8"), std::string::npos);
}

// Under FP8 the blocks' GEMMs run in FP8 and attention in BF16; the output layer, which is
// Megatron-core's own ColumnParallelLinear rather than a TE module, runs in BF16.
TEST(StepKernels, Fp8RunsBlockGemmsInFp8AndTheOutputLayerInBf16) {
  const Built b = build(scenario("fp8", 1));
  int block_gemms = 0, head_gemms = 0;
  for (const Program& p : b.job.programs)
    for (const auto& op : p.streams.front().ops) {
      const auto* c = std::get_if<ComputeOp>(&op.body);
      if (!c || op.label.layer < 0) continue;
      const Layer& l = b.shard.layers[static_cast<size_t>(op.label.layer)];
      if (c->kind == KernelKind::kAttention) {
        EXPECT_EQ(c->dtype, DType::kBf16) << op.label.name;
      }
      if (c->kind != KernelKind::kGemm) continue;
      if (l.kind == "transformer") {
        EXPECT_EQ(c->dtype, DType::kFp8) << op.label.name;
        ++block_gemms;
      } else if (l.kind == "head") {
        EXPECT_EQ(c->dtype, DType::kBf16) << op.label.name;
        ++head_gemms;
      }
    }
  EXPECT_GT(block_gemms, 0);
  EXPECT_GT(head_gemms, 0);
}

}  // namespace
}  // namespace dtsim
