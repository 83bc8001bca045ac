// Memory and traffic of the parallel strategies against the reference formulas
// (docs/reference.md: Korthikanti et al. 2022; Rajbhandari et al. 2020; Narayanan et al. 2021).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "core/exec/analytic_executor.h"
#include "core/report/metrics.h"
#include "core/strategy/strategy.h"
#include "driver/predict.h"
#include "models/model_builder.h"
#include "models/model_spec.h"
#include "models/scenario_model.h"
#include "tests/support/uniform_layers.h"

namespace dtsim {
namespace {

// ---------------------------------------------------------------------------------------------
// Activation memory per layer: Korthikanti et al. 2022, Table 2 (docs/reference.md).

const Layer& block0(const ModelGraph& g) {
  for (const auto& l : g.layers)
    if (l.name == "block.0") return l;
  throw std::runtime_error("no block.0");
}

TEST(ActivationMemory, PerLayerMatchesKorthikantiForEveryTensorAndSequenceSetting) {
  // GPT-3 175B: s 2048, h 12288, a 96; micro-batch 1.
  const auto spec = models::find_preset("gpt3-175b");
  ASSERT_NE(spec, nullptr);
  const double s = 2048, b = 1, h = 12288, a = 96;
  const double sbh = s * b * h, attention = 5 * a * s / h;
  std::printf(" t  sp  recompute   dtsim (GB)  formula (GB)\n");
  for (int t : {1, 2, 4, 8})
    for (bool sp : {false, true}) {
      if (sp && t == 1) continue;
      models::BuildOptions options;
      options.micro_batch_size = 1;
      options.tensor_parallel = t;
      options.sequence_parallel = sp;
      const Layer& l = block0(models::build_model(*spec, options));
      const double none = sp ? sbh / t * (34 + attention) : sbh * (10 + 24.0 / t + attention / t);
      const double selective = sp ? sbh / t * 34 : sbh * (10 + 24.0 / t);
      // Full recompute keeps the layer input: 2sbh, or its sequence shard under SP.
      const double full = sp ? 2 * sbh / t : 2 * sbh;
      const std::pair<const char*, std::pair<double, double>> rows[] = {
          {"none", {l.activation_bytes.value(), none}},
          {"selective", {l.activation_bytes_selective.value(), selective}},
          {"full", {l.activation_bytes_full.value(), full}}};
      for (const auto& [name, v] : rows) {
        std::printf("%2d  %-3s %-10s %10.4f  %12.4f\n", t, sp ? "yes" : "no", name, v.first / 1e9,
                    v.second / 1e9);
        EXPECT_NEAR(v.first, v.second, 0.01 * v.second) << "t=" << t << " sp=" << sp << " " << name;
      }
    }
}

// The first 1F1B stage holds p micro-batches of its l/p layers: l layers' worth, Korthikanti's
// equation (5), (s·b·h·l/t)·(34 + 5as/h), plus the input embedding's dropout masks for the p
// micro-batches (s·b·h·p/t, their section 4.3), with tensor and sequence parallelism.
TEST(ActivationMemory, FirstStageOf1F1BHoldsEquationFive) {
  const std::string yaml = R"(cluster: {gpu: A100-SXM-80GB, nodes: 8, gpus_per_node: 8}
model: {preset: gpt3-175b}
parallelism: {tensor: 8, pipeline: 8, sequence_parallel: true, schedule: 1f1b}
training: {global_batch_size: 32, micro_batch_size: 1, precision: bf16}
simulate: {engine: analytic}
)";
  const auto plan = driver::plan_scenario(load_scenario_text(yaml, "eq5.yaml"));
  const Trace trace =
      AnalyticExecutor().run(plan.job, Cluster(plan.scenario.cluster), RunOptions{});
  double first_stage = -1;
  for (const auto& m : trace.memory)
    if (m.rank == 0)
      first_stage = m.at_peak[static_cast<size_t>(MemoryCategory::kActivations)].value();
  const double s = 2048, b = 1, h = 12288, a = 96, l = 96, t = 8, p = 8;
  const double eq5 = s * b * h * l / t * (34 + 5 * a * s / h);
  const double embedding = s * b * h * p / t;
  std::printf("first stage: dtsim %.4f GB, eq. 5 %.4f GB + embedding masks %.4f GB\n",
              first_stage / 1e9, eq5 / 1e9, embedding / 1e9);
  EXPECT_NEAR(first_stage, eq5 + embedding, 0.01 * (eq5 + embedding));
}

// ---------------------------------------------------------------------------------------------
// ZeRO: per-device model-state bytes for a 7.5B-parameter model, mixed-precision Adam (K = 12),
// against Rajbhandari et al. 2020, Table 1, through the whole pipeline (the memory events of
// the built program, timed by the analytic engine). The paper's table has 16-bit gradients
// (2 + 2 + K bytes per parameter), so these scenarios set grad_dtype to bf16; fp32 gradients
// (the bf16 default) are checked against Megatron-LM's distributed-optimizer table below.

std::string zero_yaml(int nd, int stage, const std::string& grad_dtype = "bf16") {
  return "cluster:\n  gpu: A100-SXM-80GB\n  nodes: " + std::to_string((nd + 7) / 8) +
         "\n  gpus_per_node: " + std::to_string(std::min(nd, 8)) +
         "\nmodel: {preset: unused}\nparallelism: {zero_stage: " + std::to_string(stage) +
         "}\ntraining: {global_batch_size: " + std::to_string(nd) +
         ", micro_batch_size: 1, precision: bf16, optimizer: adam, grad_dtype: " + grad_dtype +
         "}\n"
         "simulate: {engine: analytic}\n";
}

// 7.5e9 parameters in 75 layers of 1e8, each with one small GEMM.
ModelGraph seven_and_a_half_billion() {
  return testing::uniform_layers({.count = 75, .forward_flops = 1e9, .parameters = 1e8});
}

struct StateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

StateBytes simulated_state(int nd, int stage, const std::string& grad_dtype = "bf16") {
  const Scenario sc = load_scenario_text(zero_yaml(nd, stage, grad_dtype), "zero.yaml");
  const ModelGraph g = seven_and_a_half_billion();
  const Job job = build_job(g, sc);
  const Trace trace = AnalyticExecutor().run(job, Cluster(sc.cluster), RunOptions{});
  StateBytes s;
  for (const auto& m : trace.memory) {
    s.weights = m.at_peak[static_cast<size_t>(MemoryCategory::kWeights)].value();
    s.gradients = m.at_peak[static_cast<size_t>(MemoryCategory::kGradients)].value();
    s.optimizer = m.at_peak[static_cast<size_t>(MemoryCategory::kOptimizer)].value();
  }
  return s;
}

TEST(ZeroMemory, ModelStatesEqualTheZeroFormulas) {
  const double psi = 7.5e9, k = 12;
  std::printf("   N_d  stage   dtsim (GB)   formula (GB)\n");
  for (int nd : {1, 4, 16, 64, 256, 1024})
    for (int stage = 0; stage <= 3; ++stage) {
      const double formula = stage == 0   ? (2 + 2 + k) * psi
                             : stage == 1 ? 4 * psi + k * psi / nd
                             : stage == 2 ? 2 * psi + (2 + k) * psi / nd
                                          : (2 + 2 + k) * psi / nd;
      const StateBytes s = simulated_state(nd, stage);
      std::printf("%6d  %5d  %11.3f  %13.3f\n", nd, stage, s.total() / 1e9, formula / 1e9);
      EXPECT_DOUBLE_EQ(s.total(), formula) << "N_d=" << nd << " stage " << stage;
    }
}

// bf16 training with fp32 gradients (grad_dtype auto: Megatron-LM's default for bf16): 2 B
// weights, 4 B gradients, K = 12, as Megatron-LM's docs/source/distrib_optimizer.md counts them
// ("bf16 param, fp32 grads": 18 B/param, 6 + 12/d with the distributed optimizer).
TEST(ZeroMemory, Fp32GradientsTakeFourBytesPerParameter) {
  const double psi = 7.5e9, k = 12;
  for (int nd : {1, 16, 256})
    for (int stage = 0; stage <= 3; ++stage) {
      const double formula = stage == 0   ? (2 + 4 + k) * psi
                             : stage == 1 ? (2 + 4) * psi + k * psi / nd
                             : stage == 2 ? 2 * psi + (4 + k) * psi / nd
                                          : (2 + 4 + k) * psi / nd;
      const StateBytes s = simulated_state(nd, stage, "auto");
      EXPECT_DOUBLE_EQ(s.total(), formula) << "N_d=" << nd << " stage " << stage;
      EXPECT_DOUBLE_EQ(s.gradients, stage >= 2 ? 4 * psi / nd : 4 * psi);
      EXPECT_DOUBLE_EQ(simulated_state(nd, stage, "fp32").total(), formula);
    }
}

// ---------------------------------------------------------------------------------------------
// Traffic volumes (docs/reference.md, "Communication volume" and the ZeRO table).

// Bytes each collective kind carries in the programs, summed over ops labelled by `filter`.
std::map<CollectiveKind, double> collective_bytes(const Job& job, Rank rank,
                                                  const std::string& group_name,
                                                  const std::string& label_prefix = "") {
  std::map<CollectiveKind, double> out;
  const Program* p = job.program_for(rank);
  if (!p) return out;
  for (const auto& s : p->streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<CollectiveOp>(&op.body))
        if (job.group(c->group).name == group_name && op.label.name.rfind(label_prefix, 0) == 0)
          out[c->kind] += c->bytes.value();
  return out;
}

std::string gpt_yaml(const std::string& parallelism) {
  return R"(cluster: {gpu: A100-SXM-80GB, nodes: 4, gpus_per_node: 8}
model: {preset: gpt3-13b}
parallelism: )" +
         parallelism + R"(
training: {global_batch_size: 16, micro_batch_size: 2, precision: bf16}
simulate: {engine: analytic}
)";
}

