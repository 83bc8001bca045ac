// Every field of a catalog GPU, fabric and network can be set over the catalog's figure, in a
// file or with --set, and the value reaches the result. The loop walks the schema, so a field
// added later without an entry here fails the test rather than going unchecked.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "driver/predict.h"
#include "tests/support/scratch_dir.h"

namespace dtsim {
namespace {

// Four nodes of eight H100s, TP 8 inside each node and DP 4 across them, with no overlap, so that
// every intra-node and network figure shows in the step time. Two leaves of two nodes in two
// pods, each level oversubscribed 2:1, so the three-level fat-tree's fields all matter.
constexpr const char* kFatTree = R"(
cluster:
  gpu: H100-SXM
  nodes: 4
  gpus_per_node: 8
  network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8, nodes_per_leaf: 2, levels: 3,
            leaves_per_pod: 1, oversubscription: 2, pod_oversubscription: 2}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 8, data: auto}
training: {global_batch_size: 8, micro_batch_size: 1, overlap_grad_reduce: false}
simulate: {engine: simgrid}
)";

// The same model on a ring of four nodes, in two pipeline stages of two nodes each, so that a
// stage's activations travel two hops (node 0 to node 2) and the hop latency shows.
constexpr const char* kTorus = R"(
cluster:
  gpu: H100-SXM
  nodes: 4
  gpus_per_node: 8
  network: {preset: ib-ndr, topology: torus, torus_dims: [4]}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 8, pipeline: 2, data: auto}
training: {global_batch_size: 8, micro_batch_size: 1, overlap_grad_reduce: false}
simulate: {engine: simgrid}
)";

// The same model on a dragonfly of 8 nodes, DP 8 across them: each ring hop between groups carries
// the 8 GPUs' flows over the L global links joining the pair (rank mod L), so the shape and the
// routing move the step time. One file gives groups (routers_per_group derived), the other
// routers_per_group (groups derived), so that each can change alone.
constexpr const char* kDragonflyByGroups = R"(
cluster:
  gpu: H100-SXM
  nodes: 8
  gpus_per_node: 8
  network: {preset: ib-ndr, topology: dragonfly, nics_per_node: 8,
            dragonfly: {groups: 4, nodes_per_router: 2, global_links_per_router: 6}}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 8, data: auto}
training: {global_batch_size: 8, micro_batch_size: 1, overlap_grad_reduce: false}
simulate: {engine: simgrid}
)";
constexpr const char* kDragonflyByRouters = R"(
cluster:
  gpu: H100-SXM
  nodes: 8
  gpus_per_node: 8
  network: {preset: ib-ndr, topology: dragonfly, nics_per_node: 8,
            dragonfly: {routers_per_group: 1, nodes_per_router: 2, global_links_per_router: 6}}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 8, data: auto}
training: {global_batch_size: 8, micro_batch_size: 1, overlap_grad_reduce: false}
simulate: {engine: simgrid}
)";

// A network named by its kind alone, so that the kind chooses the preset.
constexpr const char* kByKind = R"(
cluster:
  gpu: H100-SXM
  nodes: 4
  gpus_per_node: 8
  network: {kind: infiniband}
model: {preset: gpt3-1.3b}
parallelism: {tensor: 8, data: auto}
training: {global_batch_size: 8, micro_batch_size: 1, overlap_grad_reduce: false}
simulate: {engine: simgrid}
)";

struct Case {
  std::string value;                                  // what --set gives
  const char* scenario = kFatTree;                    // the file it applies to
  std::function<double(const ClusterConfig&)> field;  // the resolved figure, in base units
  double expected = 0;                                // the value in base units
  std::vector<std::string> extra = {};                // further --set the case needs
};

