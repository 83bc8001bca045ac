// The result contract (docs/design.md section 5) and the Chrome trace file's structure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "driver/predict.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

const std::string kDefault = DTSIM_SOURCE_DIR "/scenarios/default.yaml";

// dtsim simulate --json of a scenario file, in process.
nlohmann::json simulate_file_json(const std::string& path,
                                  std::vector<std::string> overrides = {}) {
  SimulateOptions o;
  o.scenario = path;
  o.overrides = std::move(overrides);
  o.json = true;
  std::ostringstream out;
  EXPECT_EQ(run_simulate(o, out), 0);
  return nlohmann::json::parse(out.str());
}

nlohmann::json simulate_json(std::vector<std::string> overrides = {}) {
  return simulate_file_json(kDefault, std::move(overrides));
}

// Other jobs' share of the network (background.link_fraction) is reported with what each job
// holds; without it, or at 0, the result is the same object, byte for byte.
TEST(Results, BackgroundTrafficReportsBothJobsShares) {
  for (const std::string engine : {"analytic", "simgrid"}) {
    const std::string set_engine = "simulate.engine=" + engine;
    const nlohmann::json alone = simulate_json({set_engine});
    EXPECT_FALSE(alone.contains("background")) << engine;
    EXPECT_EQ(simulate_json({set_engine, "background.link_fraction=0"}).dump(), alone.dump())
        << engine;
    const nlohmann::json shared = simulate_json({set_engine, "background.link_fraction=0.6"});
    const nlohmann::json& b = shared.at("background");
    EXPECT_EQ(b.at("link_fraction").get<double>(), 0.6) << engine;
    EXPECT_EQ(b.at("other_jobs_share").get<double>(), 0.6) << engine;
    EXPECT_DOUBLE_EQ(b.at("this_job_share").get<double>(), 0.4) << engine;
    // The two jobs' rates make up one NIC's usable rate, 2 : 3.
    EXPECT_NEAR(b.at("nic_bandwidth_Bps").get<double>() /
                    b.at("other_jobs_nic_bandwidth_Bps").get<double>(),
                2.0 / 3.0, 1e-9)
        << engine;
    // The data-parallel all-reduces cross nodes, so they take longer once the NICs become their
    // slowest links (at 0.25 they are not yet: 0.0455 s either way); the step itself may not, as
    // this scenario overlaps them with the backward pass.
    EXPECT_GT(shared.at("time_by_kind_s").at("all-reduce").get<double>(),
              alone.at("time_by_kind_s").at("all-reduce").get<double>())
        << engine;
    bool noted = false;
    for (const auto& n : shared.at("notes"))
      noted =
          noted || n.get<std::string>().find("background.link_fraction 0.6") != std::string::npos;
    EXPECT_TRUE(noted) << engine;
  }
}

TEST(Results, JsonHasEveryContractKey) {
  nlohmann::json j = simulate_json();
  const std::vector<std::string> keys = {"engine",
                                         "scenario",
                                         "step_time_s",
                                         "throughput.samples_per_s",
                                         "throughput.tokens_per_s",
                                         "flops.model_tflops_per_gpu",
                                         "flops.hardware_tflops_per_gpu",
                                         "flops.mfu",
                                         "flops.hfu",
                                         "breakdown_s.compute",
                                         "breakdown_s.exposed_communication",
                                         "breakdown_s.pipeline_bubble",
                                         "breakdown_s.straggler_wait",
                                         "breakdown_s.other",
                                         "memory.peak_bytes_per_gpu",
                                         "memory.capacity_bytes",
                                         "memory.fits",
                                         "memory.per_category_bytes.weights",
                                         "memory.per_category_bytes.gradients",
                                         "memory.per_category_bytes.optimizer",
                                         "memory.per_category_bytes.activations",
                                         "memory.per_category_bytes.buffers",
                                         "model.parameters",
                                         "model.flops_per_step",
                                         "reliability.goodput",
                                         "reliability.expected_interruptions"};
  for (const auto& k : keys) {
    nlohmann::json::json_pointer ptr("/" + std::regex_replace(k, std::regex("\\."), "/"));
    EXPECT_TRUE(j.contains(ptr)) << "missing " << k;
  }
  EXPECT_EQ(j["engine"], "simgrid");  // the default engine
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["throughput"]["samples_per_s"].get<double>(),
                   512.0 / j["step_time_s"].get<double>());
}

