// NCCL's cost model (core/collectives/nccl_model.h) against the hand computations of
// docs/evidence/nccl-tuning-model.md, sections 4 and 5, which were made from NCCL's source.
#include "core/collectives/nccl_model.h"

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/scenario/scenario.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim {
namespace {

Cluster cluster(const std::string& yaml) {
  return Cluster(load_scenario_text(yaml + "model: {preset: unused}\n", "nccl.yaml").cluster);
}

double busbw(const NcclEstimate& e, double bytes, int n) {
  return bytes / (e.time_us * 1e3) * 2.0 * (n - 1) / n;
}

constexpr double kGiB = 1073741824.0;

TEST(NcclModel, EightH100ChoicesFollowNcclsModel) {
  const NcclSystem s =
      nccl_system(cluster("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"), 8);
  EXPECT_EQ(s.ring.channels, 12);
  EXPECT_DOUBLE_EQ(s.ring.bw_intra_GBps, 30);
  ASSERT_TRUE(s.nvls.has_value());
  EXPECT_DOUBLE_EQ(s.nvls->bw_intra_GBps, 40);
  EXPECT_DOUBLE_EQ(s.nvls->bw_inter_GBps, 60);
  struct Case {
    double bytes;
    NcclAlgorithm algorithm;
    NcclProtocol protocol;
    double time_us;
  };
  for (const Case& c : {Case{1024, NcclAlgorithm::kRing, NcclProtocol::kLL, 15.01},
                        Case{1048576, NcclAlgorithm::kRing, NcclProtocol::kLL, 28.01},
                        Case{kGiB, NcclAlgorithm::kNvls, NcclProtocol::kSimple, 3973}}) {
    const NcclEstimate e = nccl_all_reduce_choice(s, c.bytes);
    EXPECT_EQ(e.algorithm, c.algorithm) << c.bytes;
    EXPECT_EQ(e.protocol, c.protocol) << c.bytes;
    EXPECT_NEAR(e.time_us, c.time_us, 0.002 * c.time_us) << c.bytes;
  }
  // Every other candidate at 1 MiB, from the note's table: Ring LL128 46.14, Ring Simple 61.10,
  // Tree LL 63.32, Tree LL128 45.07, Tree Simple 77.06, NVLS 28.86 (us).
  const std::vector<double> expected{28.01, 63.32, 46.14, 45.07, 61.10, 77.06, 28.86};
  const auto all = nccl_all_reduce_estimates(s, 1048576);
  ASSERT_EQ(all.size(), expected.size());
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_NEAR(all[i].time_us, expected[i], 0.005 * expected[i])
        << to_string(all[i].algorithm) << "/" << to_string(all[i].protocol);
}

TEST(NcclModel, BusBandwidthPredictions) {
  struct Case {
    std::string yaml;
    int ranks;
    double bytes;
    NcclAlgorithm algorithm;
    double busbw;
  };
  const std::string a100 = "cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 8}\n";
  const std::string h100 = "cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n";
  const std::string h100x2 =
      "cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr}}\n";
  const std::string h100x16 =
      "cluster: {gpu: H100-SXM, nodes: 16, gpus_per_node: 8, network: {preset: ib-ndr}}\n";
  const std::string a100hdr =
      "cluster: {gpu: A100-SXM-80GB, nodes: 2, gpus_per_node: 8, network: {preset: ib-hdr, "
      "nics_per_node: 4}}\n";
  for (const Case& c : {Case{a100, 8, kGiB, NcclAlgorithm::kRing, 238.3},
                        Case{a100, 8, 8 * kGiB, NcclAlgorithm::kRing, 239.8},
                        Case{h100, 8, kGiB, NcclAlgorithm::kNvls, 473.0},
                        Case{h100, 8, 8 * kGiB, NcclAlgorithm::kNvls, 475.6},
                        Case{h100x2, 16, kGiB, NcclAlgorithm::kNvlsTree, 454.6},
                        Case{h100x2, 16, 8 * kGiB, NcclAlgorithm::kNvlsTree, 460.7},
                        Case{h100x16, 128, kGiB, NcclAlgorithm::kNvlsTree, 352.4},
                        Case{h100x16, 128, 8 * kGiB, NcclAlgorithm::kRing, 370.1},
                        Case{a100hdr, 16, kGiB, NcclAlgorithm::kRing, 95.2},
                        Case{a100hdr, 16, 8 * kGiB, NcclAlgorithm::kRing, 95.9}}) {
    const NcclSystem s = nccl_system(cluster(c.yaml), c.ranks);
    const NcclEstimate e = nccl_all_reduce_choice(s, c.bytes);
    EXPECT_EQ(e.algorithm, c.algorithm) << c.yaml << c.bytes;
    EXPECT_NEAR(busbw(e, c.bytes, c.ranks), c.busbw, 0.005 * c.busbw) << c.yaml << c.bytes;
  }
}

TEST(NcclModel, BaseLatenciesAndRingProtocolCaps) {
  // ncclTunerConstantsDefaults baseLat (note section 1): Ring 6.6 / 14 / 8.4, Tree 6.8 / 14 / 8.4,
  // NVLS 0; llMaxBw 141 (one Hopper node), 87.7 (one Ampere node); LL128 12 x 36.7 on one H100
  // node.
  EXPECT_DOUBLE_EQ(nccl_base_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL), 6.6);
  EXPECT_DOUBLE_EQ(nccl_base_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL128), 14.0);
  EXPECT_DOUBLE_EQ(nccl_base_latency_us(NcclAlgorithm::kRing, NcclProtocol::kSimple), 8.4);
  EXPECT_DOUBLE_EQ(nccl_base_latency_us(NcclAlgorithm::kTree, NcclProtocol::kLL), 6.8);
  EXPECT_DOUBLE_EQ(nccl_base_latency_us(NcclAlgorithm::kNvls, NcclProtocol::kSimple), 0);
  const NcclSystem h100 =
      nccl_system(cluster("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"), 8);
  EXPECT_DOUBLE_EQ(nccl_ring_bus_bandwidth_cap_GBps(h100, NcclProtocol::kLL), 141);
  EXPECT_NEAR(nccl_ring_bus_bandwidth_cap_GBps(h100, NcclProtocol::kLL128), 440.4, 1e-9);
  EXPECT_TRUE(std::isinf(nccl_ring_bus_bandwidth_cap_GBps(h100, NcclProtocol::kSimple)));
  const NcclSystem a100 =
      nccl_system(cluster("cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 8}\n"), 8);
  EXPECT_DOUBLE_EQ(nccl_ring_bus_bandwidth_cap_GBps(a100, NcclProtocol::kLL), 87.7);
}

