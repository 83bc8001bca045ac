// Generated documentation must equal what the code renders, so docs cannot drift.
// To refresh after a schema or catalog change:
//   build/cli/dtsim catalog keys > docs/scenario-reference.md
//   build/cli/dtsim catalog hardware > docs/hardware.md
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/hardware/catalog.h"
#include "core/hardware/catalog_markdown.h"
#include "core/scenario/reference.h"

namespace dtsim {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(Docs, ScenarioReferenceMatchesTheSchema) {
  EXPECT_EQ(read(DTSIM_SOURCE_DIR "/docs/scenario-reference.md"),
            render_scenario_reference_markdown())
      << "regenerate with: build/cli/dtsim catalog keys > docs/scenario-reference.md";
}

TEST(Docs, HardwareCatalogMatchesTheCode) {
  EXPECT_EQ(read(DTSIM_SOURCE_DIR "/docs/hardware.md"), render_hardware_catalog_markdown())
      << "regenerate with: build/cli/dtsim catalog hardware > docs/hardware.md";
}

// Every catalog row shows its source in docs/hardware.md (as the table cell renders it).
TEST(Docs, HardwareCatalogShowsEverySource) {
  const std::string doc = read(DTSIM_SOURCE_DIR "/docs/hardware.md");
  auto shown = [&](const std::string& name, const std::string& source) {
    EXPECT_FALSE(source.empty()) << name;
    std::string cell;
    for (char c : source) cell += c == '|' ? std::string("\\|") : std::string(1, c);
    EXPECT_NE(doc.find("| " + name + " |"), std::string::npos) << name;
    EXPECT_NE(doc.find(cell + " |"), std::string::npos) << name;
  };
  for (const GpuSpec& g : gpu_catalog()) {
    shown(g.name, g.source);
    shown(g.name, g.efficiency_source);
  }
  for (const IntraNodeFabricSpec& f : fabric_catalog()) shown(f.name, f.source);
  for (const NetworkSpec& n : network_catalog()) shown(n.name, n.source);
}

TEST(Docs, EveryScenarioKeyIsDocumented) {
  const std::string ref = read(DTSIM_SOURCE_DIR "/docs/scenario-reference.md");
  for (const char* key :
       {"`cluster.gpu`", "`cluster.network.nic_bandwidth`", "`parallelism.tensor`",
        "`training.gradient_bucket`", "`simulate.engine`", "`stragglers`"})
    EXPECT_NE(ref.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace dtsim
