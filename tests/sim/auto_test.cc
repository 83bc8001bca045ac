// Algorithm auto against every way NCCL could run an all-reduce that dtsim builds, and a ring over
// a group that ends part-way through a node against the NICs its GPUs reach.
#include <gtest/gtest.h>

#include <cmath>

#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

// 4 nodes of 8 A100 with 4 HDR NICs each (the system of the report that auto picked ring/Simple at
// 64 MiB while ring/LL128 was faster under dtsim's own timing).
Cluster a100_hdr() {
  return cluster_from(
      "cluster:\n  gpu: A100-SXM-80GB\n  nodes: 4\n  gpus_per_node: 8\n"
      "  network: {preset: ib-hdr, nics_per_node: 4}\n");
}

double closed_form(CollectiveAlgorithm algorithm, CollectiveProtocol protocol, double bytes,
                   const std::vector<Rank>& ranks, const Cluster& c) {
  CollectiveOp op{
      CollectiveKind::kAllReduce, 0, Bytes(bytes), DType::kBf16, algorithm, 0, protocol};
  return collective_time(op, ranks, c).value();
}

TEST(Auto, NeverSlowerThanARingProtocolOrNvlsItCouldRun) {
  struct System {
    const char* name;
    Cluster cluster;
    int ranks;
  };
  const System systems[] = {
      {"8 H100", cluster_from("cluster: {gpu: H100-SXM, nodes: 1, gpus_per_node: 8}\n"), 8},
      {"2 x 8 H100 NDR",
       cluster_from("cluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n"
                    "  network: {preset: ib-ndr}\n"),
       16},
      {"4 x 8 A100 4 HDR", a100_hdr(), 32}};
  for (const auto& sys : systems) {
    const auto ranks = first_ranks(sys.ranks);
    double previous_algbw = 0;
    for (double s = 1024; s <= 1073741824.0; s *= 2) {
      const double t =
          closed_form(CollectiveAlgorithm::kAuto, CollectiveProtocol::kAuto, s, ranks, sys.cluster);
      for (auto p :
           {CollectiveProtocol::kLL, CollectiveProtocol::kLL128, CollectiveProtocol::kSimple})
        EXPECT_LE(t,
                  closed_form(CollectiveAlgorithm::kRing, p, s, ranks, sys.cluster) * (1 + 1e-12))
            << sys.name << " " << s << " ring/" << to_string(p);
      if (sys.ranks <= 8) {
        EXPECT_LE(t, closed_form(CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto, s, ranks,
                                 sys.cluster) *
                         (1 + 1e-12))
            << sys.name << " " << s << " nvls";
      }
      // The minimum of affine costs with positive latency: algbw never falls as the size doubles.
      const double algbw = s / t;
      EXPECT_GE(algbw, previous_algbw * (1 - 1e-9)) << sys.name << " " << s;
      previous_algbw = algbw;
    }
  }
  // The report's case, 64 MiB on 4 x 8 A100 with 4 HDR NICs: auto runs what NCCL's model picks
  // (Ring/Simple), never slower than the tree under any protocol.
  const Cluster c = a100_hdr();
  CollectiveOp op{CollectiveKind::kAllReduce, 0, Bytes(67108864.0), DType::kBf16,
                  CollectiveAlgorithm::kAuto, 0};
  const ResolvedCollective r = resolve_collective(op, first_ranks(32), c);
  const auto nccl = nccl_reference_choice(op, first_ranks(32), c);
  ASSERT_TRUE(nccl.has_value());
  EXPECT_EQ(r.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(nccl->algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(r.protocol, CollectiveProtocol::kSimple);
  EXPECT_EQ(nccl->protocol, NcclProtocol::kSimple);
  for (auto p : {CollectiveProtocol::kLL, CollectiveProtocol::kLL128, CollectiveProtocol::kSimple})
    EXPECT_LE(
        collective_time(op, first_ranks(32), c).value(),
        closed_form(CollectiveAlgorithm::kTree, p, 67108864.0, first_ranks(32), c) * (1 + 1e-12))
        << to_string(p);
}

TEST(Auto, SimGridRunsWhatTheClosedFormChose) {
  // Auto's choice is made once, by the closed form; the SimGrid engine runs that choice and, with
  // no contention, agrees with its closed form.
  const Cluster c = a100_hdr();
  for (double s : {1048576.0, 67108864.0}) {
    const Job job = concurrent_collectives({first_ranks(32)}, Bytes(s), 32,
                                           CollectiveKind::kAllReduce, CollectiveAlgorithm::kAuto);
    const double expected = analytic_time(job, c);
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.02 * expected) << s;
  }
}

TEST(Ring, PartialNodeGroupDrivesTheNicsItsGpusReach) {
  // 12 ranks on 8-GPU nodes: 8 on node 0, 4 on node 1. NCCL's channels leave each node through
  // different GPUs and so different NICs: with one NIC per GPU the 4 GPUs of node 1 reach 4 NICs;
  // with one NIC per GPU pair (4 per node) they reach 2. The ring's bandwidth across nodes is that
  // many NICs, not one.
  struct Case {
    const char* network;
    double nics;
  };
  for (const Case& k : {Case{"{preset: ib-ndr, nics_per_node: 8}", 4.0},
                        Case{"{preset: ib-ndr, nics_per_node: 4}", 2.0}}) {
    const Cluster c = cluster_from(
        "cluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n"
        "  network: " +
        std::string(k.network) + "\n");
    const auto ranks = first_ranks(12);
    EXPECT_DOUBLE_EQ(ring_nic_count(ranks, c), k.nics) << k.network;
    const double s = 268435456.0;
    const double beta =
        std::min(c.usable_nic_bandwidth().value() * k.nics, c.usable_fabric_bandwidth().value());
    // Each hop pays its own latency (cost_model.h ring_path_latency): a channel's ring has 2
    // network hops and 10 NVLink hops, and its worst window of 22 consecutive hops 4 and 18.
    const double expected = 4 * c.network.latency.value() + 18 * c.intra_node.latency.value() +
                            2.0 * 11 / 12 * s / beta;
    const Job job = concurrent_collectives({ranks}, Bytes(s), 16);
    EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << k.network;
    EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << k.network;
    EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << k.network;
  }
}

}  // namespace
}  // namespace dtsim::testing
