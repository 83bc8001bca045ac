// Ring collectives on SimGrid against the alpha-beta closed forms (reference.md), at both
// fidelities, on contention-free networks.
#include <gtest/gtest.h>

#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

double ring_all_reduce_formula(int n, double bytes, double alpha, double beta) {
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / beta;
}

class RingAllReduce : public ::testing::TestWithParam<int> {};

TEST_P(RingAllReduce, MatchesTheAlphaBetaFormula) {
  const int n = GetParam();
  const ClusterConfig c = star_of(n);
  for (double bytes : {8.0, 1048576.0, 1073741824.0}) {
    const Job job = concurrent_collectives({first_ranks(n)}, Bytes(bytes), n);
    const double expected = ring_all_reduce_formula(n, bytes, 2e-6, 25e9);
    EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected);
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << "bytes " << bytes;
    // Chunk level sends 2(N-1) x N messages; 1000 ranks would be 2 M of them, which is what the
    // collective level exists for.
    if (n <= 64) {
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << "bytes " << bytes;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingAllReduce, ::testing::Values(2, 3, 5, 8, 64, 1000));

TEST(RingCollectives, InsideOneNvSwitchNode) {
  // 8 H100 on NVSwitch: 450 GB/s per GPU and 0.6 us per hop.
  const ClusterConfig c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  const double alpha = c.intra_node.latency.value(), beta = c.intra_node.per_gpu_bandwidth.value();
  const double s = 1073741824.0;
  struct Case {
    CollectiveKind kind;
    double expected;
  };
  for (const Case& k : {Case{CollectiveKind::kAllReduce, 14 * alpha + 14.0 / 8 * s / beta},
                        Case{CollectiveKind::kAllGather, 7 * alpha + 7.0 / 8 * s / beta},
                        Case{CollectiveKind::kReduceScatter, 7 * alpha + 7.0 / 8 * s / beta},
                        Case{CollectiveKind::kBroadcast, 7 * alpha + s / beta},
                        Case{CollectiveKind::kAllToAll, 7 * alpha + 7.0 / 8 * s / beta}}) {
    const Job job = concurrent_collectives({first_ranks(8)}, Bytes(s), 8, k.kind);
    EXPECT_NEAR(analytic_time(job, c), k.expected, 1e-9 * k.expected) << to_string(k.kind);
    EXPECT_NEAR(simgrid_time(job, c, "chunk"), k.expected, 0.01 * k.expected) << to_string(k.kind);
    EXPECT_NEAR(simgrid_time(job, c, "collective"), k.expected, 0.01 * k.expected)
        << to_string(k.kind);
  }
}

TEST(RingCollectives, MultiNodeChannelsUseEveryNic) {
  // 4 nodes x 8 GPUs, 8 NICs each: the ring's bandwidth is the node's 8 NICs, not one.
  const ClusterConfig c = cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 4\n  gpus_per_node: 8\n  network: {preset: ib-ndr, "
      "protocol_efficiency: 1}\n");
  const double s = 1073741824.0, n = 32;
  const double beta = 8 * 50e9, alpha = c.network.latency.value();
  const double expected = 2 * (n - 1) * alpha + 2 * (n - 1) / n * s / beta;
  const Job job = concurrent_collectives({first_ranks(32)}, Bytes(s), 32);
  EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected);
  EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected);
  EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected);
}

}  // namespace
}  // namespace dtsim::testing

namespace dtsim::testing {
namespace {

// Every collective with its ring-family algorithm, N in {2, 3, 6, 8, 12, 64}, 8 B to 4 GiB, both
// fidelities, against the closed forms of docs/collectives.md (alpha 2 us, beta 25 GB/s).
class EveryCollective : public ::testing::TestWithParam<int> {};

TEST_P(EveryCollective, MatchesItsClosedForm) {
  const int n = GetParam();
  const ClusterConfig c = star_of(n);
  const double a = 2e-6, b = 25e9, k = n - 1.0;
  for (double s : {8.0 * n, 1048576.0 * n, 4294967296.0}) {
    const std::vector<std::pair<CollectiveKind, double>> cases = {
        {CollectiveKind::kAllReduce, 2 * k * a + 2 * k / n * s / b},
        {CollectiveKind::kAllGather, k * a + k / n * s / b},
        {CollectiveKind::kReduceScatter, k * a + k / n * s / b},
        {CollectiveKind::kBroadcast, k * a + s / b},
        {CollectiveKind::kReduce, k * a + s / b},
        {CollectiveKind::kAllToAll, k * a + k / n * s / b},
        {CollectiveKind::kBarrier, 2 * k * a}};
    for (const auto& [kind, expected] : cases) {
      const Job job = concurrent_collectives({first_ranks(n)}, Bytes(s), n, kind);
      EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << to_string(kind) << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected)
          << to_string(kind) << " " << s;
      EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected)
          << to_string(kind) << " " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, EveryCollective, ::testing::Values(2, 3, 6, 8, 12, 64));

}  // namespace
}  // namespace dtsim::testing