TEST(NcclModel, TreeAndNvlsTreeTermsFollowNcclsConstants) {
  // hwLat (src/tuning/cost_model.cc ncclTunerConstantsDefaults): the tree 0.6 / 1.25 / 4.0 on
  // NVLink, 5.0 / 8.5 / 14 on the network; NVLS 25 on NVLink, NVLS-tree 20.9 on the network.
  EXPECT_DOUBLE_EQ(
      nccl_hw_latency_us(NcclAlgorithm::kTree, NcclProtocol::kLL128, NcclLink::kNvlink), 1.25);
  EXPECT_DOUBLE_EQ(nccl_hw_latency_us(NcclAlgorithm::kTree, NcclProtocol::kLL, NcclLink::kNet),
                   5.0);
  EXPECT_DOUBLE_EQ(nccl_hw_latency_us(NcclAlgorithm::kRing, NcclProtocol::kLL, NcclLink::kNet),
                   2.7);
  EXPECT_DOUBLE_EQ(
      nccl_hw_latency_us(NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple, NcclLink::kNet), 20.9);
  EXPECT_DOUBLE_EQ(
      nccl_hw_latency_us(NcclAlgorithm::kNvls, NcclProtocol::kSimple, NcclLink::kNvlink), 25);
  // Protocol factors (src/tuning/tree.cc): LL 1 / 3.8, LL128 7/9 on one node and 120/128 across.
  EXPECT_DOUBLE_EQ(nccl_tree_bandwidth_factor(1, NcclProtocol::kLL128), 7.0 / 9.0);
  EXPECT_DOUBLE_EQ(nccl_tree_bandwidth_factor(4, NcclProtocol::kLL128), 120.0 / 128.0);
  // 16 nodes of 8 H100, 8 NDR NICs: tree channels 8, perChMaxTreeBw 36 (4+ nodes), LL128 at most
  // 8 x 29; NVLS-tree 8 channels x 45.5. treeCorrectionFactor[LL128][log2(1 MiB / 64) = 14] = 0.6.
  const NcclSystem h100 = nccl_system(
      cluster("cluster: {gpu: H100-SXM, nodes: 16, gpus_per_node: 8, network: {preset: ib-ndr}}\n"),
      128);
  EXPECT_NEAR(nccl_tree_bus_bandwidth_cap_GBps(h100, NcclProtocol::kSimple), 8 * 36.0, 1e-9);
  EXPECT_NEAR(nccl_tree_bus_bandwidth_cap_GBps(h100, NcclProtocol::kLL128), 8 * 29.0, 1e-9);
  // LL: 8 x 36 / 3.8 = 75.8, at most llMaxBw on 4+ nodes of Intel hosts, 20.4.
  EXPECT_NEAR(nccl_tree_bus_bandwidth_cap_GBps(h100, NcclProtocol::kLL), 20.4, 1e-9);
  EXPECT_NEAR(nccl_nvls_tree_bus_bandwidth_cap_GBps(h100), 8 * 45.5, 1e-9);
  EXPECT_DOUBLE_EQ(nccl_tree_correction_factor(NcclProtocol::kLL128, 1048576.0), 0.6);
  EXPECT_DOUBLE_EQ(nccl_tree_correction_factor(NcclProtocol::kSimple, 4 * kGiB), 1.0);
  // NCCL's Tree/LL at 1 KiB there: 6.8 + 2 (7 x 0.6 + 4 x 5.0) us plus the bytes.
  for (const auto& e : nccl_all_reduce_estimates(h100, 1024))
    if (e.algorithm == NcclAlgorithm::kTree && e.protocol == NcclProtocol::kLL) {
      EXPECT_NEAR(e.latency_us, 6.8 + 2 * (7 * 0.6 + 4 * 5.0), 1e-9);
    }
  const NcclSystem one =
      nccl_system(cluster("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"), 8);
  EXPECT_EQ(nccl_nvls_tree_bus_bandwidth_cap_GBps(one), 0);
}