TEST(Traffic, TensorParallelLayerMovesFourHiddenStatesPerMicroBatch) {
  // gpt3-13b: s 2048, h 5120; b = 2; bf16.
  const double bsh_bytes = 2.0 * 2048 * 5120 * 2;
  for (bool sp : {false, true}) {
    const auto plan = driver::plan_scenario(
        load_scenario_text(gpt_yaml(std::string("{tensor: 8, pipeline: 4, sequence_parallel: ") +
                                    (sp ? "true" : "false") + "}"),
                           "tp.yaml"));
    const int m = static_cast<int>(plan.scenario.micro_batches());
    // Block 0's collectives on the TP group over the whole step, per micro-batch.
    const auto bytes = collective_bytes(plan.job, 0, "tp", "block.0.");
    if (!sp) {
      // 2 all-reduces forward and 2 backward, each of b·s·h elements.
      EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kAllReduce) / m, 4 * bsh_bytes);
      EXPECT_EQ(bytes.count(CollectiveKind::kAllGather), 0u);
      EXPECT_EQ(bytes.count(CollectiveKind::kReduceScatter), 0u);
    } else {
      // Each all-reduce becomes a reduce-scatter plus an all-gather; backward also all-gathers
      // the two sharded GEMM inputs again for the weight gradients (Megatron-LM).
      EXPECT_EQ(bytes.count(CollectiveKind::kAllReduce), 0u);
      EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kReduceScatter) / m, 4 * bsh_bytes);
      EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kAllGather) / m, (4 + 2) * bsh_bytes);
    }
  }
}