TEST(Results, SameInputGivesByteIdenticalJson) {
  SimulateOptions o;
  o.scenario = kDefault;
  o.json = true;
  std::ostringstream a, b;
  run_simulate(o, a);
  run_simulate(o, b);
  EXPECT_EQ(a.str(), b.str());
}

TEST(Results, ChromeTraceIsWellFormedAndSpansDoNotOverlapPerStream) {
  const dtsim::testing::ScratchDir dir("trace");
  SimulateOptions o;
  o.scenario = kDefault;
  o.trace = dir.file("trace.json");
  o.output = dir.file("result.json");
  std::ostringstream out;
  ASSERT_EQ(run_simulate(o, out), 0);
  std::ifstream f(o.trace);
  nlohmann::json t = nlohmann::json::parse(f);
  ASSERT_TRUE(t.contains("traceEvents"));
  ASSERT_TRUE(t["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> per_stream;
  size_t complete = 0;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    ASSERT_TRUE(e.contains("tid"));
    if (e["ph"] != "X") continue;
    ++complete;
    ASSERT_TRUE(e.contains("ts"));
    ASSERT_TRUE(e.contains("dur"));
    ASSERT_GE(e["dur"].get<double>(), 0);
    per_stream[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
        {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  EXPECT_GT(complete, 100u);
  EXPECT_GE(per_stream.size(), 2u);  // compute and gradient-communication streams
  for (auto& [stream, spans] : per_stream) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-6)
          << "overlap on pid " << stream.first << " tid " << stream.second;
  }
  // -o wrote the same object that --json prints.
  std::ifstream rf(o.output);
  nlohmann::json written = nlohmann::json::parse(rf);
  EXPECT_EQ(written, simulate_json());
}

TEST(Results, NoOverlapCostsMoreThanOverlap) {
  nlohmann::json overlapped = simulate_json();
  nlohmann::json serial = simulate_json({"training.overlap_grad_reduce=false"});
  EXPECT_GT(serial["step_time_s"].get<double>(), overlapped["step_time_s"].get<double>());
  EXPECT_GT(serial["breakdown_s"]["exposed_communication"].get<double>(),
            overlapped["breakdown_s"]["exposed_communication"].get<double>());
}

}  // namespace
}  // namespace dtsim::cli

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

// Narayanan et al. 2021: model FLOPs per step 72 B s l h^2 (1 + s/6h + V/12lh); with full
// recompute the hardware executes 96 B s l h^2 (1 + s/6h + V/16lh) (the blocks' forward twice,
// the logit layer once).
// Selective recompute with FlashAttention recomputes nothing, and the notes say so; without
// FlashAttention it recomputes the attention core and no such note appears.
TEST(Results, SelectiveRecomputeThatDoesNothingIsNoted) {
  auto notes_about = [](const nlohmann::json& j) {
    int n = 0;
    for (const auto& note : j.at("notes"))
      n += note.get<std::string>().find("selective recomputes nothing") != std::string::npos;
    return n;
  };
  const auto flash = simulate_json({"training.recompute=selective", "training.flash_attention=true",
                                    "simulate.engine=analytic"});
  EXPECT_EQ(notes_about(flash), 1) << flash.at("notes").dump();
  const auto none = simulate_json(
      {"training.recompute=none", "training.flash_attention=true", "simulate.engine=analytic"});
  EXPECT_DOUBLE_EQ(flash.at("step_time_s").get<double>(), none.at("step_time_s").get<double>());
  const auto unfused =
      simulate_json({"training.recompute=selective", "training.flash_attention=false",
                     "simulate.engine=analytic"});
  EXPECT_EQ(notes_about(unfused), 0) << unfused.at("notes").dump();
}

