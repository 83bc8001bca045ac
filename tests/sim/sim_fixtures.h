// Shared helpers for the SimGrid executor tests: clusters from YAML and one-collective Jobs.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/exec/analytic_executor.h"
#include "core/scenario/scenario.h"
#include "sim/simgrid_executor.h"

namespace dtsim::testing {

inline Cluster cluster_from(const std::string& cluster_yaml) {
  return Cluster(
      load_scenario_text(cluster_yaml + "model: {preset: unused}\n", "test.yaml").cluster);
}

// A Job in which the first rank of each group runs one collective of `bytes` on its group; the
// other members are folded by symmetry, and all groups start together at t = 0.
inline Job concurrent_collectives(const std::vector<std::vector<Rank>>& groups, Bytes bytes,
                                  int world, CollectiveKind kind = CollectiveKind::kAllReduce,
                                  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing) {
  Job job;
  job.world_size = world;
  for (size_t g = 0; g < groups.size(); ++g) {
    job.groups.push_back(Group{static_cast<GroupId>(g), "g" + std::to_string(g), groups[g]});
    Program p;
    p.rank = groups[g].front();
    auto s = p.add_stream("comm");
    p.append(s, CollectiveOp{kind, static_cast<GroupId>(g), bytes, DType::kBf16, algorithm, 0},
             Label{"collective", -1, -1, Phase::kOther});
    job.programs.push_back(std::move(p));
  }
  return job;
}

// Longest collective span in a trace (s).
inline double longest_span(const Trace& t) {
  double longest = 0;
  for (const auto& s : t.spans) longest = std::max(longest, (s.end - s.start).value());
  return longest;
}

inline double simgrid_time(const Job& job, const Cluster& c, const std::string& fidelity) {
  return longest_span(
      sim::SimGridExecutor(
          sim::SimGridOptions{kFidelitySettingNames.from_valid(fidelity), DType::kBf16})
          .run(job, c, RunOptions{}));
}

inline double analytic_time(const Job& job, const Cluster& c) {
  return longest_span(AnalyticExecutor().run(job, c, RunOptions{}));
}

// The closed form `expected` (s) on every engine: the analytic engine to 1e-9, SimGrid at
// collective and chunk fidelity within 1%. `what` names the case in a failure.
inline void expect_closed_form_on_every_engine(const Job& job, const Cluster& c, double expected,
                                               const std::string& what) {
  EXPECT_NEAR(analytic_time(job, c), expected, 1e-9 * expected) << what;
  EXPECT_NEAR(simgrid_time(job, c, "collective"), expected, 0.01 * expected) << what;
  EXPECT_NEAR(simgrid_time(job, c, "chunk"), expected, 0.01 * expected) << what;
}

// N single-GPU nodes on a non-blocking switch: every hop is a NIC hop with alpha = 2 us and
// beta = 25 GB/s (200 Gb/s at efficiency 1).
inline Cluster star_of(int n) {
  return cluster_from(
      "cluster:\n  nodes: " + std::to_string(n) +
      "\n  gpus_per_node: 1\n  network: {topology: star, nic_bandwidth: 200Gbps, latency: 2us, "
      "protocol_efficiency: 1, nics_per_node: 1}\n");
}

inline std::vector<Rank> first_ranks(int n) {
  std::vector<Rank> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

}  // namespace dtsim::testing
