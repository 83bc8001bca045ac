// Torus networks in core: default dimensions, coordinates, and the torus_dims scenario keys.
#include "core/hardware/torus.h"

#include <gtest/gtest.h>

#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

TEST(TorusDims, DefaultIsANearCube) {
  EXPECT_EQ(default_torus_dims(16), (std::vector<int>{4, 4}));
  EXPECT_EQ(default_torus_dims(64), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(default_torus_dims(32), (std::vector<int>{4, 4, 2}));
  EXPECT_EQ(default_torus_dims(12), (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(default_torus_dims(4096), (std::vector<int>{16, 16, 16}));
  EXPECT_EQ(default_torus_dims(13), (std::vector<int>{13}));
  EXPECT_EQ(default_torus_dims(2), (std::vector<int>{2}));
}

TEST(TorusDims, CoordinatesRunDimensionZeroFastest) {
  const std::vector<int> dims{4, 3, 2};
  EXPECT_EQ(torus_coordinates(0, dims), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(torus_coordinates(5, dims), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(torus_coordinates(23, dims), (std::vector<int>{3, 2, 1}));
  for (int n = 0; n < 24; ++n) EXPECT_EQ(torus_node(torus_coordinates(n, dims), dims), n);
}

TEST(TorusDims, RoutesTakeTheShorterWayInEachDimension) {
  const std::vector<int> dims{5, 4};
  EXPECT_EQ(torus_route(0, 0, dims).size(), 0u);
  EXPECT_EQ(torus_route(0, 4, dims).size(), 1u);   // one hop the - way round
  EXPECT_EQ(torus_route(0, 2, dims).size(), 2u);   // two hops + (three the other way)
  EXPECT_EQ(torus_route(0, 12, dims).size(), 4u);  // (2, 2): two + in x, two in y (a tie: +)
}

std::string cluster_yaml(const std::string& network) {
  return "cluster:\n  nodes: 16\n  gpus_per_node: 1\n  network: {" + network +
         "}\nmodel: {preset: gpt3-125m}\n";
}

std::vector<Diagnostic> problems(const std::string& text) {
  try {
    load_scenario_text(text, "s.yaml");
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return {};
}

TEST(TorusScenario, DimsAreReadAndDefaulted) {
  Scenario s = load_scenario_text(cluster_yaml("topology: torus, torus_dims: [8, 2]"), "s.yaml");
  EXPECT_EQ(s.cluster.network.topology, Topology::kTorus);
  EXPECT_EQ(s.cluster.network.torus_dims, (std::vector<int>{8, 2}));
  EXPECT_DOUBLE_EQ(s.cluster.network.torus_hop_latency.value(),
                   s.cluster.network.latency.value());  // default: latency
  s = load_scenario_text(cluster_yaml("topology: torus, latency: 3us, torus_hop_latency: 100ns"),
                         "s.yaml");
  EXPECT_EQ(s.cluster.network.torus_dims, (std::vector<int>{4, 4}));
  EXPECT_DOUBLE_EQ(s.cluster.network.torus_hop_latency.value(), 100e-9);
  // Overrides reach it too.
  s = load_scenario_text(cluster_yaml("topology: torus"), "s.yaml",
                         {Override{"cluster.network.torus_dims=[2, 2, 4]"}});
  EXPECT_EQ(s.cluster.network.torus_dims, (std::vector<int>{2, 2, 4}));
}

TEST(TorusScenario, BadDimsAreNamedErrors) {
  auto only = [](const std::vector<Diagnostic>& d) {
    EXPECT_EQ(d.size(), 1u);
    return d.empty() ? Diagnostic{} : d.front();
  };
  Diagnostic d = only(problems(cluster_yaml("topology: torus, torus_dims: [4, 3]")));
  EXPECT_EQ(d.key_path, "cluster.network.torus_dims");
  EXPECT_NE(d.message.find("[4, 3] hold 12 nodes, but cluster.nodes is 16"), std::string::npos)
      << d.message;
  d = only(problems(cluster_yaml("topology: torus, torus_dims: [2, 2, 2, 2]")));
  EXPECT_EQ(d.key_path, "cluster.network.torus_dims");
  EXPECT_NE(d.message.find("1 to 3 dimensions"), std::string::npos) << d.message;
  d = only(problems(cluster_yaml("topology: torus, torus_dims: []")));
  EXPECT_NE(d.message.find("1 to 3 dimensions"), std::string::npos) << d.message;
  d = only(problems(cluster_yaml("topology: torus, torus_dims: [16, 0]")));
  EXPECT_EQ(d.key_path, "cluster.network.torus_dims[1]");
  d = only(problems(cluster_yaml("topology: torus, torus_dims: 16")));
  EXPECT_EQ(d.key_path, "cluster.network.torus_dims");
  d = only(problems(cluster_yaml("topology: fat-tree, torus_dims: [4, 4]")));
  EXPECT_EQ(d.key_path, "cluster.network.torus_dims");
  EXPECT_NE(d.message.find("applies to topology: torus"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace dtsim