// One entry per overridable field, keyed by its path under cluster.
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> table = [] {
    std::map<std::string, Case> t;
    auto peak = [](DType d) {
      return [d](const ClusterConfig& c) { return c.gpu.peak.at(d).value(); };
    };
    // A format's peak shows in the step time when training runs in it.
    t["gpu.peak.fp32"] = {
        "30TFLOPS", kFatTree, peak(DType::kFp32), 30e12, {"training.precision=fp32"}};
    t["gpu.peak.tf32"] = {
        "300TFLOPS", kFatTree, peak(DType::kTf32), 300e12, {"training.precision=tf32"}};
    t["gpu.peak.fp16"] = {
        "500TFLOPS", kFatTree, peak(DType::kFp16), 500e12, {"training.precision=fp16"}};
    t["gpu.peak.bf16"] = {"500TFLOPS", kFatTree, peak(DType::kBf16), 500e12};
    t["gpu.peak.fp8"] = {"1PFLOPS", kFatTree, peak(DType::kFp8), 1e15, {"training.precision=fp8"}};
    t["gpu.memory"] = {"40GiB", kFatTree, [](auto& c) { return c.gpu.memory.value(); },
                       40.0 * (1 << 30)};
    t["gpu.memory_bandwidth"] = {"1TBps", kFatTree,
                                 [](auto& c) { return c.gpu.memory_bandwidth.value(); }, 1e12};
    t["gpu.gemm_efficiency"] = {"0.5", kFatTree, [](auto& c) { return c.gpu.gemm_efficiency; },
                                0.5};
    t["gpu.attention_efficiency"] = {"0.2", kFatTree,
                                     [](auto& c) { return c.gpu.attention_efficiency; }, 0.2};
    t["gpu.memory_efficiency"] = {"0.5", kFatTree, [](auto& c) { return c.gpu.memory_efficiency; },
                                  0.5};
    t["gpu.kernel_launch_overhead"] = {
        "50us", kFatTree, [](auto& c) { return c.gpu.kernel_launch_overhead.value(); }, 50e-6};
    t["gpu.sm_count"] = {"100", kFatTree, [](auto& c) { return double(c.gpu.sm_count); }, 100};
    t["intra_node.kind"] = {"pcie", kFatTree,
                            [](auto& c) { return double(c.intra_node.kind == FabricKind::kPcie); },
                            1};
    t["intra_node.bandwidth"] = {
        "100GBps", kFatTree, [](auto& c) { return c.intra_node.per_gpu_bandwidth.value(); }, 1e11};
    t["intra_node.latency"] = {"20us", kFatTree,
                               [](auto& c) { return c.intra_node.latency.value(); }, 20e-6};
    t["intra_node.protocol_efficiency"] = {
        "0.5", kFatTree, [](auto& c) { return c.intra_node.protocol_efficiency; }, 0.5};
    t["network.preset"] = {"ib-hdr", kFatTree,
                           [](auto& c) { return c.network.nic_bandwidth.value(); }, 200e9 / 8};
    t["network.kind"] = {"ethernet", kByKind,
                         [](auto& c) { return double(c.network.kind == NetworkKind::kEthernet); },
                         1};
    t["network.topology"] = {
        "rail-optimized", kFatTree,
        [](auto& c) { return double(c.network.topology == Topology::kRailOptimized); }, 1};
    t["network.nic_bandwidth"] = {
        "100Gbps", kFatTree, [](auto& c) { return c.network.nic_bandwidth.value(); }, 100e9 / 8};
    t["network.nics_per_node"] = {"2", kFatTree,
                                  [](auto& c) { return double(c.network.nics_per_node); }, 2};
    t["network.latency"] = {"50us", kFatTree, [](auto& c) { return c.network.latency.value(); },
                            50e-6};
    t["network.nodes_per_leaf"] = {"4", kFatTree,
                                   [](auto& c) { return double(c.network.nodes_per_leaf); }, 4};
    t["network.levels"] = {"2", kFatTree, [](auto& c) { return double(c.network.levels); }, 2};
    t["network.leaves_per_pod"] = {"2", kFatTree,
                                   [](auto& c) { return double(c.network.leaves_per_pod); }, 2};
    t["network.pod_oversubscription"] = {"8", kFatTree,
                                         [](auto& c) { return c.network.pod_oversubscription; }, 8};
    t["network.oversubscription"] = {"8", kFatTree,
                                     [](auto& c) { return c.network.oversubscription; }, 8};
    t["network.torus_dims"] = {"[2, 2]", kTorus,
                               [](auto& c) { return double(c.network.torus_dims.size()); }, 2};
    t["network.torus_hop_latency"] = {
        "100us", kTorus, [](auto& c) { return c.network.torus_hop_latency.value(); }, 100e-6};
    auto df = [](auto get) {
      return [get](const ClusterConfig& c) { return get(c.network.dragonfly); };
    };
    // 4 groups of 1 router with 6 global links: L = 2 per pair; 2 groups: L = 12 (4 flows a
    // link become 1); 2 routers a group: L = 12 too; 4 nodes a router: 2 groups, L = 6; 3 links a
    // router: L = 1 (8 flows a link); valiant: two global hops a flow.
    t["network.dragonfly.groups"] = {"2", kDragonflyByGroups,
                                     df([](auto& d) { return double(d.groups); }), 2};
    t["network.dragonfly.routers_per_group"] = {
        "2", kDragonflyByRouters, df([](auto& d) { return double(d.routers_per_group); }), 2};
    t["network.dragonfly.nodes_per_router"] = {
        "4", kDragonflyByRouters, df([](auto& d) { return double(d.nodes_per_router); }), 4};
    t["network.dragonfly.global_links_per_router"] = {
        "3", kDragonflyByGroups, df([](auto& d) { return double(d.global_links_per_router); }), 3};
    t["network.dragonfly.routing"] = {
        "valiant", kDragonflyByGroups,
        df([](auto& d) { return double(d.routing == DragonflyRouting::kValiant); }), 1};
    // Switches that reduce (SHARP): auto may run the DP all-reduce as CollNet across the nodes.
    t["network.in_network_reduction"] = {
        "true", kFatTree, [](auto& c) { return double(c.network.in_network_reduction); }, 1};
    t["network.protocol_efficiency"] = {"0.3", kFatTree,
                                        [](auto& c) { return c.network.protocol_efficiency; }, 0.3};
    // Power moves the energy, not the step.
    t["gpu.max_power"] = {"500W", kFatTree, [](auto& c) { return c.gpu.max_power.value(); }, 500};
    t["gpu.idle_power"] = {"50W", kFatTree, [](auto& c) { return c.gpu.idle_power.value(); }, 50};
    t["network.switch_port_power"] = {
        "20W", kFatTree, [](auto& c) { return c.network.switch_port_power.value(); }, 20};
    return t;
  }();
  return table;
}