TEST(Results, FlopCountsFollowNarayananWithAndWithoutFullRecompute) {
  const double B = 64, s = 2048, l = 24, h = 2048, V = 51200;  // gpt3-1.3b
  const std::string yaml =
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\nmodel: {preset: gpt3-1.3b}\n"
      "training: {global_batch_size: 64, micro_batch_size: 2}\nsimulate: {engine: analytic}\n";
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const double recompute = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  Prediction plain = predict(load_scenario_text(yaml, "f.yaml"));
  Prediction full = predict(load_scenario_text(yaml, "f.yaml", {{"training.recompute=full"}}));
  EXPECT_NEAR(plain.results.model_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(plain.results.hardware_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(full.results.model_flops_per_step, model, 1e-9 * model);
  EXPECT_NEAR(full.results.hardware_flops_per_step, recompute, 1e-9 * recompute);
  EXPECT_GT(full.results.hfu, full.results.mfu);
}

}  // namespace
}  // namespace dtsim::cli

namespace dtsim::cli {
using driver::predict;
using driver::Prediction;
namespace {

TEST(Validate, ShowsPlacementAndTheCollectivesAutoPicks) {
  ValidateOptions o;
  o.scenario = DTSIM_SOURCE_DIR "/scenarios/default.yaml";
  o.overrides = {"cluster.nodes=1", "training.global_batch_size=256"};
  std::ostringstream out;
  ASSERT_EQ(run_validate(o, out), 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("group dp: [0, 1, 2, 3, 4, 5, 6, 7], spans 1 node(s)"), std::string::npos)
      << text;
  // One H100 node: NCCL's model picks NVLS for these large gradient buckets.
  // DDP's buckets: the first 1 MiB, then 25 MiB ones, of fp32 gradients (grad_dtype auto).
  EXPECT_NE(text.find("1 x all-reduce 1.00 MiB fp32: ring/LL"), std::string::npos) << text;
  EXPECT_NE(text.find("x all-reduce 25.00 MiB fp32: nvls/Simple"), std::string::npos) << text;
  EXPECT_NE(text.find("gradients    fp32 (auto for bf16)"), std::string::npos) << text;
  EXPECT_NE(text.find("valid: "), std::string::npos);
}

}  // namespace
}  // namespace dtsim::cli

