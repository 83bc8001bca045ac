// dtsim's closed forms against NCCL's own cost model (core/collectives/nccl_model.h) for
// all-reduce, all-gather and reduce-scatter on 1-16 nodes of 8 H100 (8 NDR NICs) and 8 A100 (8 HDR
// NICs), 1 KiB to 1 GiB: the table of docs/validation.md section 2 ("By collective"). The closed
// form is what the SimGrid engine reproduces within 1% on these contention-free systems
// (collective_formula_test.cc, tree_test.cc, auto_test.cc).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "tests/sim/sim_fixtures.h"

namespace dtsim::testing {
namespace {

struct Row {
  const char* gpu;
  const char* network;
};

CollectiveAlgorithm dtsim_algorithm(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::kRing:
      return CollectiveAlgorithm::kRing;
    case NcclAlgorithm::kTree:
      return CollectiveAlgorithm::kTree;
    case NcclAlgorithm::kNvls:
      return CollectiveAlgorithm::kNvls;
    case NcclAlgorithm::kNvlsTree:
      return CollectiveAlgorithm::kNvlsTree;
    case NcclAlgorithm::kPat:
      return CollectiveAlgorithm::kPat;
  }
  return CollectiveAlgorithm::kAuto;
}

// For every system, collective and size: NCCL's ring (its fastest protocol) against dtsim's ring
// run as NCCL would (`--algorithm ring`: its fastest protocol with NCCL's per-call terms), within
// 10%; auto runs NCCL's pick (algorithm and protocol: the ring, the tree under LL / LL128 / Simple,
// NVLS, NVLS-tree) within 10% (NVLS-tree 15%). Prints the table docs/validation.md shows.
TEST(NcclAgreement, RingAndAutoAgainstNcclsModelOnH100AndA100) {
  const Row rows[] = {{"H100-SXM", "ib-ndr"}, {"A100-SXM-80GB", "ib-hdr"}};
  const CollectiveKind kinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                  CollectiveKind::kReduceScatter};
  std::printf(
      "| GPUs | nodes | collective | size | NCCL ring us | dtsim ring us | ring | NCCL pick |"
      " dtsim auto | auto / NCCL |\n");
  for (const Row& row : rows)
    for (int nodes : {1, 2, 4, 8, 16}) {
      const Cluster c = cluster_from(
          std::string("cluster: {gpu: ") + row.gpu + ", nodes: " + std::to_string(nodes) +
          ", gpus_per_node: 8, network: {preset: " + row.network + ", nics_per_node: 8}}\n");
      const auto ranks = first_ranks(8 * nodes);
      const NcclSystem system = nccl_system(c, 8 * nodes);
      for (CollectiveKind kind : kinds)
        for (double s : {1024.0, 1048576.0, 67108864.0, 1073741824.0}) {
          const auto all = kind == CollectiveKind::kAllReduce
                               ? nccl_all_reduce_estimates(system, s)
                               : nccl_gather_scatter_estimates(system, s);
          double nccl_ring = 0;
          NcclEstimate pick = all.front();
          for (const auto& e : all) {
            if (e.algorithm == NcclAlgorithm::kRing && (nccl_ring == 0 || e.time_us < nccl_ring))
              nccl_ring = e.time_us;
            if (e.time_us < pick.time_us) pick = e;
          }
          CollectiveOp op{kind, 0, Bytes(s), DType::kBf16, CollectiveAlgorithm::kRing, 0};
          op.protocol = CollectiveProtocol::kFastest;
          const double ring_us = collective_time(op, ranks, c).value() * 1e6;
          op.algorithm = CollectiveAlgorithm::kAuto;
          op.protocol = CollectiveProtocol::kAuto;
          const ResolvedCollective chosen = resolve_collective(op, ranks, c);
          const double auto_us = collective_time(op, ranks, c).value() * 1e6;
          const bool built = dtsim_algorithm(pick.algorithm) != CollectiveAlgorithm::kAuto;
          std::printf(
              "| %s | %d | %s | %.0f | %.1f | %.1f | %+.0f%% | %s/%s %.1f | %s/%s %.1f | %s |\n",
              row.gpu, nodes, std::string(to_string(kind)).c_str(), s, nccl_ring, ring_us,
              100 * (ring_us / nccl_ring - 1), std::string(to_string(pick.algorithm)).c_str(),
              std::string(to_string(pick.protocol)).c_str(), pick.time_us,
              std::string(to_string(chosen.algorithm)).c_str(),
              std::string(to_string(chosen.protocol)).c_str(), auto_us,
              built ? (std::to_string(static_cast<int>(100 * (auto_us / pick.time_us - 1))) + "%")
                          .c_str()
                    : "not built");
          const std::string where = std::string(row.gpu) + " " + std::to_string(nodes) + " " +
                                    std::string(to_string(kind)) + " " + std::to_string(s);
          EXPECT_NEAR(ring_us, nccl_ring, 0.1 * nccl_ring) << where;
          // Auto runs the algorithm and protocol NCCL picks on every row, within 10% of NCCL's
          // time; NVLS-tree at mid sizes within 15%: dtsim's rail trees pay their pipeline fill
          // (2h stages of one chunk each, +11% and +14% at 64 MiB on 8 and 16 nodes), which NCCL's
          // model leaves out (docs/validation.md section 2).
          EXPECT_EQ(chosen.algorithm, dtsim_algorithm(pick.algorithm)) << where;
          // The protocol too, or one NCCL's own model times within 1% of its pick (4 x 8 A100,
          // 64 MiB all-gather and reduce-scatter: LL128 against Simple).
          if (chosen.protocol != CollectiveProtocol::kAuto &&
              to_string(chosen.protocol) != to_string(pick.protocol)) {
            bool close = false;
            for (const auto& e : all)
              close |= dtsim_algorithm(e.algorithm) == chosen.algorithm &&
                       to_string(e.protocol) == to_string(chosen.protocol) &&
                       e.time_us <= 1.01 * pick.time_us;
            EXPECT_TRUE(close) << where << " runs " << to_string(chosen.protocol);
          }
          const double tolerance = pick.algorithm == NcclAlgorithm::kNvlsTree ? 0.15 : 0.1;
          EXPECT_NEAR(auto_us, pick.time_us, tolerance * pick.time_us) << where;
        }
    }
}

}  // namespace
}  // namespace dtsim::testing
