// Gradient compression and PipeDream's flushless pipelines against their closed forms
// (docs/models.md, "Gradient compression" and "PipeDream schedules"):
// - compression: the data-parallel bytes each rank puts on the wire fall by the method's factor
//   (casts: the width ratio; int8: one byte plus a 4-byte scale per bucket; top-k: d·n
//   (value, index) pairs from every rank over an all-gather, Lin et al. 2018; PowerSGD: (rows +
//   cols)·r per weight matrix over two all-reduces, Vogels et al. 2019); step time improves on
//   BERT-large over 100 Gb Ethernet and worsens on one NVSwitch node, where the all-reduce hides
//   behind backward and the compression kernels do not;
// - PipeDream-async and 2BW (Narayanan et al. 2019, 2021): p equal stages run at one micro-batch
//   per stage time, with no bubble, on both engines; stage s holds p - s weight versions under
//   pipedream-async and two under 2BW.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "core/exec/analytic_executor.h"
#include "core/exec/compute_cost.h"
#include "core/hardware/cluster.h"
#include "core/report/metrics.h"
#include "core/strategy/model_state.h"
#include "core/strategy/strategy.h"
#include "driver/predict.h"
#include "models/scenario_model.h"
#include "sim/simgrid_executor.h"
#include "tests/support/uniform_layers.h"

