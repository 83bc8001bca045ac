// gui/app/yaml_edit.h: one key set or removed, the rest of the text (comments, order) kept.
#include "gui/app/yaml_edit.h"

#include <gtest/gtest.h>

namespace dtsim::gui {
namespace {

const char* const kText =
    "# a comment\n"
    "name: test\n"
    "cluster:\n"
    "  gpu: H100-SXM   # the GPU\n"
    "  nodes: 2\n"
    "  network:\n"
    "    topology: fat-tree\n"
    "training:\n"
    "  global_batch_size: 512\n"
    "stragglers: []\n";

TEST(YamlEdit, ReplacesAScalarWhereItStandsAndKeepsComments) {
  const std::string out = set_yaml_value(kText, "cluster.gpu", "A100-SXM-80GB");
  EXPECT_NE(out.find("  gpu: A100-SXM-80GB   # the GPU\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# a comment\n"), std::string::npos);
  EXPECT_EQ(yaml_entries(out).at("cluster.nodes").text, "2");
}

TEST(YamlEdit, InsertsAMissingKeyUnderItsSectionAtItsIndentation) {
  const std::string out = set_yaml_value(kText, "cluster.network.nics_per_node", "4");
  EXPECT_NE(out.find("    topology: fat-tree\n    nics_per_node: 4\ntraining:"), std::string::npos)
      << out;
}

TEST(YamlEdit, CreatesMissingSections) {
  const std::string out = set_yaml_value(kText, "parallelism.tensor", "2");
  EXPECT_NE(out.find("parallelism:\n  tensor: 2\n"), std::string::npos) << out;
  EXPECT_EQ(yaml_entries(out).at("parallelism.tensor").text, "2");
  const std::string nested = set_yaml_value(kText, "failures.gpu_mtbf", "50000h");
  EXPECT_EQ(yaml_entries(nested).at("failures.gpu_mtbf").text, "50000h");
}

TEST(YamlEdit, RemovesAKeyWithItsLine) {
  const std::string out = set_yaml_value(kText, "cluster.nodes", "");
  EXPECT_EQ(out.find("nodes:"), std::string::npos);
  EXPECT_EQ(yaml_entries(out).count("cluster.nodes"), 0u);
  EXPECT_EQ(yaml_entries(out).at("cluster.gpu").text, "H100-SXM");
  const std::string whole = set_yaml_value(kText, "cluster.network", "");
  EXPECT_EQ(whole.find("topology"), std::string::npos) << whole;
  EXPECT_NE(whole.find("training:"), std::string::npos);
}

TEST(YamlEdit, RawYamlReplacesAFlowList) {
  const std::string out =
      set_yaml_value(kText, "stragglers", "[{ranks: [3], slowdown: 1.3}]", true);
  EXPECT_NE(out.find("stragglers: [{ranks: [3], slowdown: 1.3}]\n"), std::string::npos) << out;
  EXPECT_FALSE(yaml_entries(out).at("stragglers").scalar);
}

TEST(YamlEdit, QuotesScalarsYamlWouldReadOtherwise) {
  EXPECT_EQ(yaml_scalar("80GiB"), "80GiB");
  EXPECT_EQ(yaml_scalar("a: b"), "'a: b'");
  EXPECT_EQ(yaml_scalar("[x"), "'[x'");
  const std::string out = set_yaml_value(kText, "name", "my run: #1");
  EXPECT_EQ(yaml_entries(out).at("name").text, "my run: #1");
  EXPECT_EQ(yaml_entries(set_yaml_value(kText, "name", "[x")).at("name").text, "[x");
}

TEST(YamlEdit, ABlockMapBecomesAScalar) {
  const std::string out = set_yaml_value(kText, "cluster.network", "none");
  EXPECT_EQ(yaml_entries(out).at("cluster.network").text, "none");
  EXPECT_EQ(out.find("topology"), std::string::npos) << out;
}

TEST(YamlEdit, TextThatIsNotYamlIsRefused) {
  EXPECT_THROW(set_yaml_value("a: [1, 2\n", "a", "3"), YamlEditError);
  EXPECT_THROW(yaml_entries("a: {b\n"), YamlEditError);
  EXPECT_THROW(set_yaml_value(kText, "stragglers", "[1, ", true), YamlEditError);
}

TEST(YamlEdit, EntriesGiveLinesAndFlowText) {
  const auto entries = yaml_entries(kText);
  EXPECT_EQ(entries.at("cluster.nodes").line, 5);
  EXPECT_EQ(entries.at("stragglers").text, "[]");
  EXPECT_FALSE(entries.at("cluster").scalar);
}

}  // namespace
}  // namespace dtsim::gui
