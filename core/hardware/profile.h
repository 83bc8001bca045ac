// A measured hardware profile: what `dtsim calibrate` writes and `cluster.profile: FILE` reads
// (docs/design.md section 4). Its figures replace the catalog's for the GPU model it was measured
// on, so that a prediction rests on microbenchmarks of the machine it predicts.
//
// Contract:
// - A profile is a YAML file (docs/real-mode.md, "Profiles"), format 1:
//     dtsim_profile: 1
//     kind: gpu | cpu
//     gpu_model: H200-SXM          # the catalog GPU (or inline GPU name) it measures
//     created: 2026-12-01T22:40:00Z
//     command: dtsim calibrate --gpu -o h200.yaml
//     machine: {host: ..., ...}    # free-form strings
//     software: {dtsim: ..., ...}  # free-form strings
//     device:
//       memory_bandwidth: 4.1TBps          # achieved by a streaming kernel
//       kernel_launch_overhead: 4.2us      # an empty kernel (or op) back to back
//       attention_factor: 1.0              # optional: attention rate / GEMM rate at a shape
//       gemm:                              # a full grid per dtype: every m x n x k measured
//         - {dtype: bf16, m: 1024, n: 1024, k: 1024, rate: 612TFLOPS}
//     intra_node:                          # optional: one node's links, from point-to-point
//       bandwidth: 150GBps
//       latency: 2.1us
//     collectives:                         # optional, for the record: the size sweep
//       - {op: all-reduce, ranks: 8, size: 1MiB, time: 31.2us, busbw: 60.1GBps}
//     p2p:                                 # optional, for the record
//       - {size: 1MiB, time: 10.2us, bandwidth: 98.0GBps}
//   Quantities carry units as scenarios do (core/base/units.h).
// - load_profile() checks every field; a missing or malformed one is an InputError naming the
//   file, the line and the key (exit 2). A gemm grid that is not complete (some m x n x k of a
//   dtype missing) is an error too.
// - write_profile() writes what load_profile() reads back to an equal profile.
// - apply_profile() replaces the GPU's memory bandwidth (at efficiency 1: the figure is
//   achieved), its launch overhead and its GEMM table (GpuSpec::gemm_table), and the intra-node
//   fabric's bandwidth and latency when the profile has them. The vendor peak stays, so MFU and
//   HFU remain fractions of it; only a dtype the catalog has no peak for takes the best measured
//   GEMM rate as its peak. A profile whose gpu_model differs from the cluster's GPU name is an
//   InputError naming both.
// - apply_profile() also sets the GPU's memory efficiency to 1 and the replaced fabric's
//   protocol efficiency to 1 (the figures are achieved, not line rates), the GPU's
//   attention_factor to the profile's, the sources of what it replaced to "measured: FILE
//   (created DATE on HOST)" followed by the catalog's source for the rest, and
//   ClusterConfig::profile to the profile's file. How compute_time() uses the table:
//   core/exec/compute_cost.h; the interpolation: core/hardware/gemm_table.h.
// - Scenarios load one with cluster.profile (core/scenario/bind_cluster.cc), applied after the
//   catalog entries and the scenario's own fields are resolved.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/units.h"

namespace dtsim {

struct ClusterConfig;

struct GemmSample {
  DType dtype = DType::kBf16;
  double m = 0, n = 0, k = 0;
  FlopsPerSecond rate{0};  // achieved, 2 m n k FLOPs over the measured time
  friend bool operator==(const GemmSample&, const GemmSample&) = default;
};

struct CollectiveSample {
  std::string op;  // "all-reduce", as dtsim collective --op names it
  int ranks = 0;
  Bytes size{0};  // nccl-tests' size
  Seconds time{0};
  BytesPerSecond busbw{0};  // nccl-tests' bus bandwidth
  friend bool operator==(const CollectiveSample&, const CollectiveSample&) = default;
};

struct P2pSample {
  Bytes size{0};
  Seconds time{0};  // one way: half a ping-pong round trip
  BytesPerSecond bandwidth{0};
  friend bool operator==(const P2pSample&, const P2pSample&) = default;
};

struct HardwareProfile {
  int format = 1;
  std::string kind;       // "gpu" or "cpu"
  std::string gpu_model;  // the GPU name a scenario's cluster.gpu must have
  std::string created;    // ISO-8601, UTC
  std::string command;    // the calibrate command line
  std::map<std::string, std::string> machine;
  std::map<std::string, std::string> software;

  BytesPerSecond memory_bandwidth{0};
  Seconds kernel_launch_overhead{0};
  std::optional<double> attention_factor;
  std::vector<GemmSample> gemm;

  std::optional<BytesPerSecond> intra_node_bandwidth;
  std::optional<Seconds> intra_node_latency;

  std::vector<CollectiveSample> collectives;
  std::vector<P2pSample> p2p;

  std::string file;  // where it was loaded from ("" when built in memory)

  // Field by field, `file` included (a round trip compares what was written with what was read).
  friend bool operator==(const HardwareProfile&, const HardwareProfile&) = default;
};

HardwareProfile load_profile(const std::string& path);
void write_profile(const HardwareProfile& profile, std::ostream& out);
void apply_profile(const HardwareProfile& profile, ClusterConfig& cluster);

}  // namespace dtsim
