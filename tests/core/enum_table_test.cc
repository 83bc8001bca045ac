// One name table per enum (core/base/enum_table.h): each name parses back to its value, no name
// appears twice, and the scenario schema's choices are the tables' names.
#include "core/base/enum_table.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "core/collectives/nccl_model.h"
#include "core/ir/program.h"
#include "core/scenario/scenario.h"
#include "models/model_spec.h"

namespace dtsim {
namespace {

template <class E, size_t N>
void expect_round_trip(const EnumTable<E, N>& table) {
  std::set<std::string_view> names;
  std::set<E> values;
  for (const auto& [value, name] : table) {
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_TRUE(values.insert(value).second) << name << ": its value is listed twice";
    EXPECT_EQ(table.to_string(value), name);
    EXPECT_EQ(table.parse(name), value) << name;
  }
  EXPECT_FALSE(table.parse("no-such-name").has_value());
  EXPECT_THROW(table.from_valid("no-such-name"), std::logic_error);
}

TEST(EnumTable, EveryNameParsesBackToItsValue) {
  expect_round_trip(kDTypeNames);
  expect_round_trip(kFabricKindNames);
  expect_round_trip(kNetworkKindNames);
  expect_round_trip(kTopologyNames);
  expect_round_trip(kScheduleNames);
  expect_round_trip(kRecomputeNames);
  expect_round_trip(kOptimizerNames);
  expect_round_trip(kParallelDimNames);
  expect_round_trip(kPhaseNames);
  expect_round_trip(kCollectiveKindNames);
  expect_round_trip(kCollectiveAlgorithmNames);
  expect_round_trip(kCollectiveProtocolNames);
  expect_round_trip(kMemoryCategoryNames);
  expect_round_trip(kNcclAlgorithmNames);
  expect_round_trip(kNcclProtocolNames);
  expect_round_trip(kValueTypeNames);
  expect_round_trip(models::kModelFamilyNames);
  expect_round_trip(models::kActivationNames);
}

TEST(EnumTable, AValueMissingFromItsTableIsAProgrammerError) {
  constexpr auto partial = make_enum_table<DType>({{DType::kFp32, "fp32"}});
  EXPECT_THROW(partial.to_string(DType::kBf16), std::logic_error);
}

TEST(EnumTable, TheSchemaChoicesAreTheTablesNames) {
  const SchemaNode& root = scenario_schema();
  auto choices = [&](const std::string& path) {
    const SchemaNode* node = find_schema_node(root, path);
    return node ? node->choices : std::vector<std::string>{"missing " + path};
  };
  EXPECT_EQ(choices("cluster.intra_node.kind"), kFabricKindNames.names());
  EXPECT_EQ(choices("cluster.network.kind"), kNetworkKindNames.names());
  EXPECT_EQ(choices("cluster.network.topology"), kTopologyNames.names());
  EXPECT_EQ(choices("parallelism.schedule"), kScheduleNames.names());
  EXPECT_EQ(choices("training.precision"), kDTypeNames.names());
  EXPECT_EQ(choices("training.recompute"), kRecomputeNames.names());
  EXPECT_EQ(choices("training.optimizer"), kOptimizerNames.names());
  EXPECT_EQ(choices("model.family"), models::kModelFamilyNames.names());
}

// Each default the binder reads from the schema parses to a value of the key's type.
TEST(SchemaDefaults, ParseWithTheInputsOwnRules) {
  const SchemaNode& root = scenario_schema();
  auto value = [&](const std::string& path) {
    return default_value(*find_schema_node(root, path));
  };
  EXPECT_EQ(std::get<Bytes>(*value("training.gradient_bucket")).value(), 25.0 * 1024 * 1024);
  EXPECT_EQ(std::get<Seconds>(*value("cluster.intra_node.latency")).value(), 1e-6);
  EXPECT_EQ(std::get<int64_t>(*value("cluster.gpus_per_node")), 8);
  EXPECT_EQ(std::get<bool>(*value("training.overlap_grad_reduce")), true);
  EXPECT_EQ(std::get<double>(*value("cluster.network.oversubscription")), 1.0);
  EXPECT_EQ(std::get<std::string>(*value("parallelism.schedule")), "1f1b");
  EXPECT_FALSE(value("cluster.network.nic_bandwidth").has_value());  // "from preset"
  EXPECT_FALSE(value("cluster.network.nics_per_node").has_value());  // "gpus_per_node"
}

}  // namespace
}  // namespace dtsim