// How many sends a rank's program makes, and their bytes.
std::pair<int, double> sends_of(const Job& job, Rank rank) {
  int sends = 0;
  double bytes = 0;
  for (const auto& s : job.program_for(rank)->streams)
    for (const auto& op : s.ops)
      if (const auto* send = std::get_if<SendOp>(&op.body)) {
        bytes += send->bytes.value();
        ++sends;
      }
  return {sends, bytes};
}

TEST(Traffic, PipelineSendsOneHiddenStatePerMicroBatchPerBoundary) {
  const double bsh_bytes = 2.0 * 2048 * 5120 * 2;
  for (bool sp : {false, true}) {
    const auto plan = driver::plan_scenario(
        load_scenario_text(gpt_yaml(std::string("{tensor: 8, pipeline: 4, sequence_parallel: ") +
                                    (sp ? "true" : "false") + "}"),
                           "pp.yaml"));
    const int m = static_cast<int>(plan.scenario.micro_batches());
    // Stage 1 (rank 8): receives activations and sends gradients to stage 0, sends activations
    // and receives gradients from stage 2: m of each.
    const auto [sends, sent] = sends_of(plan.job, 8);
    EXPECT_EQ(sends, 2 * m);
    // b·s·h elements, or b·s·h/t when sequence parallelism shards them.
    EXPECT_DOUBLE_EQ(sent / sends, sp ? bsh_bytes / 8 : bsh_bytes);
  }
}

// Bytes a collective puts on each rank's links, in units of its size: the bus factor without
// the (n-1)/n, as ZeRO counts: an all-reduce moves 2Ψ, an all-gather or reduce-scatter Ψ.
double zero_traffic(const Job& job) {
  double moved = 0;
  for (const auto& [kind, bytes] : collective_bytes(job, 0, "dp"))
    moved += (kind == CollectiveKind::kAllReduce ? 2 : 1) * bytes;
  return moved;
}

