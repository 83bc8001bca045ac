// Ring collectives on SimGrid against the alpha-beta closed forms (docs/reference.md), at both
// fidelities, on contention-free networks.
#include <gtest/gtest.h>

#include <string>

#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

double ring_all_reduce_formula(int n, double bytes, double alpha, double beta) {
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / beta;
}

class RingAllReduce : public ::testing::TestWithParam<int> {};

TEST_P(RingAllReduce, MatchesTheAlphaBetaFormula) {
  const int n = GetParam();
  const Cluster c = star_of(n);
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
  // 8 H100 on NVSwitch: 450 GB/s per GPU at NCCL's NVLink efficiency 0.824 (18 x 20.6 GB/s) and
  // 0.6 us per hop.
  const Cluster c = cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n");
  const double alpha = c.intra_node.latency.value(), beta = c.intra_node.usable_bandwidth().value();
  EXPECT_NEAR(beta, 370.8e9, 1e3);
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
  // 4 nodes x 8 GPUs, 8 NICs each: the ring's bandwidth is the node's 8 NICs, not one. At half
  // the NDR line rate (25 GB/s each, 200 GB/s a node) the NICs, not NVLink (370.8 GB/s usable),
  // are the slowest hop.
  const Cluster c = cluster_from(
      "cluster:\n  gpu: H100-SXM\n  nodes: 4\n  gpus_per_node: 8\n  network: {preset: ib-ndr, "
      "protocol_efficiency: 0.5}\n");
  const double s = 1073741824.0, n = 32;
  // Each hop pays its own latency along the pipelined ring (cost_model.h ring_path_latency): the
  // worst window of 2(n-1) = 62 consecutive hops of a channel holds 2N = 8 network hops and 54
  // NVLink hops.
  const double beta = 8 * 25e9, alpha = c.network.latency.value(),
               alpha_nvlink = c.intra_node.latency.value();
  const double expected = 8 * alpha + 54 * alpha_nvlink + 2 * (n - 1) / n * s / beta;
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
  const Cluster c = star_of(n);
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

namespace dtsim::testing {
namespace {

// Transfers inside a node run at the fabric's usable bandwidth, line rate x protocol efficiency,
// which for NVLink and PCIe is the link figure NCCL's topology search counts (src/graph/topo.h
// SMxx_NVLINK_BW, topo.cc kvDictPciGen): a ring all-reduce's busbw at a large size is that figure,
// in the closed form and on SimGrid at both fidelities.
TEST(FabricEfficiency, RingBusBandwidthIsNcclsLinkFigure) {
  struct Case {
    const char* cluster;
    int n;
    double line_GBps;
    double efficiency;
  };
  for (const Case& k : {
           // 12 NVLink3 x 25 GB/s; NCCL: 12 x 20 = 240 GB/s.
           Case{"cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 8}\n", 8, 300, 0.80},
           // 18 NVLink4 x 25 GB/s; NCCL: 18 x 20.6 = 370.8 GB/s.
           Case{"cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n", 8, 450, 0.824},
           // PCIe Gen4 x16, 31.5 GB/s line; NCCL: 16 x 120 / 80 = 24 GB/s.
           Case{"cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 4, intra_node: pcie}\n", 4,
                31.5, 24 / 31.5},
           // An inline fabric states its own.
           Case{"cluster:\n  gpu: H100-SXM\n  nodes: 1\n  gpus_per_node: 4\n  intra_node: {kind: "
                "switch, bandwidth: 100GBps, latency: 1us, protocol_efficiency: 0.5}\n",
                4, 100, 0.5},
       }) {
    const Cluster c = cluster_from(k.cluster);
    EXPECT_NEAR(c.intra_node.protocol_efficiency, k.efficiency, 1e-3) << k.cluster;
    const double s = 4294967296.0;
    const Job job = concurrent_collectives({first_ranks(k.n)}, Bytes(s), k.n);
    const double factor = 2.0 * (k.n - 1) / k.n, expected_GBps = k.line_GBps * k.efficiency;
    for (const char* engine : {"analytic", "chunk", "collective"}) {
      const double t =
          std::string(engine) == "analytic" ? analytic_time(job, c) : simgrid_time(job, c, engine);
      EXPECT_NEAR(s / t * factor / 1e9, expected_GBps, 0.01 * expected_GBps) << k.cluster << engine;
    }
  }
}

}  // namespace
}  // namespace dtsim::testing