// Fields that change what the hardware is called, not its figures: checked by name below.
const std::vector<std::string> kNames = {"gpu.name", "gpu.base", "intra_node.name",
                                         "intra_node.base"};

// A scenario file of its own in the test's scratch folder.
std::string write_temp(const std::string& text) {
  static int n = 0;
  const std::string path =
      dtsim::testing::scratch_dir().file("overrides-" + std::to_string(n++) + ".yaml");
  std::ofstream(path) << text;
  return path;
}

nlohmann::json simulate_json(const std::string& file, const std::vector<std::string>& overrides) {
  cli::SimulateOptions o;
  o.scenario = file;
  o.overrides = overrides;
  o.json = true;
  std::ostringstream out;
  cli::run_simulate(o, out);
  return nlohmann::json::parse(out.str());
}

void leaves(const SchemaNode& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& c : node.children) {
    const std::string path = prefix + c.key;
    if (c.children.empty())
      out.push_back(path);
    else
      leaves(c, path + ".", out);
  }
}

// The fields of cluster.gpu, cluster.intra_node and cluster.network, as paths under cluster.
std::vector<std::string> overridable_fields() {
  std::vector<std::string> out;
  const SchemaNode* cluster = find_schema_node(scenario_schema(), "cluster");
  for (const char* section : {"gpu", "intra_node", "network"})
    leaves(*cluster->child(section), std::string(section) + ".", out);
  return out;
}