TEST(Traffic, ZeroThreeMovesOneAndAHalfTimesDataParallel) {
  const ModelGraph g = seven_and_a_half_billion();
  std::map<int, double> moved;
  for (int stage = 0; stage <= 3; ++stage) {
    const Scenario sc = load_scenario_text(zero_yaml(64, stage), "zero.yaml");
    ASSERT_EQ(sc.micro_batches(), 1);
    moved[stage] = zero_traffic(build_job(g, sc));
  }
  const double psi_bytes = 7.5e9 * 2;
  std::printf(
      "ZeRO traffic per step (Psi = %.1f GB of bf16): stage 0 %.2f, 1 %.2f, 2 %.2f, 3 %.2f\n",
      psi_bytes / 1e9, moved[0] / psi_bytes, moved[1] / psi_bytes, moved[2] / psi_bytes,
      moved[3] / psi_bytes);
  EXPECT_DOUBLE_EQ(moved[0], 2 * psi_bytes);
  EXPECT_DOUBLE_EQ(moved[1], 2 * psi_bytes);
  EXPECT_DOUBLE_EQ(moved[2], 2 * psi_bytes);
  EXPECT_DOUBLE_EQ(moved[3], 3 * psi_bytes);
  EXPECT_DOUBLE_EQ(moved[3] / moved[0], 1.5);
}

// fp32 gradients double the gradient traffic, not the weight all-gathers: stage 0 all-reduces
// 4Ψ bytes (8Ψ moved), stages 1-2 reduce-scatter 4Ψ and all-gather 2Ψ of bf16 weights; stage
// 3 gathers 2Ψ twice and reduce-scatters 4Ψ. The collectives carry the fp32 dtype.
TEST(Traffic, Fp32GradientsAreReducedInFp32) {
  const ModelGraph g = seven_and_a_half_billion();
  const double psi = 7.5e9;
  std::map<int, double> moved;
  for (int stage = 0; stage <= 3; ++stage) {
    const Scenario sc = load_scenario_text(zero_yaml(64, stage, "auto"), "zero.yaml");
    ASSERT_EQ(sc.training.grad_dtype, DType::kFp32);
    const Job job = build_job(g, sc);
    moved[stage] = zero_traffic(job);
    for (const auto& st : job.programs.front().streams)
      for (const auto& op : st.ops)
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          if (c->kind != CollectiveKind::kAllGather && job.group(c->group).name == "dp") {
            EXPECT_EQ(c->dtype, DType::kFp32) << op.label.name;
          }
        }
  }
  EXPECT_DOUBLE_EQ(moved[0], 8 * psi);
  EXPECT_DOUBLE_EQ(moved[1], 6 * psi);
  EXPECT_DOUBLE_EQ(moved[2], 6 * psi);
  EXPECT_DOUBLE_EQ(moved[3], 8 * psi);
}

// Expert parallelism (Megatron-Core's all-to-all dispatcher): per MoE layer and micro-batch, a
// dispatch and a combine all-to-all forward and the same backward, each carrying the k routed
// copies of this rank's tokens; each rank holds E/ep experts.
TEST(Traffic, ExpertParallelLayerRunsFourAllToAllsOfTheRoutedTokens) {
  const auto spec = *models::find_preset("mixtral-8x7b");
  const std::string yaml = R"(cluster: {gpu: H100-SXM, nodes: 8, gpus_per_node: 8}
model: {preset: mixtral-8x7b}
parallelism: {tensor: 2, pipeline: 4, expert: 8, sequence_parallel: true}
training: {global_batch_size: 64, micro_batch_size: 1, precision: bf16}
simulate: {engine: analytic}
)";
  const auto plan = driver::plan_scenario(load_scenario_text(yaml, "ep.yaml"));
  const int m = static_cast<int>(plan.scenario.micro_batches());
  const double tokens = 1.0 * spec.seq_length / 2;  // this rank's sequence shard (SP, t = 2)
  const double routed_bytes = 2.0 * spec.top_k * tokens * spec.hidden_size;
  const auto bytes = collective_bytes(plan.job, 0, "ep", "block.0.");
  EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kAllToAll) / m, 4 * routed_bytes);
  // Expert weights: E/ep = 1 expert of 3 SwiGLU matrices h x f per rank in each block.
  const ModelGraph shard = models::shard_from_scenario(plan.scenario);
  int blocks_checked = 0;
  for (const auto& l : shard.layers) {
    if (l.name == "block.0") {
      ++blocks_checked;
      EXPECT_DOUBLE_EQ(l.expert_parameters,
                       3.0 * spec.hidden_size * spec.ffn_hidden_size * spec.num_experts / 8);
    }
  }
  EXPECT_EQ(blocks_checked, 1);
  // Every expert-data-parallel group (the ranks holding the same experts: t x d / ep) reduces
  // the expert gradients; the dense ones go over all d ranks.
  // d = 64 / (2 x 4) = 8.
  int checked = 0;
  for (const auto& g : plan.job.groups) {
    const size_t expected = g.name == "edp" ? 2 * 8 / 8 : g.name == "dp" || g.name == "ep" ? 8 : 0;
    if (expected > 0) {
      EXPECT_EQ(g.ranks.size(), expected) << g.name;
      ++checked;
    }
  }
  // The Job lists every group of the world: t x p = 8 "dp" and 8 "ep" groups, and p x ep = 32
  // "edp" groups (one per stage and dp mod ep). None may go unchecked.
  EXPECT_EQ(checked, 8 + 8 + 32);
}

