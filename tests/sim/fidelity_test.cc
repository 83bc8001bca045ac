// The SimGrid engine's fidelity choice (SimGridExecutor::body_for): the chunk-level flows of a
// whole run, counted once per collective on its group's first simulated member and once per
// distinct collective (a repeat reuses its count), refuse chunk fidelity beyond kMaxChunkFlows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

// One program whose collectives differ from each other in one field at a time (bytes, algorithm,
// kind), each repeated, and a second group's all-reduce: the refused count is the sum over every
// op, so a repeat reuses the right count and no two of them share one.
TEST(Fidelity, ChunkFlowCountSumsEveryCollectiveAndRepeatsReuseTheirCount) {
  const Cluster cluster = star_of(8);
  const std::vector<Rank> left = {0, 1, 2, 3}, right = {4, 5, 6, 7};
  const Bytes large(64.0 * (1 << 20)), small(1.0 * (1 << 20));
  Job job = concurrent_collectives({left, right}, large, 8);  // one ring all-reduce on each
  auto op = [](CollectiveKind kind, Bytes bytes, CollectiveAlgorithm algorithm) {
    return CollectiveOp{kind, 0, bytes, DType::kBf16, algorithm, 0};
  };
  const CollectiveOp tree_large = op(CollectiveKind::kAllReduce, large, CollectiveAlgorithm::kTree);
  const CollectiveOp tree_small = op(CollectiveKind::kAllReduce, small, CollectiveAlgorithm::kTree);
  const CollectiveOp ring_large = op(CollectiveKind::kAllReduce, large, CollectiveAlgorithm::kRing);
  const CollectiveOp scatter_large =
      op(CollectiveKind::kReduceScatter, large, CollectiveAlgorithm::kRing);
  Program& first = job.programs.front();
  const StreamId stream = 0;  // the "comm" stream concurrent_collectives made
  const Label label{"collective", -1, -1, Phase::kOther};
  for (int i = 0; i < 2; ++i) first.append(stream, tree_large, label);
  for (int i = 0; i < 3; ++i) first.append(stream, tree_small, label);
  for (int i = 0; i < 2; ++i) first.append(stream, scatter_large, label);

  // Neighbours in one field must differ in flows, or the test could not see a shared count.
  const double tl = chunk_flow_count(tree_large, left, cluster),
               ts = chunk_flow_count(tree_small, left, cluster),
               rl = chunk_flow_count(ring_large, left, cluster),
               sl = chunk_flow_count(scatter_large, left, cluster);
  ASSERT_NE(tl, ts) << "bytes";
  ASSERT_NE(tl, rl) << "algorithm";
  ASSERT_NE(rl, sl) << "kind";
  // Per iteration: the left group's ring all-reduce, 2 large and 3 small trees, 2 reduce-scatters;
  // the right group's ring all-reduce.
  const double per_iteration =
      rl + 2 * tl + 3 * ts + 2 * sl + chunk_flow_count(ring_large, right, cluster);

  const sim::SimGridExecutor chunk(sim::SimGridOptions{FidelitySetting::kChunk, DType::kBf16});
  const int below = static_cast<int>(std::floor(sim::kMaxChunkFlows / per_iteration));
  EXPECT_EQ(chunk.body_for(job, cluster, below), CollectiveBody::kChunkFlows);
  const int above = below + 1;
  try {
    chunk.body_for(job, cluster, above);
    ADD_FAILURE() << "chunk fidelity beyond the limit is refused";
  } catch (const InputError& e) {
    const std::string expected =
        std::to_string(static_cast<int64_t>(per_iteration * above)) + " flows";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what() << " should name " << expected;
  }
}

}  // namespace
}  // namespace dtsim::testing
