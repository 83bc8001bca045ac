// A measured GEMM throughput table for one dtype: achieved FLOP/s over a full cartesian grid of
// GEMM shapes (m, n, k), as `dtsim calibrate` measures it (core/hardware/profile.h), and the rate
// at any shape by interpolation.
//
// Contract:
// - Built from samples that cover every m x n x k of the values they use (a full grid), each
//   shape once, every dimension and rate positive and finite. Anything else is an InputError
//   whose message names the first missing (or repeated, or invalid) point; the caller locates it.
// - rate(m, n, k): trilinear interpolation of the rate in (log2 m, log2 n, log2 k). GEMM
//   throughput grows roughly with the logarithm of the shape (tiles fill more SMs or cores, each
//   tile reuses its operands more), so a straight line in log space between measured shapes is
//   the least-assuming guess. A coordinate outside the grid is clamped to the grid's edge: a shape
//   beyond the grid takes the edge value rather than an extrapolation.
// - At a grid point rate() returns that point's measurement exactly (the interpolation weights
//   there are exactly 0 and 1); between neighbouring points it is a convex combination of the
//   corner rates, so it lies between them and, on a grid whose rate does not decrease along an
//   axis, does not decrease along that axis either (up to floating-point rounding, far below 1e-12
//   relative).
// - The table knows nothing about batched GEMMs: a caller with b GEMMs of one shape looks up the
//   per-GEMM shape; the batch multiplies the work, not the rate.
// Thread safety: immutable after construction; every method is const and pure.
#pragma once

#include <vector>

#include "core/base/units.h"

namespace dtsim {

struct GemmPoint {
  double m = 0, n = 0, k = 0;  // the GEMM's dimensions: (m x k) times (k x n)
  FlopsPerSecond rate{0};      // achieved, 2 m n k FLOPs over the measured time
};

class GemmTable {
 public:
  GemmTable() = default;  // empty: no measurement
  // The table over the grid the samples span; InputError naming the problem when they are not a
  // full grid (see the contract). Sample order does not matter.
  static GemmTable from_samples(const std::vector<GemmPoint>& samples);

  bool empty() const { return rates_.empty(); }
  // The interpolated rate at (m, n, k), clamped to the grid. Requires !empty().
  FlopsPerSecond rate(double m, double n, double k) const;
  // The rate at the largest grid point (the largest m, n and k), for GEMMs whose shape is unknown:
  // the shape closest to the roofline's "large GEMM" assumption. Requires !empty().
  FlopsPerSecond rate_at_largest() const;
  // The highest measured rate anywhere on the grid (0 when empty).
  FlopsPerSecond best_rate() const;

  // The grid's values along each axis, ascending, and every point in m-major, then n, then k order.
  const std::vector<double>& m_values() const { return m_; }
  const std::vector<double>& n_values() const { return n_; }
  const std::vector<double>& k_values() const { return k_; }
  std::vector<GemmPoint> points() const;

  friend bool operator==(const GemmTable&, const GemmTable&) = default;

 private:
  FlopsPerSecond at(size_t i, size_t j, size_t l) const {
    return rates_[(i * n_.size() + j) * k_.size() + l];
  }

  std::vector<double> m_, n_, k_;
  std::vector<FlopsPerSecond> rates_;  // m-major, then n, then k
};

}  // namespace dtsim