// Scripts that read the result (docs/design.md section 5): every resolved setting, integers for
// counts, no float noise, and the communication volume per group and collective kind.
#include "core/report/report.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::cli {
namespace {

const std::string kSmallGpt =
    "name: small\ncluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8}\n"
    "model: {preset: gpt3-1.3b}\n"
    "parallelism: {tensor: 2, pipeline: 2, data: auto, schedule: interleaved, virtual_stages: 2,"
    " zero_stage: 1, sequence_parallel: true}\n"
    "training: {global_batch_size: 64, micro_batch_size: 2, recompute: selective}\n"
    "simulate: {engine: analytic}\n";

// A scenario file in the test's scratch folder.
std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = dtsim::testing::scratch_dir().path() / (name + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(Results, ConfigHoldsEveryResolvedParallelSettingAsIntegers) {
  const std::string path = write_temp("dtsim_config", kSmallGpt);
  const nlohmann::json c = simulate_file_json(path)["config"];
  std::filesystem::remove(path);
  const std::map<std::string, int64_t> counts = {{"gpus", 16},
                                                 {"tp", 2},
                                                 {"pp", 2},
                                                 {"dp", 4},
                                                 {"cp", 1},
                                                 {"ep", 1},
                                                 {"zero_stage", 1},
                                                 {"virtual_stages", 2},
                                                 {"micro_batch_size", 2},
                                                 {"seq_length", 2048},
                                                 {"global_batch_size", 64},
                                                 {"micro_batches", 8},
                                                 {"iterations", 1}};
  for (const auto& [key, value] : counts) {
    ASSERT_TRUE(c.contains(key)) << key;
    EXPECT_TRUE(c[key].is_number_integer()) << key << " = " << c[key].dump();
    EXPECT_EQ(c[key].get<int64_t>(), value) << key;
  }
  EXPECT_EQ(c["schedule"], "interleaved");
  EXPECT_EQ(c["recompute"], "selective");
  EXPECT_EQ(c["precision"], "bf16");
  EXPECT_EQ(c["engine"], "analytic");
  EXPECT_EQ(c["fidelity"], "auto");
  EXPECT_EQ(c["sequence_parallel"], true);
}

// memory.per_stage: a pipeline's stages each with their worst simulated rank, whose categories
// add up to its peak, and the job's peak among them; without a pipeline, one stage 0 that is the
// job's peak.
void expect_stages_consistent(const nlohmann::json& memory, int pipeline) {
  ASSERT_TRUE(memory.contains("per_stage"));
  const nlohmann::json& stages = memory["per_stage"];
  ASSERT_TRUE(stages.is_array());
  ASSERT_FALSE(stages.empty());
  double highest = 0;
  int previous = -1;
  for (const auto& s : stages) {
    const int stage = s["stage"].get<int>();
    EXPECT_GT(stage, previous);
    EXPECT_LT(stage, pipeline);
    previous = stage;
    double sum = 0;
    for (const auto& [category, bytes] : s["per_category_bytes"].items())
      sum += bytes.get<double>();
    EXPECT_NEAR(sum, s["peak_bytes"].get<double>(), 1e-6 * s["peak_bytes"].get<double>());
    highest = std::max(highest, s["peak_bytes"].get<double>());
  }
  EXPECT_DOUBLE_EQ(highest, memory["peak_bytes_per_gpu"].get<double>());
}

TEST(Results, MemoryPerStageHoldsEachPipelineStage) {
  const nlohmann::json flat = simulate_json({"simulate.engine=analytic"})["memory"];
  expect_stages_consistent(flat, 1);
  EXPECT_EQ(flat["per_stage"].size(), 1u);
  const nlohmann::json piped =
      simulate_json({"simulate.engine=analytic", "parallelism.tensor=2", "parallelism.pipeline=2",
                     "training.global_batch_size=64"})["memory"];
  expect_stages_consistent(piped, 2);
  ASSERT_EQ(piped["per_stage"].size(), 2u);
  // 1F1B: the first stage stashes activations for more micro-batches in flight than the last.
  EXPECT_GT(piped["per_stage"][0]["per_category_bytes"]["activations"].get<double>(),
            piped["per_stage"][1]["per_category_bytes"]["activations"].get<double>());
}

TEST(Results, FloatNoiseIsZeroAndWholeNumbersAreIntegers) {
  Results r;
  r.step_time_s = 2.5;
  r.breakdown_s.compute = 2.0;
  r.breakdown_s.exposed_communication = 0.5;
  r.breakdown_s.other = 8.9e-16;         // 2.5 - 2.0 - 0.5 in floating point
  r.breakdown_s.pipeline_bubble = 1e-6;  // real: 0.4 ppm of the step, well above 1e-9
  r.per_category_bytes[0] = 2.6e9;       // whole bytes
  r.per_category_bytes[1] = 1.0e-7;      // noise against an 80 GB capacity
  r.capacity_bytes = 80e9;
  r.peak_bytes_per_gpu = 2.6e9;
  r.parameters = 1315758080;
  const nlohmann::json j = results_to_json(r);
  EXPECT_TRUE(j["breakdown_s"]["other"].is_number_integer()) << j["breakdown_s"].dump();
  EXPECT_EQ(j["breakdown_s"]["other"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["breakdown_s"]["pipeline_bubble"].get<double>(), 1e-6);
  EXPECT_TRUE(j["memory"]["per_category_bytes"]["weights"].is_number_integer());
  EXPECT_EQ(j["memory"]["per_category_bytes"]["weights"].get<int64_t>(), 2600000000);
  EXPECT_EQ(j["memory"]["per_category_bytes"]["gradients"].get<double>(), 0.0);
  EXPECT_TRUE(j["model"]["parameters"].is_number_integer());
  EXPECT_TRUE(j["step_time_s"].is_number_float());  // 2.5 stays a float
  // A real case: the Mixtral example's breakdown left other = 2.2e-16 s (of a 3.75 s step).
  const nlohmann::json mixtral = simulate_file_json(
      DTSIM_SOURCE_DIR "/scenarios/mixtral-8x7b-ep8-64-h100.yaml", {"simulate.engine=analytic"});
  EXPECT_TRUE(mixtral["breakdown_s"]["other"].is_number_integer()) << mixtral["breakdown_s"].dump();
  EXPECT_EQ(mixtral["breakdown_s"]["other"].get<double>(), 0.0);
}

// The DP gradient all-reduce of pure data parallelism (scenarios/default.yaml: GPT-3 1.3B on 16
// H100, bf16, no ZeRO): per step each GPU all-reduces every gradient once, P x 4 bytes in total
// (fp32 gradients, training.grad_dtype's default for bf16 training), and a ring moves 2 (n-1)/n
// of it (nccl-tests' all-reduce bus factor).
TEST(Results, DataParallelAllReduceVolumeIsTheGradientBytes) {
  for (const char* engine : {"analytic", "simgrid"}) {
    const nlohmann::json j =
        simulate_file_json(kDefault, {std::string("simulate.engine=") + engine});
    const double P = j["model"]["parameters"].get<double>();
    const auto& groups = j["communication"]["per_group"];
    ASSERT_EQ(groups.size(), 1u) << groups.dump();  // only the data-parallel group talks
    const auto& dp = groups[0];
    EXPECT_EQ(dp["name"], "dp");
    EXPECT_EQ(dp["ranks"].get<int>(), 16);
    EXPECT_EQ(dp["groups"].get<int>(), 1);
    const auto& ar = dp["per_kind"]["all-reduce"];
    EXPECT_NEAR(ar["size_bytes"].get<double>(), 4 * P, 1e-9 * P) << engine;
    EXPECT_NEAR(ar["bus_bytes"].get<double>(), 2.0 * 15 / 16 * 4 * P, 1e-9 * P) << engine;
    EXPECT_GT(ar["count"].get<int64_t>(), 1);  // bucketed
    EXPECT_DOUBLE_EQ(j["communication"]["size_bytes"].get<double>(),
                     dp["size_bytes"].get<double>());
  }
}

// Tensor parallelism, Megatron-LM (Shoeybi et al. 2019, section 3): per micro-batch, two forward
// and two backward all-reduces of the b x s x h activations per block, one forward all-reduce
// after the vocab-parallel embedding and one backward all-reduce at the column-parallel head's
// input: (4 l + 2) b s h x 2 bytes (bf16); plus the vocab-parallel cross-entropy's one all-reduce
// of three fp32 values per token (the max logit, the sum of exponentials, the target logit).
TEST(Results, TensorParallelAllReduceVolumeFollowsMegatron) {
  const std::string yaml =
      "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 2}\nmodel: {preset: gpt3-1.3b}\n"
      "parallelism: {tensor: 2, data: 1}\n"
      "training: {global_batch_size: 4, micro_batch_size: 1}\nsimulate: {engine: analytic}\n";
  const std::string path = write_temp("dtsim_tp", yaml);
  const nlohmann::json j = simulate_file_json(path);
  std::filesystem::remove(path);
  const double b = 1, s = 2048, h = 2048, l = 24, m = 4;
  const double expected = m * ((4 * l + 2) * b * s * h * 2 + 3 * b * s * 4);
  nlohmann::json tp;
  for (const auto& g : j["communication"]["per_group"])
    if (g["name"] == "tp") tp = g;
  ASSERT_FALSE(tp.is_null()) << j["communication"].dump();
  EXPECT_EQ(tp["ranks"].get<int>(), 2);
  const auto& ar = tp["per_kind"]["all-reduce"];
  EXPECT_DOUBLE_EQ(ar["size_bytes"].get<double>(), expected);
  EXPECT_DOUBLE_EQ(ar["bus_bytes"].get<double>(), expected);  // 2 (n-1)/n = 1 for n = 2
  // Megatron's vocabulary-parallel cross entropy all-reduces its max, target logit and sum of
  // exponentials one by one.
  EXPECT_EQ(ar["count"].get<int64_t>(), m * (4 * l + 2 + 3));
}

TEST(Results, LayersAreTransformerBlocksWithEmbeddingAndHeadApart) {
  for (const auto& [preset, blocks] :
       std::vector<std::pair<std::string, int>>{{"gpt3-1.3b", 24}, {"gpt3-175b", 96}}) {
    const models::ModelSpec* spec = models::find_preset(preset);
    ASSERT_NE(spec, nullptr);
    const ModelGraph g = models::build_model(*spec, models::BuildOptions{});
    const LayerCounts c = count_layers(g);
    EXPECT_EQ(c.blocks, blocks) << preset;
    EXPECT_EQ(c.block_kind, "transformer");
    std::vector<std::string> names;
    for (const auto& o : c.other) names.push_back(o.name);
    EXPECT_EQ(names, (std::vector<std::string>{"embedding", "final_norm", "lm_head"}));
    EXPECT_EQ(describe_layers(c),
              std::to_string(blocks) + " transformer blocks (+ embedding, final_norm, lm_head)");
  }
  const nlohmann::json j = simulate_file_json(kDefault, {"simulate.engine=analytic"});
  EXPECT_EQ(j["model"]["layers"], 24);
  EXPECT_EQ(j["model"]["other_layers"][0]["name"], "embedding");
  EXPECT_GT(j["model"]["other_layers"][0]["parameters"].get<double>(), 1e8);  // 51200 x 2048
}

TEST(Results, CnnLayersAreTheirBlocks) {
  const auto describe = [](const std::string& preset) {
    const models::ModelSpec* spec = models::find_preset(preset);
    EXPECT_NE(spec, nullptr) << preset;
    return describe_layers(count_layers(models::build_model(*spec, models::BuildOptions{})));
  };
  EXPECT_EQ(describe("resnet-50"), "16 residual blocks (+ stem, head)");
  EXPECT_EQ(describe("vgg-16"),
            "15 blocks (13 conv, 2 fc) (+ pool1, pool2, pool3, pool4, pool5, avgpool, fc8)");
  EXPECT_EQ(describe("mlp-mnist"), "5 fc blocks (+ fc.5)");
}

TEST(Results, ParameterCountsUseAScaleThatFits) {
  EXPECT_EQ(format_count(25.557e6), "25.6 M");
  EXPECT_EQ(format_count(1.3158e9), "1.32 B");
  EXPECT_EQ(format_count(175e9), "175.00 B");
  EXPECT_EQ(format_count(5.0e3), "5.0 K");
  EXPECT_EQ(format_count(512), "512");
  SimulateOptions o;
  o.scenario = DTSIM_SOURCE_DIR "/scenarios/resnet50-dp8-a100.yaml";
  o.overrides = {"simulate.engine=analytic"};
  std::ostringstream out;
  ASSERT_EQ(run_simulate(o, out), 0);
  EXPECT_NE(out.str().find("25.6 M"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("0.026 B"), std::string::npos) << out.str();
}

TEST(Results, SummarySaysPercentAndShowsTheCommunicationTable) {
  SimulateOptions o;
  o.scenario = kDefault;
  o.overrides = {"simulate.engine=analytic"};
  std::ostringstream out;
  ASSERT_EQ(run_simulate(o, out), 0);
  const std::string text = out.str();
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(MFU +[0-9.]+ % of dense bf16 peak)"))) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +dp +16 +all-reduce +[0-9]+ +)"))) << text;
  EXPECT_NE(text.find("24 transformer blocks"), std::string::npos) << text;
}

TEST(Results, TraceNumbersBlocksFromZero) {
  const dtsim::testing::ScratchDir dir("blocks");
  SimulateOptions o;
  o.scenario = kDefault;
  o.overrides = {"simulate.engine=analytic"};
  o.trace = dir.file("trace.json");
  std::ostringstream out;
  ASSERT_EQ(run_simulate(o, out), 0);
  std::ifstream f(o.trace);
  const nlohmann::json t = nlohmann::json::parse(f);
  size_t block0 = 0, embedding = 0;
  int highest = -1;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("layer_name")) continue;
    const std::string name = e["args"]["layer_name"];
    if (name == "block.0") {
      ++block0;
      EXPECT_EQ(e["args"]["layer"], 0) << e.dump();
    }
    if (name == "embedding" || name == "lm_head") {
      ++embedding;
      EXPECT_FALSE(e["args"].contains("layer")) << e.dump();
    }
    if (e["args"].contains("layer")) highest = std::max(highest, e["args"]["layer"].get<int>());
  }
  EXPECT_GT(block0, 0u);
  EXPECT_GT(embedding, 0u);
  EXPECT_EQ(highest, 23);  // 24 blocks: 0..23
}