TEST(HardwareOverrides, EveryFieldHasACase) {
  for (const auto& field : overridable_fields()) {
    const bool named = std::find(kNames.begin(), kNames.end(), field) != kNames.end();
    EXPECT_TRUE(named || cases().count(field)) << "cluster." << field << " has no override case";
  }
}

class OverrideField : public ::testing::TestWithParam<std::string> {};

TEST_P(OverrideField, ReachesTheClusterAndTheResult) {
  const Case& c = cases().at(GetParam());
  const std::string file = write_temp(c.scenario);
  std::vector<std::string> overrides = c.extra;
  const nlohmann::json before = simulate_json(file, overrides);
  overrides.push_back("cluster." + GetParam() + "=" + c.value);
  const Scenario sc = driver::load(file, overrides);
  EXPECT_DOUBLE_EQ(c.field(sc.cluster), c.expected);
  const nlohmann::json after = simulate_json(file, overrides);
  const bool moved = before["step_time_s"] != after["step_time_s"] ||
                     before["memory"]["capacity_bytes"] != after["memory"]["capacity_bytes"] ||
                     before["energy"] != after["energy"];
  EXPECT_TRUE(moved) << "cluster." << GetParam() << "=" << c.value
                     << " left the step time, the memory capacity and the energy unchanged";
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(AllFields, OverrideField, ::testing::ValuesIn([] {
                           std::vector<std::string> keys;
                           for (const auto& [k, c] : cases()) keys.push_back(k);
                           return keys;
                         }()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(HardwareOverrides, AFileOverridesACatalogEntryThroughBase) {
  const std::string file = write_temp(R"(
cluster:
  gpu: {base: H100-SXM, memory: 40GiB}
  nodes: 1
  gpus_per_node: 8
  intra_node: {base: nvswitch, bandwidth: 100GBps}
model: {preset: gpt3-1.3b}
training: {global_batch_size: 8, micro_batch_size: 1}
)");
  const Scenario sc = driver::load(file);
  EXPECT_EQ(sc.cluster.gpu.memory.value(), 40.0 * (1 << 30));
  EXPECT_EQ(sc.cluster.gpu.name, "H100-SXM");
  EXPECT_EQ(sc.cluster.gpu.memory_bandwidth.value(),
            find_gpu("H100-SXM")->memory_bandwidth.value());
  EXPECT_EQ(sc.cluster.intra_node.name, "nvswitch-nvlink4");
  EXPECT_EQ(sc.cluster.intra_node.per_gpu_bandwidth.value(), 100e9);
  EXPECT_EQ(sc.cluster.intra_node.latency.value(),
            find_fabric("nvswitch-nvlink4")->latency.value());
  EXPECT_EQ(sc.cluster.gpu_overridden, std::vector<std::string>{"memory"});
  std::filesystem::remove(file);
}

TEST(HardwareOverrides, TheResultNamesWhatWasSet) {
  const std::string file = write_temp(kFatTree);
  const auto j = simulate_json(file, {"cluster.gpu.memory=40GiB", "cluster.gpu.name=H100-test"});
  EXPECT_EQ(j["config"]["gpu"], "H100-test with memory set");
  std::ostringstream out;
  cli::ValidateOptions v;
  v.scenario = file;
  v.overrides = {"cluster.network.latency=9us", "cluster.intra_node.name=my-switch"};
  cli::run_validate(v, out);
  EXPECT_NE(out.str().find("network      ib-ndr with latency set"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("intra-node   my-switch:"), std::string::npos) << out.str();
  std::filesystem::remove(file);
}

// Overrides that cannot apply are errors that name the key, not silent no-ops.
TEST(HardwareOverrides, AnOverrideThatCannotApplyIsAnError) {
  const std::string file = write_temp(kFatTree);
  struct Bad {
    std::string file, set, key, words;
  };
  for (const Bad& b : std::vector<Bad>{
           {file, "cluster.gpu.base=A100-SXM-80GB", "cluster.gpu.base", "already names"},
           {file, "cluster.intra_node.base=pcie", "cluster.intra_node.base", "already names"},
       }) {
    try {
      driver::load(b.file, {b.set});
      ADD_FAILURE() << b.set << " was accepted";
    } catch (const InputError& e) {
      ASSERT_FALSE(e.diagnostics().empty());
      EXPECT_EQ(e.diagnostics()[0].key_path, b.key) << b.set;
      EXPECT_NE(e.diagnostics()[0].message.find(b.words), std::string::npos)
          << e.diagnostics()[0].message;
    }
  }
  std::filesystem::remove(file);
}

// On one node the network carries nothing: a --set network key is accepted (a sweep over node
// counts keeps its one-node baseline) and the result's notes say that it had no effect; the
// network's resolved figures are in config either way.
TEST(HardwareOverrides, ANetworkOverrideOnOneNodeIsANote) {
  const std::string one_node = write_temp(R"(
cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}
model: {preset: gpt3-1.3b}
training: {global_batch_size: 8, micro_batch_size: 1}
simulate: {engine: analytic}
)");
  const auto j = simulate_json(one_node, {"cluster.network.nic_bandwidth=100Gbps"});
  bool noted = false;
  for (const auto& n : j["notes"])
    noted = noted || n.get<std::string>().find("cluster.network.nic_bandwidth: has no effect") !=
                         std::string::npos;
  EXPECT_TRUE(noted) << j["notes"].dump();
  EXPECT_EQ(j["config"]["network"]["nic_bandwidth_bytes_per_s"].get<double>(), 12.5e9);
  EXPECT_EQ(j["config"]["network"]["name"], "ib-ndr with nic_bandwidth set");
  EXPECT_GT(j["config"]["network"]["latency_s"].get<double>(), 0);
  EXPECT_GT(j["config"]["intra_node"]["bandwidth_bytes_per_s"].get<double>(), 0);
  std::ostringstream out;
  cli::ValidateOptions v;
  v.scenario = one_node;
  v.overrides = {"cluster.network.nic_bandwidth=100Gbps"};
  cli::run_validate(v, out);
  EXPECT_NE(out.str().find("note         cluster.network.nic_bandwidth: has no effect"),
            std::string::npos)
      << out.str();
  std::filesystem::remove(one_node);
}

// An inline GPU without base: takes the schema's figures for what it does not set; validate and
// the result's notes name each, with its value.
TEST(HardwareOverrides, AnInlineGpuNamesTheFiguresItAssumed) {
  const std::string file = write_temp(R"(
cluster:
  gpu: {name: my-gpu, peak: {bf16: 400TFLOPS}, memory: 80GiB, memory_bandwidth: 2TBps,
        gemm_efficiency: 0.8}
  nodes: 1
  gpus_per_node: 8
  intra_node: nvswitch-nvlink4
model: {preset: gpt3-1.3b}
training: {global_batch_size: 8, micro_batch_size: 1}
simulate: {engine: analytic}
)");
  const Scenario s = driver::load(file);
  ASSERT_EQ(s.notes.size(), 1u);
  const std::string& n = s.notes[0];
  EXPECT_EQ(n.find("cluster.gpu: the inline GPU takes assumed figures"), 0u) << n;
  EXPECT_NE(n.find("attention_efficiency 0.5"), std::string::npos) << n;
  EXPECT_NE(n.find("memory_efficiency 0.85"), std::string::npos) << n;
  EXPECT_NE(n.find("kernel_launch_overhead"), std::string::npos) << n;
  EXPECT_EQ(n.find("gemm_efficiency"), std::string::npos) << "set, so not assumed: " << n;
  const auto j = simulate_json(file, {});
  bool noted = false;
  for (const auto& note : j["notes"]) noted = noted || note.get<std::string>() == n;
  EXPECT_TRUE(noted) << j["notes"].dump();
  EXPECT_TRUE(driver::load(file, {"cluster.gpu.base=H100-SXM"}).notes.empty());
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace dtsim