// Context parallelism: each rank holds s/cp tokens; per layer and micro-batch it all-gathers
// the keys and values (2·b·s·kv bytes of bf16 over the group, divided by t), again in backward,
// and reduce-scatters their gradients; attention FLOPs per rank are 1/cp of the layer's.
TEST(Traffic, ContextParallelGathersKeysAndValuesOfTheWholeSequence) {
  const double s = 2048, b = 2, kv = 5120, t = 4;
  const double kv_bytes = 2 * 2 * b * s * kv / t;
  const auto plan = driver::plan_scenario(
      load_scenario_text(gpt_yaml("{tensor: 4, pipeline: 2, context: 2}"), "cp.yaml"));
  const int m = static_cast<int>(plan.scenario.micro_batches());
  const auto bytes = collective_bytes(plan.job, 0, "cp", "block.0.");
  EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kAllGather) / m, 2 * kv_bytes);
  EXPECT_DOUBLE_EQ(bytes.at(CollectiveKind::kReduceScatter) / m, kv_bytes);
  const ModelGraph whole = models::model_from_scenario(plan.scenario);
  const ModelGraph shard = models::shard_from_scenario(plan.scenario);
  EXPECT_NEAR(shard.model_flops_per_micro_batch().value(),
              whole.model_flops_per_micro_batch().value() / (t * 2),
              1e-9 * whole.model_flops_per_micro_batch().value());
}

// Mixed precision: fp16 needs dynamic loss scaling, a pass over every local gradient (read and
// write) plus an overflow-flag all-reduce before the optimizer step; bf16 needs neither.
TEST(MixedPrecision, Fp16PaysForLossScalingAndBf16DoesNot) {
  const ModelGraph g = seven_and_a_half_billion();
  for (const char* precision : {"fp16", "bf16"}) {
    Scenario sc = load_scenario_text(zero_yaml(8, 0), "amp.yaml",
                                     {{std::string("training.precision=") + precision}});
    const Job job = build_job(g, sc);
    double check_bytes = -1;
    int flags = 0;
    for (const auto& st : job.programs.front().streams)
      for (const auto& op : st.ops) {
        if (op.label.name == "loss_scale_unscale_and_check")
          check_bytes = std::get<ComputeOp>(op.body).bytes.value();
        if (op.label.name == "loss_scale_overflow_flag") ++flags;
      }
    if (std::string(precision) == "fp16") {
      EXPECT_DOUBLE_EQ(check_bytes, 2 * 7.5e9 * 2);  // 2-byte gradients, read and written
      EXPECT_EQ(flags, 1);
    } else {
      EXPECT_EQ(check_bytes, -1);
      EXPECT_EQ(flags, 0);
    }
  }
}

