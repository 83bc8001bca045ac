// One transformer layer of the 22B GPT of Korthikanti et al. 2022, Table 4 (docs/reference.md):
// h 6144, 64 heads, s 2048, micro-batch 4, t = 8 on A100, forward and backward times for five
// settings. The published figures are measurements dtsim was not calibrated against (its GEMM,
// attention and memory efficiencies come from microbenchmarks, docs/hardware.md), so this is a
// validation: each prediction must land within 5% (the accuracy target for this table).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/collectives/cost_model.h"
#include "core/exec/compute_cost.h"
#include "core/exec/overlap_contention.h"
#include "core/scenario/scenario.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim {
namespace {

struct Setting {
  const char* name;
  bool sequence_parallel;
  Recompute recompute;
  double forward_ms;   // Korthikanti et al. 2022, Table 4
  double backward_ms;  // (backward includes the recomputation)
};

struct LayerTime {
  double forward = 0, backward = 0;
};

// Times block 0's kernels in order on one A100 of an 8-GPU NVSwitch node, with the TP
// collectives timed by the same closed forms the analytic engine uses.
LayerTime layer_time(const Setting& st) {
  const Scenario sc = load_scenario_text(
      "cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 8}\nmodel: {preset: unused}\n",
      "a100.yaml");
  models::ModelSpec spec = *models::find_preset("gpt3-175b");
  spec.name = "gpt-22b";
  spec.num_layers = 48;
  spec.hidden_size = 6144;
  spec.num_attention_heads = 64;
  spec.num_query_groups = 64;
  spec.ffn_hidden_size = 4 * 6144;
  spec.seq_length = 2048;
  models::BuildOptions options;
  options.micro_batch_size = 4;
  options.tensor_parallel = 8;
  options.sequence_parallel = st.sequence_parallel;
  const ModelGraph g = models::build_model(spec, options);
  const Layer* block = nullptr;
  for (const auto& l : g.layers)
    if (l.name == "block.0") block = &l;
  EXPECT_NE(block, nullptr);
  const std::vector<Rank> tp{0, 1, 2, 3, 4, 5, 6, 7};
  const Cluster cluster(sc.cluster);
  // SMs a GEMM beside a TP collective keeps: the collective's NCCL blocks take the others.
  const int sms_beside = sc.cluster.gpu.sm_count - collective_sms(cluster, 8);
  auto op_of = [](const Kernel& k) { return compute_op_of(k, DType::kBf16); };
  auto time_of = [&](const Kernel& k) {
    if (k.kind != KernelKind::kCommunication) return compute_time(op_of(k), sc.cluster.gpu).value();
    CollectiveOp op;
    op.kind = collective_kind(k.pattern);
    op.bytes = k.bytes;
    return collective_time(op, tp, cluster).value();
  };
  // `async`: the column-parallel GEMMs' backward collectives run beside the GEMM after them, as
  // Megatron-LM launches them (core/strategy/parallel_step.cc, async_tp_backward): the pair
  // costs the longer of the collective and the GEMM, which runs on the SMs the collective leaves
  // while the collective lasts (core/exec/overlap_contention.h).
  auto run = [&](const std::vector<Kernel>& ks, bool async) {
    double t = 0;
    for (size_t j = 0; j < ks.size(); ++j) {
      const Kernel& k = ks[j];
      const bool paired =
          async && k.kind == KernelKind::kCommunication &&
          (k.name.ends_with("_tp_enter.backward") || k.name.ends_with("_sp_regather.backward")) &&
          j + 1 < ks.size() && ks[j + 1].kind == KernelKind::kGemm;
      if (paired) {
        const ComputeOp gemm = op_of(ks[j + 1]);
        const double speed =
            compute_time(gemm, sc.cluster.gpu) / compute_time(gemm, sc.cluster.gpu, sms_beside);
        const Seconds collective(time_of(k));
        t +=
            std::max(collective, time_beside_window(Seconds(time_of(ks[j + 1])), collective, speed))
                .value();
        ++j;
      } else {
        t += time_of(k);
      }
    }
    return t;
  };
  LayerTime out;
  out.forward = run(block->forward, false);
  out.backward = run(block->backward, true);
  if (st.recompute == Recompute::kFull) out.backward += out.forward;
  if (st.recompute == Recompute::kSelective) out.backward += run(block->selective_recompute, false);
  return out;
}

TEST(LayerTiming, TwentyTwoBillionLayerOnA100MatchesKorthikantiTableFour) {
  const Setting settings[] = {
      {"no recompute", false, Recompute::kNone, 7.7, 11.9},
      {"sequence parallel", true, Recompute::kNone, 7.2, 11.8},
      {"full recompute", false, Recompute::kFull, 7.7, 19.5},
      {"selective recompute", false, Recompute::kSelective, 7.7, 13.2},
      {"selective + sequence parallel", true, Recompute::kSelective, 7.2, 13.1},
  };
  std::printf("%-30s %9s %9s %7s %9s %9s %7s\n", "setting", "fwd (ms)", "paper", "error",
              "bwd (ms)", "paper", "error");
  for (const auto& st : settings) {
    const LayerTime t = layer_time(st);
    const double f = t.forward * 1e3, b = t.backward * 1e3;
    std::printf("%-30s %9.2f %9.1f %+6.1f%% %9.2f %9.1f %+6.1f%%\n", st.name, f, st.forward_ms,
                100 * (f / st.forward_ms - 1), b, st.backward_ms, 100 * (b / st.backward_ms - 1));
    EXPECT_NEAR(f, st.forward_ms, 0.05 * st.forward_ms) << st.name;
    EXPECT_NEAR(b, st.backward_ms, 0.05 * st.backward_ms) << st.name;
  }
}

// The unfused attention core's memory factors (core/hardware/published_rates.cc) come from the
// Megatron rows of Dao et al. 2022, appendix E.6: the core alone, 16 sequences x 8 heads of
// dimension 64 at 2048 tokens, FP16 on an A100 40GB. Timing the same core from dtsim's kernels
// must give back those measurements (forward and backward, with and without dropout), up to the
// launch overheads and the GEMMs' FLOP side, which the derivation leaves out. Backward keeps a
// known gap: dK = dSᵀ·Q has m = 64 (the head dimension), which the 256 x 128 tile and the
// assumed attention_efficiency price FLOP-bound at 1.76 ms where the factor assumed it
// memory-bound (1.30 ms), so backward comes out 5% slow here; 6% allows that and no more.
TEST(LayerTiming, UnfusedAttentionCoreReproducesItsMicrobenchmark) {
  const Scenario sc = load_scenario_text(
      "cluster: {gpu: A100-SXM-40GB, nodes: 1, gpus_per_node: 1}\nmodel: {preset: unused}\n",
      "a100-40gb.yaml");
  struct Row {
    bool dropout;
    double forward_ms, backward_ms;  // Tables 18/19 (no dropout) and 15/16 (dropout 0.1)
  };
  for (const Row& row : {Row{false, 4.28, 8.86}, Row{true, 6.56, 10.80}}) {
    models::ModelSpec spec = *models::find_preset("gpt3-175b");
    spec.num_layers = 1;
    spec.hidden_size = 512;
    spec.num_attention_heads = 8;
    spec.num_query_groups = 8;
    spec.ffn_hidden_size = 2048;
    spec.seq_length = 2048;
    spec.dropout = row.dropout;
    models::BuildOptions options;
    options.micro_batch_size = 16;
    const ModelGraph g = models::build_model(spec, options);
    const Layer* block = nullptr;
    for (const auto& l : g.layers)
      if (l.name == "block.0") block = &l;
    ASSERT_NE(block, nullptr);
    auto core_ms = [&](const std::vector<Kernel>& ks) {
      double t = 0;
      for (const auto& k : ks)
        if (k.name.rfind("attention_scores", 0) == 0 || k.name.rfind("softmax", 0) == 0 ||
            k.name.rfind("attention_dropout", 0) == 0 || k.name.rfind("attention_v", 0) == 0)
          t += compute_time(compute_op_of(k, DType::kFp16), sc.cluster.gpu).value();
      return t * 1e3;
    };
    const double fwd = core_ms(block->forward), bwd = core_ms(block->backward);
    std::printf(
        "attention core, dropout %d: forward %.2f ms (measured %.2f), backward %.2f ms "
        "(measured %.2f)\n",
        row.dropout, fwd, row.forward_ms, bwd, row.backward_ms);
    EXPECT_NEAR(fwd, row.forward_ms, 0.02 * row.forward_ms);
    EXPECT_NEAR(bwd, row.backward_ms, 0.06 * row.backward_ms);
  }
}

}  // namespace
}  // namespace dtsim
