// `dtsim catalog ... --json`: valid JSON whose hardware entries, written as inline specs, load
// back to the catalog's own figures, field by field.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/commands.h"
#include "core/hardware/catalog.h"
#include "core/scenario/scenario.h"
#include "driver/catalog.h"
#include "models/model_spec.h"

namespace dtsim::driver {
namespace {

using nlohmann::json;

Scenario load(const std::string& cluster_yaml, const std::string& precision = "bf16") {
  return load_scenario_text("cluster:\n" + cluster_yaml + "model: {preset: gpt3-125m}\n" +
                            "training: {precision: " + precision + "}\n");
}

// Every field an inline spec can set, compared as the catalog JSON prints it.
void expect_inline_fields_equal(HardwareKind kind, const json& loaded, const json& entry) {
  for (const auto& field : inline_fields(kind))
    EXPECT_EQ(loaded.at(field), entry.at(field)) << entry.at("name") << " " << field;
}

TEST(CatalogJson, EveryGpuRoundTripsThroughAnInlineSpec) {
  const json gpus = json::parse(gpu_catalog_json().dump());
  ASSERT_EQ(gpus.size(), gpu_catalog().size());
  for (const auto& entry : gpus) {
    const std::string precision = entry.at("peak_flops_per_s").begin().key();
    const Scenario sc = load(
        "  gpu: " + inline_spec_yaml(HardwareKind::kGpu, entry) + "\n  intra_node: pcie-gen4\n",
        precision);
    const GpuSpec& loaded = sc.cluster.gpu;
    const GpuSpec& catalog = *find_gpu(entry.at("name").get<std::string>());
    EXPECT_EQ(loaded.name, catalog.name);
    EXPECT_EQ(loaded.peak.size(), catalog.peak.size()) << catalog.name;
    for (const auto& [dtype, rate] : catalog.peak)
      EXPECT_EQ(loaded.peak_for(dtype).value(), rate.value()) << catalog.name;
    EXPECT_EQ(loaded.memory.value(), catalog.memory.value()) << catalog.name;
    EXPECT_EQ(loaded.memory_bandwidth.value(), catalog.memory_bandwidth.value()) << catalog.name;
    EXPECT_EQ(loaded.gemm_efficiency, catalog.gemm_efficiency) << catalog.name;
    EXPECT_EQ(loaded.attention_efficiency, catalog.attention_efficiency) << catalog.name;
    EXPECT_EQ(loaded.memory_efficiency, catalog.memory_efficiency) << catalog.name;
    EXPECT_EQ(loaded.kernel_launch_overhead.value(), catalog.kernel_launch_overhead.value())
        << catalog.name;
    EXPECT_EQ(loaded.sm_count, catalog.sm_count) << catalog.name;
    expect_inline_fields_equal(HardwareKind::kGpu, to_json(loaded), entry);
  }
}

TEST(CatalogJson, EveryFabricRoundTripsThroughAnInlineSpec) {
  const json fabrics = json::parse(fabric_catalog_json().dump());
  ASSERT_EQ(fabrics.size(), fabric_catalog().size());
  for (const auto& entry : fabrics) {
    const Scenario sc = load(
        "  gpu: H100-SXM\n  intra_node: " + inline_spec_yaml(HardwareKind::kFabric, entry) + "\n");
    const IntraNodeFabricSpec& loaded = sc.cluster.intra_node;
    const IntraNodeFabricSpec& catalog = *find_fabric(entry.at("name").get<std::string>());
    EXPECT_EQ(loaded.name, catalog.name);
    EXPECT_EQ(loaded.kind, catalog.kind) << catalog.name;
    EXPECT_EQ(loaded.per_gpu_bandwidth.value(), catalog.per_gpu_bandwidth.value()) << catalog.name;
    EXPECT_EQ(loaded.latency.value(), catalog.latency.value()) << catalog.name;
    EXPECT_EQ(loaded.protocol_efficiency, catalog.protocol_efficiency) << catalog.name;
    expect_inline_fields_equal(HardwareKind::kFabric, to_json(loaded), entry);
  }
}

TEST(CatalogJson, EveryNetworkRoundTripsThroughInlineOverrides) {
  const json networks = json::parse(network_catalog_json().dump());
  ASSERT_EQ(networks.size(), network_catalog().size());
  for (const auto& entry : networks) {
    const Scenario sc = load(
        "  gpu: H100-SXM\n  network: " + inline_spec_yaml(HardwareKind::kNetwork, entry) + "\n");
    const NetworkConfig& loaded = sc.cluster.network;
    const NetworkSpec& catalog = *find_network(entry.at("name").get<std::string>());
    EXPECT_EQ(loaded.kind, catalog.kind) << catalog.name;
    EXPECT_EQ(loaded.nic_bandwidth.value(), catalog.port_bandwidth.value()) << catalog.name;
    EXPECT_EQ(loaded.latency.value(), catalog.latency.value()) << catalog.name;
    EXPECT_EQ(loaded.protocol_efficiency, catalog.protocol_efficiency) << catalog.name;
    NetworkSpec as_spec = catalog;
    as_spec.kind = loaded.kind;
    as_spec.port_bandwidth = loaded.nic_bandwidth;
    as_spec.latency = loaded.latency;
    as_spec.protocol_efficiency = loaded.protocol_efficiency;
    expect_inline_fields_equal(HardwareKind::kNetwork, to_json(as_spec), entry);
  }
}

// `intra_node: pcie` on a PCIe card is the card's own PCIe generation.
TEST(CatalogScenario, PcieOnAPcieCardIsItsOwnGeneration) {
  EXPECT_EQ(load("  gpu: H100-PCIe\n  intra_node: pcie\n").cluster.intra_node.name, "pcie-gen5");
  EXPECT_EQ(load("  gpu: L40S\n  intra_node: pcie\n").cluster.intra_node.name, "pcie-gen4");
  EXPECT_EQ(load("  gpu: A100-PCIe-80GB\n").cluster.intra_node.name, "pcie-gen4");
}

// A rack-scale NVLink domain is one node: 72 GPUs and a NIC for each.
TEST(CatalogScenario, Gb200Nvl72IsOneNodeOf72Gpus) {
  const Scenario sc = load(
      "  gpu: GB200-NVL72\n  nodes: 2\n  gpus_per_node: 72\n  intra_node: nvswitch\n"
      "  network: {preset: ib-xdr, nics_per_node: 72}\n");
  EXPECT_EQ(sc.cluster.intra_node.name, "nvswitch-nvlink5");
  EXPECT_EQ(sc.cluster.network.nics_per_node, 72);
  EXPECT_DOUBLE_EQ(sc.cluster.network.nic_bandwidth.value(), 100e9);  // 800 Gb/s
}

// Training at a precision the GPU has no peak for is an error that names the ones it has.
TEST(CatalogScenario, UnsupportedPrecisionNamesTheSupportedOnes) {
  try {
    load("  gpu: V100-SXM2-32GB\n  intra_node: nvlink-hybrid-cube-mesh\n", "bf16");
    FAIL() << "bf16 on V100 loaded";
  } catch (const InputError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    const std::string& m = e.diagnostics().front().message;
    EXPECT_NE(m.find("no bf16 peak"), std::string::npos) << m;
    EXPECT_NE(m.find("fp32, fp16"), std::string::npos) << m;
  }
}

TEST(CatalogJson, QuantitiesNameTheirUnitsAndEntriesTheirSource) {
  const json gpu = gpu_catalog_json().at(0);
  for (const char* key : {"memory_bytes", "memory_bandwidth_Bps", "peak_flops_per_s",
                          "kernel_launch_overhead_s", "source"})
    EXPECT_TRUE(gpu.contains(key)) << key;
  EXPECT_TRUE(fabric_catalog_json().at(0).contains("latency_s"));
  EXPECT_TRUE(network_catalog_json().at(0).contains("port_bandwidth_Bps"));
}

// Whole counts are integers in the JSON, as in simulate's and collective's: a GPU's bytes, a
// model's parameters and layers; fractions stay floats.
TEST(CatalogJson, WholeCountsAreIntegers) {
  for (const json& gpu : gpu_catalog_json()) {
    EXPECT_TRUE(gpu.at("memory_bytes").is_number_integer()) << gpu.at("name");
    EXPECT_TRUE(gpu.at("gemm_efficiency").is_number()) << gpu.at("name");
  }
  for (const json& model : model_catalog_json()) {
    EXPECT_TRUE(model.at("parameters").is_number_integer()) << model.at("name");
    if (model.contains("num_layers")) {
      EXPECT_TRUE(model.at("num_layers").is_number_integer()) << model.at("name");
    }
  }
  EXPECT_TRUE(gpu_catalog_json().at(0).at("kernel_launch_overhead_s").is_number_float());
}

// The `model` subtree comes from models/, with the bounds check_spec() applies.
TEST(CatalogJson, KeysCarryTheSchemaTreeWithTheModelBounds) {
  const json keys = json::parse(scenario_keys_json().dump()).at("keys");
  const json* model = nullptr;
  for (const auto& k : keys)
    if (k.at("key") == "model") model = &k;
  ASSERT_NE(model, nullptr);
  bool found = false;
  for (const auto& k : model->at("children"))
    if (k.at("key") == "model.hidden_size") {
      found = true;
      EXPECT_EQ(k.at("type"), "count");
      EXPECT_EQ(k.at("max").get<double>(), models::kMaxHidden);
    }
  EXPECT_TRUE(found);
}

TEST(CatalogJson, EveryListingPrintsValidJson) {
  for (const char* what :
       {"gpus", "fabrics", "networks", "hardware", "models", "engines", "keys"}) {
    std::ostringstream out;
    cli::CatalogOptions o;
    o.what = what;
    o.json = true;
    EXPECT_EQ(cli::run_catalog(o, out), 0);
    const json j = json::parse(out.str());
    EXPECT_FALSE(j.empty()) << what;
  }
}

// The text listing shows a peak only for a dtype simulate accepts on that GPU: V100 has no bf16
// tensor cores, so its bf16 column is "-", not its fp16 figure.
TEST(CatalogText, PeaksOnlyForTheDtypesAGpuHas) {
  std::ostringstream out;
  cli::CatalogOptions o;
  o.what = "gpus";
  ASSERT_EQ(cli::run_catalog(o, out), 0);
  std::istringstream lines(out.str());
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, fp16, bf16, fp8;
    fields >> name >> fp16 >> bf16 >> fp8;
    const GpuSpec* g = find_gpu(name);
    if (!g) continue;  // the header
    ++rows;
    EXPECT_EQ(bf16 == "-", !g->supports(DType::kBf16)) << line;
    EXPECT_EQ(fp16 == "-", !g->supports(DType::kFp16)) << line;
    EXPECT_EQ(fp8 == "-", !g->supports(DType::kFp8)) << line;
  }
  EXPECT_EQ(rows, static_cast<int>(gpu_catalog().size()));
  EXPECT_FALSE(find_gpu("V100-SXM2-32GB")->supports(DType::kBf16));
}

}  // namespace
}  // namespace dtsim::driver
