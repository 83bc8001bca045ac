// `dtsim collective`: one collective, or a size sweep, on a scenario's cluster, timed by the
// scenario's engine, with nccl-tests' algbw and busbw (docs/reference.md, "Collectives").
//
// Contract: flags arrive as text and are checked here, so every front end gets the same errors
// (InputError naming the flag); the result holds one row per size with the algorithm and protocol
// each size resolved to, NCCL's own pick where its cost model covers the system, and a note for
// every size whose busbw is below the previous size's, saying why.
//
// Sizes: --bytes/--min-bytes/--max-bytes take dtsim's units (1GiB, 512KB, 8B); the nccl-tests
// spellings -b/-e read sizes as nccl-tests does (src/common.cu parsesize: a plain number is bytes,
// a K, M or G suffix multiplies by 1024, 1024^2, 1024^3). A sweep multiplies by the factor (finite
// and above 1), rounds every size to whole elements, skips sizes already listed, and always ends
// at the maximum. A barrier takes no size.
#pragma once

#include <optional>
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
  std::string min_bytes_nccl;  // -b: nccl-tests' reading (plain bytes, K/M/G binary)
  std::string max_bytes_nccl;  // -e
  std::string factor;          // empty: 2; only for sweeps
  std::string algorithm = "auto";
  std::string protocol = "auto";
  // nccl-tests' default, float; dtsim's names (bf16) or nccl-tests' (bfloat16)
  std::string dtype = "fp32";
  int ranks = 0;  // 0: every GPU of the cluster
  // nccl-tests' -o: the reduction (sum, prod, min, max, avg); the redop column. NCCL runs each
  // in the same kernels at the same bytes, so the time does not depend on it.
  std::string redop = "sum";
};

// Most sizes one sweep may list.
inline constexpr size_t kMaxSweepSizes = 10000;

struct CollectiveRow {
  Bytes bytes{0};
  double count = 0;  // elements
  std::string algorithm;
  std::string protocol;  // empty: the algorithm has no protocol model (pure alpha-beta)
  double time_s = 0, algbw_GBps = 0, busbw_GBps = 0;
  // NCCL's cost model's pick and its predicted time (core/collectives/nccl_model.h); empty where
  // the model does not cover the system or the collective.
  std::string nccl_algorithm, nccl_protocol;
  std::optional<double> nccl_time_s;
  std::string note;  // why busbw is below the previous size's; empty where it is not
};

struct CollectiveBenchmark {
  int ranks = 0;
  std::string engine;
  std::string op;
  std::string dtype;      // dtsim's name
  std::string type_name;  // nccl-tests' name (float, half, bfloat16, ...)
  std::string redop;  // nccl-tests' redop column: sum, or none for collectives that reduce nothing
  int root = -1;      // root rank for broadcast and reduce; -1 as nccl-tests prints otherwise
  std::vector<CollectiveRow> rows;
};

CollectiveBenchmark run_collective_benchmark(const Scenario& scenario,
                                             const CollectiveRequest& request);

// nccl-tests' name for a dtype (src/common.cu test_typenames): float, half, bfloat16, f8e4m3;
// tf32 is stored as fp32, so float.
std::string nccl_tests_type_name(DType dtype);

}  // namespace dtsim::driver
