// The MoE load factor (models/model_builder.h random_routing_load_factor): the expected maximum of
// standard normals against Tippett's table, the closed form against a Monte Carlo of uniformly
// random top-k routing written here independently, and where the factor lands in the graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

// Tippett (1925), "On the extreme individuals and the range of samples taken from a normal
// population", Biometrika 17, Table I (also Harter 1961): the mean of the largest of n standard
// normals; n = 2 is exactly 1 / sqrt(pi).
TEST(MoeRouting, ExpectedMaximumOfNormalsMatchesTippettsTable) {
  EXPECT_NEAR(expected_max_of_normals(2), 1 / std::sqrt(std::numbers::pi), 1e-9);
  EXPECT_NEAR(expected_max_of_normals(4), 1.02938, 1e-5);
  EXPECT_NEAR(expected_max_of_normals(8), 1.42360, 1e-5);
  EXPECT_NEAR(expected_max_of_normals(16), 1.76599, 1e-5);
  EXPECT_EQ(expected_max_of_normals(1), 0);
}

// Routes `tokens_per_rank x ep` tokens, each to top_k distinct experts drawn uniformly, counts
// what each rank's experts receive, and averages the busiest rank's count over the mean.
double monte_carlo_load(int tokens_per_rank, int experts, int top_k, int ep, int trials) {
  std::mt19937_64 rng(12345);
  std::vector<int> order(static_cast<size_t>(experts));
  double sum = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<double> per_rank(static_cast<size_t>(ep), 0);
    for (int token = 0; token < tokens_per_rank * ep; ++token) {
      for (int i = 0; i < experts; ++i) order[static_cast<size_t>(i)] = i;
      for (int i = 0; i < top_k; ++i) {  // a partial Fisher-Yates shuffle: top_k distinct picks
        std::uniform_int_distribution<int> pick(i, experts - 1);
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(pick(rng))]);
        per_rank[static_cast<size_t>(order[static_cast<size_t>(i)] / (experts / ep))] += 1;
      }
    }
    const double mean = static_cast<double>(tokens_per_rank) * top_k;
    sum += *std::max_element(per_rank.begin(), per_rank.end()) / mean;
  }
  return sum / trials;
}

TEST(MoeRouting, ClosedFormMatchesAMonteCarloOfRandomRouting) {
  struct Case {
    int tokens, experts, top_k, ep;
    double tolerance;  // of the excess over 1
  };
  // Mixtral 8x7B's layout (4096 tokens, top-2 of 8, one expert per rank), two experts per rank,
  // and a fine-grained top-8 of 64 over 16 ranks. Measured agreement: 0.4%, 0.1% and 3.4% of
  // the excess; 400 trials sample it to about 1.5%, and the skew of the hypergeometric share
  // (4 of 64 experts) is what the normal approximation leaves out in the third.
  for (const Case c :
       {Case{4096, 8, 2, 8, 0.03}, Case{2048, 16, 2, 8, 0.03}, Case{1024, 64, 8, 16, 0.06}}) {
    SCOPED_TRACE(std::to_string(c.tokens) + " tokens, top-" + std::to_string(c.top_k) + " of " +
                 std::to_string(c.experts) + ", ep " + std::to_string(c.ep));
    const double closed = random_routing_load_factor(c.tokens, c.experts, c.top_k, c.ep);
    const double sampled = monte_carlo_load(c.tokens, c.experts, c.top_k, c.ep, 400);
    EXPECT_GT(closed, 1.005);
    EXPECT_NEAR(closed - 1, sampled - 1, c.tolerance * (sampled - 1));
  }
}

TEST(MoeRouting, NoImbalanceWithoutExpertParallelismOrWhenEveryExpertIsPicked) {
  EXPECT_EQ(random_routing_load_factor(4096, 8, 2, 1), 1);
  EXPECT_EQ(random_routing_load_factor(4096, 8, 8, 8), 1);
  // More tokens spread relatively less: the excess falls as 1 / sqrt(tokens).
  const double few = random_routing_load_factor(1024, 8, 2, 8) - 1;
  const double many = random_routing_load_factor(4096, 8, 2, 8) - 1;
  EXPECT_NEAR(few / many, 2.0, 1e-9);
}

ModelSpec mixtral() {
  ModelSpec spec = *find_preset("mixtral-8x7b");
  spec.num_layers = 2;
  return spec;
}

// The kernels between the dispatch and combine all-to-alls, forward and backward, carry the
// factor; the attention, the router and the token permutation (each rank's own tokens) do not,
// and neither do FLOPs: model FLOPs are those of the mean rank.
TEST(MoeRouting, OnlyTheExpertKernelsCarryTheLoadFactor) {
  BuildOptions options;
  options.expert_parallel = 8;
  const ModelGraph g = build_model(mixtral(), options);
  const double expected = random_routing_load_factor(4096, 8, 2, 8);
  const Layer* block = testing::find_layer(g, "block.0");
  ASSERT_NE(block, nullptr);
  int loaded = 0;
  for (const auto* list : {&block->forward, &block->backward})
    for (const Kernel& k : *list) {
      SCOPED_TRACE(k.name);
      const bool expert = k.name.rfind("expert_gate", 0) == 0 ||
                          k.name.rfind("expert_up", 0) == 0 ||
                          k.name.rfind("expert_down", 0) == 0 || k.name.rfind("swiglu", 0) == 0;
      EXPECT_EQ(k.load_factor, expert ? expected : 1.0);
      loaded += expert;
    }
  EXPECT_EQ(loaded, 9 + 2);  // 3 matrices x (forward, dgrad, wgrad), swiglu and its backward

  BuildOptions balanced = options;
  balanced.moe_load_imbalance = 1.0;
  const ModelGraph even = build_model(mixtral(), balanced);
  EXPECT_DOUBLE_EQ(g.model_flops_per_micro_batch().value(),
                   even.model_flops_per_micro_batch().value());

  BuildOptions given = options;
  given.moe_load_imbalance = 1.25;
  const ModelGraph heavy = build_model(mixtral(), given);
  int gates = 0;
  for (const Kernel& k : testing::find_layer(heavy, "block.0")->forward) {
    if (k.name != "expert_gate") continue;
    EXPECT_EQ(k.load_factor, 1.25);
    ++gates;
  }
  EXPECT_EQ(gates, 1);
}

}  // namespace
}  // namespace dtsim::models