TEST(NcclModel, OtherSystemsAreRefusedNotGuessed) {
  EXPECT_THROW(
      nccl_system(cluster("cluster: {gpu: V100-SXM2-32GB, nodes: 1, gpus_per_node: 8}\n"), 8),
      InputError);
}

// No algorithm is faster than physics: an all-reduce over m nodes sends at least 2(m-1)/m of the
// buffer out of each node (reduced inside the node first, at best), so neither NCCL's pick nor
// dtsim's own auto may take less than that over the node's NICs' line rate. On 64 nodes of one H100 with one 400 Gb/s
// NIC, NCCL's model once offered NVLS-tree at 6.1 ms for 1 GiB (the bound: 42.3 ms); NCCL turns
// NVLS off with one GPU of the communicator a node (src/transport/nvls.cc, ncclNvlsInit).
TEST(NcclModel, NoChoiceBeatsTheNicBound) {
  for (int gpus_per_node : {1, 8}) {
    const Cluster c = cluster("cluster: {gpu: H100-SXM, nodes: 64, gpus_per_node: " +
                              std::to_string(gpus_per_node) +
                              ", network: {preset: ib-ndr, nics_per_node: " +
                              std::to_string(gpus_per_node) + ", nic_bandwidth: 400Gbps}}\n");
    std::vector<Rank> ranks;
    for (int r = 0; r < c.total_gpus(); ++r) ranks.push_back(r);
    const double m = c.nodes;
    const double node_rate = c.nics() * c.network.nic_bandwidth.value();
    for (double bytes = 1048576.0; bytes <= kGiB; bytes *= 32) {
      const double bound = 2 * (m - 1) / m * bytes / node_rate;
      const CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(bytes), DType::kBf16,
                            CollectiveAlgorithm::kAuto, 0};
      const auto nccl = nccl_reference_choice(op, ranks, c);
      ASSERT_TRUE(nccl.has_value());
      EXPECT_GE(nccl->time_us * 1e-6, bound)
          << gpus_per_node << " GPU(s) a node, " << bytes << " B: NCCL's pick "
          << to_string(nccl->algorithm);
      EXPECT_GE(collective_time(op, ranks, c).value(), bound)
          << gpus_per_node << " GPU(s) a node, " << bytes << " B: dtsim's auto";
      if (gpus_per_node == 1) {
        EXPECT_NE(nccl->algorithm, NcclAlgorithm::kNvlsTree);
      }
    }
  }
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// NCCL's PAT row for all-gather and reduce-scatter (src/graph/tuning.cc v2.30): only at one GPU per
// node, Simple, latency 8 + log2i(nodes) x 14 / 3.5 + 2.8 n us, busBw = the tree graph's channels x
// bandwidth x 0.75 with no bus-to-algorithm conversion; CollNet-direct's latency 2 (min(1, ppn - 1)
// x 3.7 + (ppn - 1) x 0.4) + 31 us.
TEST(NcclModel, PatAndCollNetTermsFollowNcclsConstants) {
  const NcclSystem one_gpu_nodes = nccl_system(
      cluster("cluster: {gpu: H100-SXM, nodes: 16, gpus_per_node: 1, network: {preset: ib-ndr}}\n"),
      16);
  int pats = 0;
  for (const auto& e : nccl_gather_scatter_estimates(one_gpu_nodes, 1048576.0)) {
    if (e.algorithm != NcclAlgorithm::kPat) continue;
    ++pats;
    EXPECT_EQ(e.protocol, NcclProtocol::kSimple);
    EXPECT_NEAR(e.latency_us, 8 + 4 * 14 / 3.5 + 2.8 * 16, 1e-9);
    EXPECT_NEAR(e.algbw_GBps, one_gpu_nodes.tree.channels * one_gpu_nodes.tree.bw_inter_GBps * 0.75,
                1e-9);
  }
  EXPECT_EQ(pats, 1);
  const NcclSystem eight_gpu_nodes = nccl_system(
      cluster("cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr}}\n"),
      16);
  for (const auto& e : nccl_gather_scatter_estimates(eight_gpu_nodes, 1048576.0))
    EXPECT_NE(e.algorithm, NcclAlgorithm::kPat);
  EXPECT_NEAR(nccl_base_latency_us(NcclAlgorithm::kPat, NcclProtocol::kSimple), 8.0, 1e-12);
  EXPECT_NEAR(nccl_collnet_direct_latency_us(8), 2 * (3.7 + 7 * 0.4) + 31, 1e-12);
  EXPECT_NEAR(nccl_collnet_direct_latency_us(1), 14, 1e-12);
}

}  // namespace
}  // namespace dtsim
