// training.recompute_layers (Megatron-core's recompute_method block): under recompute full only
// the first N transformer layers of each pipeline chunk recompute, the others keep their
// activations. N = 0 is recompute none, N = the chunk's layers (or auto) is recompute full, and
// in between each recomputed layer trades the same activations for the same recompute kernels.
#include <gtest/gtest.h>

#include <string>

#include "core/exec/analytic_executor.h"
#include "core/exec/engine_registry.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

// An 8-block GPT on 4 A100s: 2 pipeline stages of 2 chunks each (interleaved), 2 blocks per chunk.
std::string scenario(const std::string& training) {
  return "cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 4}\n"
         "model: {family: gpt, num_layers: 8, hidden_size: 1024, num_attention_heads: 16, "
         "seq_length: 1024, vocab_size: 50257}\n"
         "parallelism: {tensor: 2, pipeline: 2, schedule: interleaved, virtual_stages: 2}\n"
         "training: {global_batch_size: 8, micro_batch_size: 1, precision: bf16" +
         training + "}\n";
}

struct Seen {
  double activations = 0;  // at the worst rank's peak
  double stashed = 0;      // kept by the forward passes, all ranks, all micro-batches
  double recompute_kernels = 0;
  double step_s = 0;
};

Seen see(const std::string& training) {
  driver::Plan plan = driver::plan_scenario(load_scenario_text(scenario(training), "r.yaml"));
  Seen s;
  const auto peak = peak_in_program_order(plan.job);
  EXPECT_TRUE(peak.has_value());
  if (peak) s.activations = peak->at_peak[static_cast<size_t>(MemoryCategory::kActivations)];
  for (const Program& p : plan.job.programs)
    for (const Stream& st : p.streams)
      for (const Op& op : st.ops) {
        if (std::holds_alternative<ComputeOp>(op.body) && op.label.phase == Phase::kRecompute)
          s.recompute_kernels += 1;
        if (const auto* m = std::get_if<MemoryOp>(&op.body);
            m && m->category == MemoryCategory::kActivations && op.label.phase == Phase::kForward &&
            m->bytes.value() > 0)
          s.stashed += m->bytes.value();
      }
  RunOptions run;
  s.step_s = make_engine("analytic", engine_settings(plan.scenario))
                 ->run(plan.job, plan.cluster, run)
                 .makespan()
                 .value();
  return s;
}

TEST(RecomputeLayers, EndsAreNoneAndFull) {
  const Seen none = see(", recompute: none");
  const Seen full = see(", recompute: full");
  const Seen zero = see(", recompute: full, recompute_layers: 0");
  const Seen all = see(", recompute: full, recompute_layers: 2");
  const Seen beyond = see(", recompute: full, recompute_layers: 50");
  EXPECT_DOUBLE_EQ(zero.activations, none.activations);
  EXPECT_DOUBLE_EQ(zero.step_s, none.step_s);
  EXPECT_EQ(zero.recompute_kernels, 0);
  EXPECT_DOUBLE_EQ(all.activations, full.activations);
  EXPECT_DOUBLE_EQ(all.step_s, full.step_s);
  EXPECT_DOUBLE_EQ(beyond.step_s, full.step_s);
  EXPECT_LT(full.activations, none.activations);
}

// One of each chunk's two blocks recomputes: halfway between none and full in the recompute
// kernels and in the activations the forward passes keep (every chunk holds the same blocks;
// the embedding and the head, which never recompute, keep theirs in all three), and in between
// at the peak and in time.
TEST(RecomputeLayers, HalfTheLayersIsHalfway) {
  const Seen none = see(", recompute: none");
  const Seen full = see(", recompute: full");
  const Seen half = see(", recompute: full, recompute_layers: 1");
  EXPECT_DOUBLE_EQ(half.recompute_kernels, full.recompute_kernels / 2);
  EXPECT_NEAR(half.stashed, (none.stashed + full.stashed) / 2, 1e-9 * none.stashed);
  EXPECT_GT(half.activations, full.activations);
  EXPECT_LT(half.activations, none.activations);
  EXPECT_GT(half.step_s, none.step_s);
  EXPECT_LT(half.step_s, full.step_s);
}

// Under recompute none or selective the key has no layers to choose: set aside with a note.
TEST(RecomputeLayers, SetAsideWithANoteWithoutFullRecompute) {
  const Scenario sc =
      load_scenario_text(scenario(", recompute: selective, recompute_layers: 1"), "r.yaml");
  bool noted = false;
  for (const auto& n : sc.notes) noted |= n.find("training.recompute_layers") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(sc.training.recompute_layers, -1);
}

}  // namespace
}  // namespace dtsim
