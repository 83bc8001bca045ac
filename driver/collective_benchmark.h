// `dtsim collective`: one collective, or a size sweep, on a scenario's cluster, timed by the
// scenario's engine, with nccl-tests' algbw and busbw (reference.md, "Collectives").
//
// Contract: flags arrive as text and are checked here, so every front end gets the same errors
// (InputError naming the flag); the result holds one row per size with the algorithm and protocol
// each size resolved to.
#pragma once

#include <string>
#include <vector>

#include "core/base/units.h"
#include "core/scenario/scenario.h"

namespace dtsim::driver {

struct CollectiveRequest {
  std::string op = "all-reduce";
  std::string bytes;      // one size, e.g. 1GiB
  std::string min_bytes;  // or a sweep: min, max and factor, as nccl-tests -b -e -f
  std::string max_bytes;
  double factor = 2;
  std::string algorithm = "auto";
  std::string protocol = "auto";
  std::string dtype = "bf16";
  int ranks = 0;  // 0: every GPU of the cluster
};

struct CollectiveRow {
  Bytes bytes{0};
  double count = 0;  // elements
  std::string algorithm, protocol;
  double time_s = 0, algbw_GBps = 0, busbw_GBps = 0;
};

struct CollectiveBenchmark {
  int ranks = 0;
  std::string engine;
  std::vector<CollectiveRow> rows;
};

CollectiveBenchmark run_collective_benchmark(const Scenario& scenario,
                                             const CollectiveRequest& request);

}  // namespace dtsim::driver