namespace dtsim {
namespace {

// ---------------------------------------------------------------------------------------------
// Compression: bytes on the wire.

// A GPT of 2 blocks (h 512, V 8192, s 512) data-parallel over 16 H100; one gradient bucket for
// the whole model, so that the closed forms need no bucketing.
constexpr int kData = 16;
constexpr double kH = 512, kV = 8192, kS = 512, kBlocks = 2;
std::string dp_yaml(const std::string& training_extra) {
  return "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr, "
         "topology: fat-tree, nics_per_node: 8}}\n"
         "model: {family: gpt, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
         "seq_length: 512, vocab_size: 8192}\n"
         "parallelism: {data: auto}\n"
         "training: {global_batch_size: 32, micro_batch_size: 2, precision: bf16, "
         "gradient_bucket: 1GiB, first_gradient_bucket: 1GiB" +
         training_extra +
         "}\n"
         "simulate: {engine: analytic}\n";
}

// Bytes one rank sends for the data-parallel gradients: a ring all-reduce of S moves
// 2(n-1)/n·S per rank, a ring all-gather of the gathered S moves (n-1)/n·S (docs/reference.md).
struct Wire {
  double bytes = 0;
  int collectives = 0;
  double compression_kernel_bytes = 0;
};
Wire gradient_wire(const std::string& training_extra) {
  const Scenario sc = load_scenario_text(dp_yaml(training_extra), "dp.yaml");
  const auto graphs = models::graphs_from_scenario(sc);
  const Program p = build_program(graphs.shard, sc, 0);
  Wire w;
  const double n = kData;
  for (const auto& stream : p.streams)
    for (const Op& op : stream.ops) {
      if (op.label.phase != Phase::kGradientSync) continue;
      if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
        const double factor = c->kind == CollectiveKind::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
        w.bytes += factor * c->bytes.value();
        ++w.collectives;
      } else if (const auto* k = std::get_if<ComputeOp>(&op.body)) {
        w.compression_kernel_bytes += k->bytes.value();
      }
    }
  return w;
}

// Parameters of the test GPT: blocks of 12h² + 13h, the embedding (V + s)·h, the final norm 2h
// (docs/reference.md's P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)), plus the final norm).
double gpt_parameters() {
  return kBlocks * (12 * kH * kH + 13 * kH) + (kV + kS) * kH + 2 * kH;
}

TEST(Compression, UncompressedBaselineIsOneAllReduceOfEveryFp32Gradient) {
  const Wire w = gradient_wire("");
  EXPECT_EQ(w.collectives, 1);
  EXPECT_NEAR(w.bytes, 2.0 * (kData - 1) / kData * 4 * gpt_parameters(), 1e-9 * w.bytes);
}

TEST(Compression, CastsDivideTheWireByTheWidthRatio) {
  const double base = gradient_wire("").bytes;
  EXPECT_NEAR(base / gradient_wire(", compression: fp16").bytes, 2.0, 1e-9);
  EXPECT_NEAR(base / gradient_wire(", compression: bf16").bytes, 2.0, 1e-9);
  EXPECT_NEAR(base / gradient_wire(", compression: fp8").bytes, 4.0, 1e-9);
}

TEST(Compression, Int8SendsOneBytePerGradientAndOneScalePerBucket) {
  const double n = kData, params = gpt_parameters();
  const Wire w = gradient_wire(", compression: int8");
  EXPECT_NEAR(w.bytes, 2 * (n - 1) / n * (params * 1 + 4), 1e-9 * w.bytes);
  EXPECT_EQ(w.collectives, 2);  // the scale's MAX all-reduce, then the values
}

TEST(Compression, TopKAllGathersValueAndIndexPairsFromEveryRank) {
  const double n = kData, params = gpt_parameters();
  for (double d : {0.001, 0.01, 0.1}) {
    const Wire w = gradient_wire(", compression: topk, compression_density: " + std::to_string(d));
    const double kept = std::ceil(d * params);
    // (n-1)/n of the gathered array: n ranks' kept pairs of a 4-byte value and a 4-byte index.
    EXPECT_NEAR(w.bytes, (n - 1) / n * n * kept * (4 + 4), 1e-9 * w.bytes) << "density " << d;
    const double factor = gradient_wire("").bytes / w.bytes;
    EXPECT_NEAR(factor, 2 * 4 / (n * d * (4 + 4)), 0.01 * factor) << "density " << d;
  }
}

TEST(Compression, PowerSgdSendsRowsPlusColumnsTimesRankPerMatrix) {
  const double n = kData, params = gpt_parameters();
  for (int r : {1, 4, 16}) {
    const Wire w = gradient_wire(", compression: powersgd, powersgd_rank: " + std::to_string(r));
    // Matrices: per block QKV h x 3h, projection h x h, FC1 h x 4h, FC2 4h x h; the embedding
    // (V + s) x h. The tied output head is the embedding's matrix. Everything else (biases,
    // norms) is sent uncompressed.
    const double matrix_elements = kBlocks * 12 * kH * kH + (kV + kS) * kH;
    const double factors = r * (kBlocks * (4 * kH + 2 * kH + 5 * kH + 5 * kH) + (kV + kS + kH));
    const double vectors = params - matrix_elements;
    EXPECT_NEAR(w.bytes, 2 * (n - 1) / n * 4 * (factors + vectors), 1e-6 * w.bytes) << "rank " << r;
    EXPECT_EQ(w.collectives, 3);  // vectors, P, Q
  }
}

TEST(Compression, ErrorFeedbackKeepsOneGradientOfResidualAndIsOnForLossyMethodsByDefault) {
  auto residual = [](const std::string& extra) {
    const Scenario sc = load_scenario_text(dp_yaml(extra), "dp.yaml");
    const auto graphs = models::graphs_from_scenario(sc);
    const Program p = build_program(graphs.shard, sc, 0);
    double bytes = 0;
    for (const Op& op : p.streams[0].ops)
      if (const auto* m = std::get_if<MemoryOp>(&op.body);
          m && op.label.name == "error_feedback_residual")
        bytes += m->bytes.value();
    return bytes;
  };
  EXPECT_NEAR(residual(", compression: topk"), 4 * gpt_parameters(), 1);
  EXPECT_NEAR(residual(", compression: powersgd"), 4 * gpt_parameters(), 1);
  EXPECT_EQ(residual(", compression: fp16"), 0);
  EXPECT_NEAR(residual(", compression: fp16, error_feedback: true"), 4 * gpt_parameters(), 1);
  EXPECT_EQ(residual(", compression: topk, error_feedback: false"), 0);
}

TEST(Compression, PowerSgdRankAboveAMatrixIsAnInputError) {
  const Scenario sc =
      load_scenario_text(dp_yaml(", compression: powersgd, powersgd_rank: 600"), "dp.yaml");
  const auto graphs = models::graphs_from_scenario(sc);
  try {
    build_job(graphs.shard, sc);
    FAIL() << "rank 600 above h = 512 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().at(0).key_path, "training.powersgd_rank");
    EXPECT_NE(std::string(e.what()).find("at most 512"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Compression: step time.

Results predicted(const std::string& path, const std::vector<std::string>& overrides) {
  std::vector<std::string> all = overrides;
  all.push_back("simulate.engine=analytic");
  return driver::predict(driver::load(path, all)).results;
}
double step_time(const std::string& path, const std::vector<std::string>& overrides) {
  return predicted(path, overrides).step_time_s;
}

// BERT-large over 100 Gb Ethernet, one NIC per 8 V100: the all-reduce of 680 MB of fp16
// gradients through one 100 Gb/s NIC per node outlasts backward, and its tail is exposed;
// sending less removes most of that tail and pays for the compression kernels.
TEST(Compression, PaysOffWhereTheNetworkIsTheBottleneck) {
  const std::string path =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/bert-large-dp32-v100-ethernet.yaml";
  const Results none = predicted(path, {});
  for (const std::string method : {"int8", "topk", "powersgd"}) {
    const Results compressed = predicted(path, {"training.compression=" + method});
    std::printf(
        "bert-large dp32 ethernet: none %.4f s (exposed communication %.4f s), %s %.4f s (%.4f "
        "s)\n",
        none.step_time_s, none.breakdown_s.exposed_communication, method.c_str(),
        compressed.step_time_s, compressed.breakdown_s.exposed_communication);
    EXPECT_LT(compressed.step_time_s, none.step_time_s) << method;
    EXPECT_LT(compressed.breakdown_s.exposed_communication,
              0.6 * none.breakdown_s.exposed_communication)
        << method;
  }
}

// The same model on one NVSwitch node of 8 H100: the all-reduce runs at NVLink speed behind
// backward, and the compression kernels on the compute stream add to the step.
TEST(Compression, CostsTimeWhereCompressionComputeDominates) {
  const std::string path =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/bert-large-dp32-v100-ethernet.yaml";
  const std::vector<std::string> one_node = {"cluster.gpu=H100-SXM", "cluster.nodes=1",
                                             "cluster.intra_node=nvswitch",
                                             "training.global_batch_size=512"};
  const double none = step_time(path, one_node);
  for (const std::string method : {"topk", "powersgd"}) {
    auto with = one_node;
    with.push_back("training.compression=" + method);
    const double compressed = step_time(path, with);
    std::printf("bert-large dp8 nvswitch: none %.4f s, %s %.4f s\n", none, method.c_str(),
                compressed);
    EXPECT_GT(compressed, none) << method;
  }
}

// ---------------------------------------------------------------------------------------------
// PipeDream-async and 2BW.

// p GPUs on one switch; each stage holds two uniform layers (1 ms forward, 2 ms backward at 100
// TFLOP/s) with 1e6 parameters each; activations between stages are 2 bytes.
std::string pipeline_yaml(int p, int m, const std::string& schedule, int iterations) {
  return "cluster:\n"
         "  gpu: {name: round-gpu, peak: {bf16: 100TFLOPS}, memory: 80GiB, "
         "memory_bandwidth: 1000GBps, gemm_efficiency: 1, memory_efficiency: 1, "
         "kernel_launch_overhead: 0us}\n"
         "  nodes: 1\n"
         "  gpus_per_node: " +
         std::to_string(p) +
         "\n"
         "  intra_node: {kind: switch, bandwidth: 100GBps, latency: 1us}\n"
         "model: {preset: unused-here}\n"
         "parallelism: {pipeline: " +
         std::to_string(p) + ", schedule: " + schedule +
         "}\n"
         "training: {global_batch_size: " +
         std::to_string(m) +
         ", micro_batch_size: 1, precision: bf16, optimizer: sgd, runtime_reserve: 0B}\n"
         "simulate: {iterations: " +
         std::to_string(iterations) + "}\n";
}

constexpr double kLayerParameters = 1e6;
ModelGraph pipeline_layers(int p) {
  return testing::uniform_layers({.count = 2 * p,
                                  .forward_flops = 1e11,
                                  .parameters = kLayerParameters,
                                  .activation_bytes = 1e6,
                                  .blocks = true});
}

// The stage time: the compute of one stage's step divided by its micro-batches, from the Program
// (the busiest stage: every stage does the same work here).
double stage_time_per_micro_batch(const Job& job, const Cluster& cluster, int m) {
  double busiest = 0;
  for (const Program& p : job.programs) {
    double busy = 0;
    for (const auto& stream : p.streams)
      for (const Op& op : stream.ops)
        if (const auto* c = std::get_if<ComputeOp>(&op.body))
          busy += compute_time(*c, cluster.gpu).value();
    busiest = std::max(busiest, busy);
  }
  return busiest / m;
}

struct PipelineRun {
  double analytic_step = 0, simgrid_step = 0, stage_time = 0;
  std::vector<double> weights_at_peak;  // by stage (rank), bytes
  std::vector<StageMemory> stages;      // the results' memory.per_stage (SimGrid run)
};
PipelineRun run_pipeline(int p, int m, const std::string& schedule, int iterations) {
  const Scenario sc =
      load_scenario_text(pipeline_yaml(p, m, schedule, iterations), "pipeline.yaml");
  const ModelGraph g = pipeline_layers(p);
  const Job job = build_job(g, sc);
  const Cluster cluster(sc.cluster);
  RunOptions options;
  options.iterations = iterations;
  PipelineRun run;
  run.stage_time = stage_time_per_micro_batch(job, cluster, m);
  const Trace a = AnalyticExecutor().run(job, cluster, options);
  run.analytic_step = compute_results(sc, g, job, a).step_time_s;
  const Trace t = sim::SimGridExecutor(sim::SimGridOptions{FidelitySetting::kAuto, DType::kBf16})
                      .run(job, cluster, options);
  const Results simgrid_results = compute_results(sc, g, job, t);
  run.simgrid_step = simgrid_results.step_time_s;
  run.stages = simgrid_results.memory_per_stage;
  run.weights_at_peak.assign(static_cast<size_t>(p), 0);
  for (const auto& mem : t.memory)
    run.weights_at_peak.at(static_cast<size_t>(mem.rank)) =
        mem.at_peak[static_cast<size_t>(MemoryCategory::kWeights)].value();
  return run;
}

// Without a flush the pipeline never drains: a step of m micro-batches takes m stage times
// (PipeDream's steady state, Narayanan et al. 2019, section 3.1), where 1F1B takes m + p - 1.
// The first step fills the pipeline once; over 32 steps that is under 0.3% of the run.
TEST(PipeDream, EqualStagesRunAtOneMicroBatchPerStageTime) {
  const int p = 4, m = 8, iterations = 32;
  for (const std::string schedule : {"pipedream-async", "pipedream-2bw"}) {
    const PipelineRun run = run_pipeline(p, m, schedule, iterations);
    const double ideal = m * run.stage_time;
    std::printf("%s p=%d m=%d: stage time %.6f s, step %.6f s analytic, %.6f s SimGrid\n",
                schedule.c_str(), p, m, run.stage_time, run.analytic_step, run.simgrid_step);
    EXPECT_NEAR(run.analytic_step, ideal, 0.01 * ideal) << schedule;
    EXPECT_NEAR(run.simgrid_step, ideal, 0.01 * ideal) << schedule;
  }
  // The flushed schedule pays the bubble every step: (m + p - 1) stage times.
  const PipelineRun flushed = run_pipeline(p, m, "1f1b", iterations);
  const double with_bubble = (m + p - 1) * flushed.stage_time;
  EXPECT_NEAR(flushed.analytic_step, with_bubble, 0.02 * with_bubble);
}

// Weight stashing: p - s versions on stage s (async), two on every stage (2BW), one (1F1B), in
// memory and in the results.
TEST(PipeDream, StashedWeightVersionsFollowTheFormula) {
  const int p = 4, m = 8;
  const double one_version = 2 * kLayerParameters * weight_bytes_per_parameter(DType::kBf16);
  const PipelineRun async = run_pipeline(p, m, "pipedream-async", 1);
  const PipelineRun two_bw = run_pipeline(p, m, "pipedream-2bw", 1);
  const PipelineRun flushed = run_pipeline(p, m, "1f1b", 1);
  for (int s = 0; s < p; ++s) {
    EXPECT_NEAR(async.weights_at_peak[static_cast<size_t>(s)], (p - s) * one_version, 1)
        << "stage " << s;
    EXPECT_NEAR(two_bw.weights_at_peak[static_cast<size_t>(s)], 2 * one_version, 1)
        << "stage " << s;
    EXPECT_NEAR(flushed.weights_at_peak[static_cast<size_t>(s)], one_version, 1) << "stage " << s;
  }
  // The results state the versions and the staleness of each stage's updates: PipeDream's
  // gradient on stage s is p - s - 1 updates old, 2BW's one, the flushed schedule's none.
  for (const PipelineRun* run : {&async, &two_bw, &flushed}) ASSERT_EQ(run->stages.size(), 4u);
  for (int s = 0; s < p; ++s) {
    const size_t i = static_cast<size_t>(s);
    EXPECT_EQ(async.stages[i].stage, s);
    EXPECT_EQ(async.stages[i].weight_versions, p - s);
    EXPECT_EQ(async.stages[i].weight_update_staleness(), p - s - 1);
    EXPECT_EQ(two_bw.stages[i].weight_versions, 2);
    EXPECT_EQ(two_bw.stages[i].weight_update_staleness(), 1);
    EXPECT_EQ(flushed.stages[i].weight_versions, 1);
    EXPECT_EQ(flushed.stages[i].weight_update_staleness(), 0);
    // ... and the versions they state are the ones held in memory.
    EXPECT_NEAR(async.weights_at_peak[i], async.stages[i].weight_versions * one_version, 1);
  }
}

TEST(PipeDream, AsyncUpdatesWeightsAfterEveryMicroBatch2BWOncePerStep) {
  auto optimizer_steps = [](const std::string& schedule) {
    const Scenario sc = load_scenario_text(pipeline_yaml(4, 8, schedule, 1), "pipeline.yaml");
    const Program p = build_program(pipeline_layers(4), sc, 0);
    int steps = 0;
    for (const auto& stream : p.streams)
      for (const Op& op : stream.ops) steps += op.label.name == "optimizer_step" ? 1 : 0;
    return steps;
  };
  EXPECT_EQ(optimizer_steps("pipedream-async"), 8);
  EXPECT_EQ(optimizer_steps("pipedream-2bw"), 1);
}

// ---------------------------------------------------------------------------------------------
// FP8 parameters (training.fp8_params): the weights held and all-gathered in one byte each.
namespace fp8_params {

std::string yaml(int zero_stage, bool fp8_params) {
  return "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr, "
         "topology: fat-tree, nics_per_node: 8}}\n"
         "model: {family: gpt, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
         "seq_length: 512, vocab_size: 8192}\n"
         "parallelism: {data: auto, zero_stage: " +
         std::to_string(zero_stage) +
         "}\n"
         "training: {global_batch_size: 32, micro_batch_size: 2, precision: fp8, fp8_params: " +
         (fp8_params ? "true" : "false") +
         "}\n"
         "simulate: {engine: analytic}\n";
}

// Bytes of every weight all-gather rank 0 issues in one step (ZeRO-1's after the optimizer,
// ZeRO-3's before each layer's forward and backward).
double weight_all_gather_bytes(int zero_stage, bool fp8) {
  const Scenario sc = load_scenario_text(yaml(zero_stage, fp8), "fp8.yaml");
  const auto graphs = models::graphs_from_scenario(sc);
  const Program p = build_program(graphs.shard, sc, 0);
  double bytes = 0;
  for (const auto& stream : p.streams)
    for (const Op& op : stream.ops)
      if (const auto* c = std::get_if<CollectiveOp>(&op.body))
        if (c->kind == CollectiveKind::kAllGather) bytes += c->bytes.value();
  return bytes;
}

TEST(Fp8Params, AllGatherOneBytePerWeightInsteadOfTwo) {
  for (int zero : {1, 3}) {
    const double bf16_weights = weight_all_gather_bytes(zero, false);
    ASSERT_GT(bf16_weights, 0) << "ZeRO-" << zero;
    EXPECT_NEAR(weight_all_gather_bytes(zero, true), bf16_weights / 2, 1e-9 * bf16_weights)
        << "ZeRO-" << zero;
  }
}

TEST(Fp8Params, HoldTheWeightsInOneByteAndKeepTheOptimizersState) {
  // ZeRO-1: every rank holds every weight: P bytes instead of 2P; the fp32 master copy and
  // Adam's moments (12 bytes per parameter, sharded over 16) do not change.
  const auto run = [](bool fp8) {
    return driver::predict(driver::load_text(yaml(1, fp8), "fp8.yaml")).results;
  };
  const Results bf16 = run(false), fp8 = run(true);
  const auto at = [](const Results& r, MemoryCategory c) {
    return r.per_category_bytes[static_cast<size_t>(c)];
  };
  EXPECT_NEAR(at(bf16, MemoryCategory::kWeights), 2 * gpt_parameters(), 1e-6 * gpt_parameters());
  EXPECT_NEAR(at(fp8, MemoryCategory::kWeights), gpt_parameters(), 1e-6 * gpt_parameters());
  EXPECT_DOUBLE_EQ(at(fp8, MemoryCategory::kOptimizer), at(bf16, MemoryCategory::kOptimizer));
}

TEST(Fp8Params, NeedFp8Training) {
  const std::string bf16 =
      std::regex_replace(yaml(1, true), std::regex("precision: fp8"), "precision: bf16");
  try {
    load_scenario_text(bf16, "fp8.yaml");
    ADD_FAILURE() << "fp8_params with bf16 training was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().front().key_path, "training.fp8_params");
  }
}

}  // namespace fp8_params
}  // namespace
}  // namespace dtsim
