// The scenario loader: typed values, every problem in one pass, did-you-mean, --set.
#include "core/scenario/scenario.h"

#include <gtest/gtest.h>

#include "core/scenario/internal/binders.h"

namespace dtsim {
namespace {

const char* kMinimal = R"(name: t
cluster:
  gpu: A100-SXM-80GB
  nodes: 2
  gpus_per_node: 8
  network:
    preset: ib-hdr
model:
  preset: gpt3-125m
training:
  global_batch_size: 64
  micro_batch_size: 2
  gradient_bucket: 50MiB
)";

std::vector<Diagnostic> problems(const std::string& text, std::vector<Override> ov = {}) {
  try {
    load_scenario_text(text, "s.yaml", ov);
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return {};
}

// A binder reads keys by path; a path the schema does not declare (a misspelling) is a
// programmer error, never an absent key read as its default.
TEST(Scenario, BindersReadOnlyDeclaredKeys) {
  const EntryMap entries;
  const scenario_binding::Reader r(entries);
  EXPECT_NO_THROW(r.find("training.sync"));
  EXPECT_NO_THROW(r.find("cluster.network.nic_bandwidth"));
  EXPECT_THROW(r.find("training.synk"), std::logic_error);
  EXPECT_THROW(r.get<int64_t>("parallelism.tensr"), std::logic_error);
  EXPECT_THROW(r.under("cluster.netwrok."), std::logic_error);
}

TEST(Scenario, TypedValuesAndDefaults) {
  Scenario s = load_scenario_text(kMinimal, "s.yaml");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.cluster.gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(s.cluster.total_gpus(), 16);
  EXPECT_EQ(s.parallelism.data.value, 16);  // auto
  EXPECT_TRUE(s.parallelism.data_auto);
  EXPECT_EQ(s.micro_batches(), 2);  // 64 / (2 x 16)
  EXPECT_DOUBLE_EQ(s.training.gradient_bucket.value(), 50.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.training.first_gradient_bucket.value(), 1024.0 * 1024);  // DDP default
  EXPECT_DOUBLE_EQ(s.cluster.network.nic_bandwidth.value(), 25e9);            // HDR 200 Gb/s
  EXPECT_EQ(s.cluster.network.nics_per_node, 8);
  EXPECT_EQ(s.cluster.intra_node.name, "nvswitch-nvlink3");
  EXPECT_EQ(s.training.precision, DType::kBf16);
  EXPECT_EQ(s.simulate.engine, "simgrid");
}

TEST(Scenario, ReportsEveryProblemInOnePass) {
  auto d = problems(R"(cluster:
  gpus_per_nod: 8
  nodes: -3
model:
  preset: gpt3-125m
training:
  gradient_bucket: 25
  precision: bf17
)");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].key_path, "cluster.gpus_per_nod");
  EXPECT_NE(d[0].message.find("did you mean 'gpus_per_node'"), std::string::npos) << d[0].message;
  EXPECT_EQ(d[0].location.line, 2);
  EXPECT_EQ(d[0].location.column, 3);
  EXPECT_EQ(d[1].key_path, "cluster.nodes");
  EXPECT_EQ(d[1].location.line, 3);
  EXPECT_EQ(d[2].key_path, "training.gradient_bucket");
  EXPECT_NE(d[2].message.find("no unit"), std::string::npos);
  EXPECT_EQ(d[3].key_path, "training.precision");
  EXPECT_NE(d[3].message.find("did you mean bf16"), std::string::npos) << d[3].message;
  EXPECT_EQ(d[3].render().rfind("error: s.yaml:8:14: training.precision: ", 0), 0u)
      << d[3].render();
}

TEST(Scenario, OverridesReplaceAnyKey) {
  Scenario s = load_scenario_text(
      kMinimal, "s.yaml",
      {{"cluster.nodes=4"}, {"training.gradient_bucket=10MB"}, {"cluster.gpu=H100-SXM"}});
  EXPECT_EQ(s.cluster.nodes, 4);
  EXPECT_DOUBLE_EQ(s.training.gradient_bucket.value(), 10e6);
  EXPECT_EQ(s.cluster.gpu.name, "H100-SXM");
  EXPECT_EQ(s.parallelism.data.value, 32);
}

TEST(Scenario, BadOverridesAreLocated) {
  auto d = problems(kMinimal, {{"cluster.nodez=4"}, {"cluster.nodes=many"}, {"nonsense"}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NE(d[0].message.find("did you mean 'cluster.nodes'"), std::string::npos) << d[0].message;
  EXPECT_EQ(d[0].location.file, "--set");
  EXPECT_EQ(d[1].key_path, "cluster.nodes");
  EXPECT_EQ(d[1].location.line, 2);
  EXPECT_EQ(d[2].location.line, 3);
}

TEST(Scenario, UnsupportedFeaturesAreErrorsNotSilence) {
  auto d = problems(kMinimal, {{"training.sync=async"}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key_path, "training.sync");
  EXPECT_NE(d[0].message.find("not supported yet"), std::string::npos);
  EXPECT_TRUE(problems(kMinimal, {{"training.sync=synchronous"}}).empty());
}

// Stragglers are modelled (tests/sim/straggler_test.cc); bad entries are located errors.
TEST(Scenario, StragglersAreBoundAndChecked) {
  EXPECT_TRUE(
      problems(std::string(kMinimal) + "stragglers: [{ranks: [3], slowdown: 1.3}]\n").empty());
  auto d = problems(std::string(kMinimal) + "stragglers:\n  - {ranks: [3], slowdown: 0.5}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key_path, "stragglers[0].slowdown");
  EXPECT_NE(d[0].message.find("a factor from 1"), std::string::npos) << d[0].message;
}

TEST(Scenario, GpuCountMustMatchParallelSizes) {
  // Also reported in the same pass: 64 samples do not divide into micro-batch 2 x data 5.
  auto d = problems(std::string(kMinimal) + "parallelism:\n  data: 5\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].key_path, "parallelism.data");
  EXPECT_NE(d[0].message.find("use data: 16"), std::string::npos) << d[0].message;
}

TEST(Scenario, GlobalBatchMustDivide) {
  auto d = problems(kMinimal, {{"training.global_batch_size=65"}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key_path, "training.global_batch_size");
  EXPECT_NE(d[0].message.find("use 64 or 96"), std::string::npos) << d[0].message;
}

TEST(Scenario, InlineGpuSpec) {
  Scenario s = load_scenario_text(R"(cluster:
  gpu: {name: my-gpu, peak: {bf16: 100TFLOPS}, memory: 16GiB, memory_bandwidth: 1TBps}
  intra_node: pcie-gen4
model: {preset: gpt3-125m}
)",
                                  "s.yaml");
  EXPECT_EQ(s.cluster.gpu.name, "my-gpu");
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak_for(DType::kBf16).value(), 100e12);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.memory_bandwidth.value(), 1e12);
  auto d = problems(
      "cluster:\n  gpu: {name: x, peak: {bf16: 1TFLOPS}}\n  intra_node: pcie-gen4\nmodel: {preset: "
      "gpt3-125m}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("memory"), std::string::npos);
}

// Megatron-LM's argument names and the short forms are other spellings of the same keys, in a
// file and in --set; both spellings in one map is an error naming them.
TEST(Scenario, MegatronSpellingsAreAliases) {
  const std::string par = R"(
parallelism:
  tensor_model_parallel_size: 2
  pp: 2
  dp: 4
)";
  Scenario s = load_scenario_text(std::string(kMinimal) + par, "s.yaml");
  EXPECT_EQ(s.parallelism.tensor.value, 2);
  EXPECT_EQ(s.parallelism.pipeline.value, 2);
  EXPECT_EQ(s.parallelism.data.value, 4);
  EXPECT_EQ(s.entries.count("parallelism.tensor"), 1u);
  EXPECT_EQ(s.entries.count("parallelism.tensor_model_parallel_size"), 0u);

  Scenario o = load_scenario_text(
      kMinimal, "s.yaml", {{"parallelism.tp=4"}, {"parallelism.pipeline_model_parallel_size=4"}});
  EXPECT_EQ(o.parallelism.tensor.value, 4);
  EXPECT_EQ(o.parallelism.pipeline.value, 4);

  auto d = problems(std::string(kMinimal) + "parallelism:\n  tensor: 2\n  tp: 2\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key_path, "parallelism.tensor");
  EXPECT_NE(d[0].message.find("'tp' and 'tensor' are two spellings"), std::string::npos)
      << d[0].message;
}

// A short form of a catalog name suggests the name it begins.
// Large counts take an SI suffix (K, M, B or G, T: decimal), as people write token counts.
TEST(Scenario, NumbersTakeAnSiSuffix) {
  for (const auto& [text, value] : std::vector<std::pair<std::string, double>>{
           {"1T", 1e12}, {"300B", 3e11}, {"2.5M", 2.5e6}, {"15G", 1.5e10}}) {
    const Scenario s = load_scenario_text(kMinimal, "s.yaml", {{"training.tokens=" + text}});
    ASSERT_TRUE(s.reliability.tokens.has_value()) << text;
    EXPECT_DOUBLE_EQ(s.reliability.tokens->value, value) << text;
  }
  for (const char* bad : {"1X", "T", "1TB", "-1T"}) {
    auto d = problems(kMinimal, {{std::string("training.tokens=") + bad}});
    ASSERT_EQ(d.size(), 1u) << bad;
    EXPECT_EQ(d[0].key_path, "training.tokens") << bad;
  }
}

// --set values are text as a file's are: UTF-8, refused by position otherwise (the JSON result
// echoes the name, and JSON is UTF-8).
TEST(Scenario, AnOverrideThatIsNotUtf8IsRefused) {
  auto d = problems(kMinimal, {{"name=a\xff"}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("not UTF-8 text (byte 0xFF at offset 6)"), std::string::npos)
      << d[0].message;
  EXPECT_EQ(load_scenario_text(kMinimal, "s.yaml", {{"name=caf\xc3\xa9"}}).name, "caf\xc3\xa9");
}

TEST(Scenario, DidYouMeanCompletesShortNames) {
  auto d = problems(kMinimal, {{"cluster.gpu=H100"}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("did you mean H100-SXM?"), std::string::npos) << d[0].message;
  EXPECT_EQ(did_you_mean("a100", {"V100-SXM2-32GB", "A100-SXM-80GB", "A100-SXM-40GB"}),
            "A100-SXM-80GB");
  EXPECT_EQ(did_you_mean("zz", {"H100-SXM"}), "");
  // A name's beginning wins over a one-letter typo of another name.
  EXPECT_EQ(did_you_mean("A100-PCIe", {"H100-PCIe", "A100-PCIe-40GB", "A100-PCIe-80GB"}),
            "A100-PCIe-40GB");
  auto pcie = problems(kMinimal, {{"cluster.gpu=A100-PCIe"}});
  ASSERT_EQ(pcie.size(), 1u);
  EXPECT_NE(pcie[0].message.find("did you mean A100-PCIe-"), std::string::npos) << pcie[0].message;
  // A typo that begins no name still finds the closest.
  EXPECT_EQ(did_you_mean("tensr", {"tensor", "context"}), "tensor");
}

// A file with only a cluster is enough for what needs only a cluster (dtsim collective); for a
// training run it is one clear error.
TEST(Scenario, ClusterOnlyFiles) {
  const std::string cluster = "cluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n";
  Scenario s = load_scenario_text(cluster, "c.yaml", {}, {}, LoadScope::kCluster);
  EXPECT_EQ(s.cluster.total_gpus(), 16);
  EXPECT_EQ(s.simulate.engine, "simgrid");
  // Training sections in the file are checked against the schema, not bound: a batch that does
  // not divide is not the cluster's problem, an unknown key still is.
  EXPECT_NO_THROW(load_scenario_text(cluster + "training: {global_batch_size: 7}\n", "c.yaml", {},
                                     {}, LoadScope::kCluster));
  EXPECT_THROW(load_scenario_text(cluster + "training: {global_batch_sise: 7}\n", "c.yaml", {}, {},
                                  LoadScope::kCluster),
               InputError);
  int calls = 0;
  try {
    load_scenario_text(cluster, "c.yaml", {}, [&](const Scenario&, DiagnosticSink&) { ++calls; });
    ADD_FAILURE() << "a cluster-only file was accepted for training";
  } catch (const InputError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_NE(e.diagnostics()[0].message.find("describes only a cluster"), std::string::npos);
  }
  EXPECT_EQ(calls, 0);  // the model cross-check has nothing to check and does not repeat it
}

TEST(Scenario, WholeFileProblems) {
  EXPECT_EQ(problems("").size(), 1u);
  EXPECT_EQ(problems("- a\n- b\n").size(), 1u);
  EXPECT_EQ(problems(std::string("\x89PNG\r\n\x1a\n\0\0", 10)).size(), 1u);
  auto syntax = problems("cluster:\n  nodes: [1, 2\n");
  ASSERT_EQ(syntax.size(), 1u);
  EXPECT_GT(syntax[0].location.line, 0);
}

}  // namespace
}  // namespace dtsim
