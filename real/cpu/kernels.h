// What the CPU back end runs for a compute op, shared by the executor and `dtsim calibrate --cpu`
// so that the profile measures exactly the code that real mode times.
//
// - GEMM and attention ops: Eigen fp32 GEMMs (single-threaded: one rank per core) of the op's
//   m x n x k, as many as the op's FLOPs hold (2 m n k each: a batched GEMM, or attention's
//   several GEMMs per op); an op without a shape runs square GEMMs of its FLOPs. Every dtype is
//   computed in fp32: Eigen has no fast bf16 or fp8 GEMM.
// - Other compute ops (elementwise, optimizer): a streaming loop y = a y + x over fp32 arrays that
//   moves the op's bytes (12 bytes per element: two reads and a write).
// - compute_scale s < 1 runs GEMMs with m scaled by s; run() returns the time the full-size op
//   would take at the rate the smaller one ran (its time divided by the work done over the op's),
//   and the executor waits out the difference, so the timeline stands for the full-size step.
#pragma once

#include <Eigen/Core>

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/ir/program.h"

namespace dtsim::real::cpu {

struct GemmPlan {
  int m = 1, n = 1, k = 1;   // as run (m scaled)
  long count = 1;            // GEMMs per op
  double work_fraction = 1;  // work run / the op's FLOPs
};
GemmPlan plan_gemm(const ComputeOp& op, double compute_scale);

class CpuKernels {
 public:
  // Allocates what `op` needs, so that running it never allocates.
  void prepare(const ComputeOp& op, double compute_scale);
  // Runs the op; returns the time it stands for, in seconds (scaled back for compute_scale).
  double run(const ComputeOp& op, double compute_scale);

  // The primitives, for calibration.
  double gemm_seconds(int m, int n, int k, long count);  // measured wall time
  double stream_seconds(double bytes);                   // measured wall time

 private:
  struct Gemm {
    Eigen::MatrixXf a, b, c;
  };
  Gemm& gemm(int m, int n, int k);
  void ensure_stream(size_t elements);
  std::map<std::tuple<int, int, int>, std::unique_ptr<Gemm>> gemms_;
  std::vector<float> x_, y_;
};

}  // namespace dtsim::real::cpu