TEST(Validate, CountsTransformerBlocksAndScalesParameters) {
  ValidateOptions o;
  o.scenario = DTSIM_SOURCE_DIR "/scenarios/default.yaml";
  std::ostringstream out;
  ASSERT_EQ(run_validate(o, out), 0);
  const std::string text = out.str();
  EXPECT_NE(
      text.find("1.32 B parameters, 24 transformer blocks (+ embedding, final_norm, lm_head)"),
      std::string::npos)
      << text;
}

}  // namespace
// The approximations an engine states reach every reader: the JSON's notes and the summary. The
// analytic engine states that it does not model an oversubscribed network; with none, it states
// only the lowering's note that every engine shares (ZeRO-3 gathers beside compute kernels take
// SMs from them, core/exec/overlap_contention.h).
TEST(Results, EngineNotesReachTheJsonAndTheSummary) {
  const std::string file = DTSIM_SOURCE_DIR "/scenarios/gpt3-13b-zero3-64-a100.yaml";
  const nlohmann::json plain = simulate_file_json(file, {"simulate.engine=analytic"});
  ASSERT_TRUE(plain["notes"].is_array());
  ASSERT_EQ(plain["notes"].size(), 1u) << plain["notes"].dump();
  EXPECT_NE(plain["notes"][0].get<std::string>().find("NCCL thread blocks"), std::string::npos);
  const nlohmann::json over =
      simulate_file_json(file, {"simulate.engine=analytic", "cluster.network.oversubscription=8"});
  ASSERT_EQ(over["notes"].size(), 2u) << over["notes"].dump();
  EXPECT_NE(over["notes"][1].get<std::string>().find("8:1 oversubscription"), std::string::npos);
  EXPECT_EQ(over["config"]["grad_dtype"], "fp32");

  Scenario sc =
      driver::load(file, {"simulate.engine=analytic", "cluster.network.oversubscription=8"});
  const std::string text = render_summary(driver::predict(std::move(sc)).results);
  EXPECT_NE(
      text.find(
          "notes (approximations of the analytic engine, settings set aside, figures assumed)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("8:1 oversubscription"), std::string::npos);
}

}  // namespace dtsim::cli