// TP communication overlap moves the sequence-parallel collectives next to GEMMs onto their own
// stream: the same bytes, less exposed time, and never faster than the compute alone. The GEMMs
// beside the collectives run on the SMs the collectives' NCCL blocks leave
// (core/exec/overlap_contention.h), so compute takes longer than in line, and the step is still
// shorter.
TEST(TensorParallelOverlap, HidesCollectivesBehindGemmsWithoutChangingTraffic) {
  auto run = [](bool overlap) {
    const auto plan = driver::plan_scenario(
        load_scenario_text(gpt_yaml(std::string("{tensor: 8, pipeline: 4, sequence_parallel: true, "
                                                "tp_comm_overlap: ") +
                                    (overlap ? "true" : "false") + "}"),
                           "overlap.yaml"));
    const Trace trace =
        AnalyticExecutor().run(plan.job, Cluster(plan.scenario.cluster), RunOptions{});
    const Results r = compute_results(plan.scenario, plan.model, plan.job, trace);
    double bytes = 0;
    for (const auto& [kind, b] : collective_bytes(plan.job, 0, "tp")) bytes += b;
    return std::make_pair(r, bytes);
  };
  const auto [inline_r, inline_bytes] = run(false);
  const auto [overlap_r, overlap_bytes] = run(true);
  EXPECT_DOUBLE_EQ(overlap_bytes, inline_bytes);
  EXPECT_GT(overlap_r.breakdown_s.compute, inline_r.breakdown_s.compute);
  EXPECT_LT(overlap_r.breakdown_s.exposed_communication,
            0.7 * inline_r.breakdown_s.exposed_communication);
  EXPECT_LT(overlap_r.step_time_s, inline_r.step_time_s);
  EXPECT_GE(overlap_r.step_time_s, overlap_r.breakdown_s.compute);
}

// Tied embeddings in a pipeline: the last stage keeps a copy of the word-embedding shard for the
// output head (V h / t parameters of weights, gradients and optimizer state) and the first and
// last stages all-reduce its gradients each step (Megatron-LM's embedding group).
TEST(Traffic, TiedEmbeddingsAreSyncedBetweenFirstAndLastStage) {
  const auto spec = *models::find_preset("gpt3-13b");
  ASSERT_TRUE(spec.tied_embeddings);
  const double shard = 1.0 * spec.vocab_size * spec.hidden_size / 8;
  for (int p : {1, 4}) {
    const auto plan = driver::plan_scenario(load_scenario_text(
        gpt_yaml("{tensor: 8, pipeline: " + std::to_string(p) + "}"), "tied.yaml"));
    const Rank last = 8 * (p - 1);
    const auto first_bytes = collective_bytes(plan.job, 0, "embedding");
    const auto last_bytes = collective_bytes(plan.job, last, "embedding");
    if (p == 1) {
      EXPECT_TRUE(first_bytes.empty());
      continue;
    }
    // fp32 gradients (bf16 training's grad_dtype auto): 4 B per parameter.
    EXPECT_DOUBLE_EQ(first_bytes.at(CollectiveKind::kAllReduce), 4 * shard);
    EXPECT_DOUBLE_EQ(last_bytes.at(CollectiveKind::kAllReduce), 4 * shard);
    // The last stage's weights: its blocks, final norm and the tied copy (bf16, 2 B each).
    double params = shard;
    const ModelGraph g = models::shard_from_scenario(plan.scenario);
    const int blocks = spec.num_layers / p;
    for (const auto& l : g.layers) {
      const bool last_stage_block =
          l.name.rfind("block.", 0) == 0 && std::stoi(l.name.substr(6)) >= spec.num_layers - blocks;
      if (last_stage_block || l.name == "final_norm" || l.name == "lm_head") params += l.parameters;
    }
    const Trace trace =
        AnalyticExecutor().run(plan.job, Cluster(plan.scenario.cluster), RunOptions{});
    double weights = -1;
    for (const auto& m : trace.memory)
      if (m.rank == last)
        weights = m.at_peak[static_cast<size_t>(MemoryCategory::kWeights)].value();
    EXPECT_DOUBLE_EQ(weights, 2 * params);
  }
}

// Scatter/gather between stages (Narayanan et al. 2021, section 4.1): b s h / t per send, and
// the receiver all-gathers b s h over its TP group once per received tensor.
TEST(Traffic, PipelineScatterGatherSendsOneTensorShardAndGathersIt) {
  const double bsh_bytes = 2.0 * 2048 * 5120 * 2;
  const auto plan = driver::plan_scenario(load_scenario_text(
      gpt_yaml("{tensor: 8, pipeline: 4, pipeline_scatter_gather: true}"), "sg.yaml"));
  const int m = static_cast<int>(plan.scenario.micro_batches());
  const auto [sends, sent] = sends_of(plan.job, 8);
  EXPECT_EQ(sends, 2 * m);
  EXPECT_DOUBLE_EQ(sent / sends, bsh_bytes / 8);
  // Stage 1 receives m activations and m gradients.
  EXPECT_DOUBLE_EQ(collective_bytes(plan.job, 8, "tp", "pp.").at(CollectiveKind::kAllGather),
                   2 * m * bsh_bytes);
}

}  // namespace
}  // namespace dtsim
