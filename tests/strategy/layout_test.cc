// Rank placement (core/strategy/layout.h): the order in parallelism.order decides which ranks
// form each group, and so which groups stay inside a node.
#include <gtest/gtest.h>

#include "core/strategy/layout.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

RankLayout layout_for(const std::string& order) {
  const Scenario sc = load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 4, gpus_per_node: 8}\nmodel: {preset: gpt3-1.3b}\n"
      "parallelism: {tensor: 2, context: 2, pipeline: 2, order: " +
          order + "}\n",
      "layout.yaml");
  return rank_layout(sc.parallelism);  // data = 32 / (2 x 2 x 2) = 4
}

TEST(RankLayout, DefaultOrderKeepsTensorInnermostThenContextPipelineData) {
  const RankLayout l = layout_for("tp-cp-pp-dp");
  EXPECT_EQ(l.rank(1, 0, 0, 0), 1);
  EXPECT_EQ(l.rank(0, 1, 0, 0), 2);
  EXPECT_EQ(l.rank(0, 0, 1, 0), 4);
  EXPECT_EQ(l.rank(0, 0, 0, 1), 8);
  EXPECT_EQ(l.group(ParallelDim::kTensor, 0, 1, 1, 2), (std::vector<Rank>{22, 23}));
  EXPECT_EQ(l.group(ParallelDim::kData, 1, 0, 0, 0), (std::vector<Rank>{1, 9, 17, 25}));
}

TEST(RankLayout, AGivenOrderMovesDataParallelInsideTheNode) {
  const RankLayout l = layout_for("dp-tp-pp-cp");
  EXPECT_EQ(l.rank(0, 0, 0, 1), 1);   // data innermost: 4 replicas on consecutive GPUs
  EXPECT_EQ(l.rank(1, 0, 0, 0), 4);   // then tensor
  EXPECT_EQ(l.rank(0, 0, 1, 0), 8);   // then pipeline
  EXPECT_EQ(l.rank(0, 1, 0, 0), 16);  // context outermost
  EXPECT_EQ(l.group(ParallelDim::kData, 0, 0, 0, 0), (std::vector<Rank>{0, 1, 2, 3}));
  // The built job uses it: the data-parallel group of rank 0 is ranks 0-3.
  const auto plan = driver::plan_scenario(load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 4, gpus_per_node: 8}\nmodel: {preset: gpt3-1.3b}\n"
      "parallelism: {tensor: 2, context: 2, pipeline: 2, order: dp-tp-pp-cp}\n"
      "training: {global_batch_size: 8}\nsimulate: {engine: analytic}\n",
      "layout.yaml"));
  bool found = false;
  for (const auto& g : plan.job.groups)
    if (g.name == "dp" && g.ranks.front() == 0) {
      EXPECT_EQ(g.ranks, (std::vector<Rank>{0, 1, 2, 3, 16, 17, 18, 19}));  // d x cp
      found = true;
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace dtsim
