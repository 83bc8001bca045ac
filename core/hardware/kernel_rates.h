// Published kernel rates as data: GEMM throughput per shape and attention throughput per head
// dimension and sequence length, each row from a cited single-device microbenchmark, and the rate
// at any other shape by interpolation between the rows.
//
// Contract (GemmCurve):
// - Rows are (m, n, k, achieved FLOP/s) of compute-bound GEMMs: the shapes a sweep published
//   (core/hardware/published_rates.cc cites each). Memory-bound shapes (a small m against large n
//   and k) are not rows: the roofline's memory side prices them (core/exec/compute_cost.h).
// - Each row becomes a point (x, y): x = log2 of the GEMM's FLOPs (2 m n k, times the batch),
//   y = its rate over (peak x wave_efficiency(shape)), the row's efficiency with the tile and wave
//   quantization of its own shape divided out. efficiency(shape) is y interpolated piecewise
//   linearly in x (clamped to the first and last row beyond them) times wave_efficiency(shape).
//   So at a row's own shape it returns exactly the published rate / peak (up to rounding), and
//   between two neighbouring rows the wave-free curve y lies between theirs (monotone on every
//   segment); other shapes of similar size inherit their neighbours' efficiency, with their own
//   quantization on top, capped at the best fraction of peak any row reached: the 256 x 128 tile
//   overstates the waste of small GEMMs (libraries pick smaller tiles there), so their wave-free
//   efficiency can exceed 1, and no shape is predicted faster than the best one measured.
// - FLOPs are the one shape measure because every source sweeps size (square sweeps, best-shape
//   searches); the measure does not see aspect ratio, which wave quantization partly does.
// - Two rows at the same FLOPs, a non-positive dimension or rate, or a rate above the peak is an
//   InputError naming the row.
//
// Contract (AttentionCurve):
// - Rows are fused-attention (FlashAttention-style) forward + backward throughput per (head
//   dimension, causal or not, sequence length), in the benchmark's own FLOP convention: a causal
//   run counts half the s x s square (Dao 2023, benchmarks/benchmark_flash_attention.py).
// - efficiency(head_dim, seq, causal) interpolates the rows of that mask piecewise linearly in
//   log2(seq), then linearly in log2(head_dim) between the two nearest head dimensions, clamped at
//   the edges; exact at every row. The result is a fraction of peak in that FLOP convention.
//
// Thread safety: both are immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "core/base/units.h"

namespace dtsim {

// GEMM tile and wave quantization (NVIDIA Deep Learning Performance Guide, "Matrix
// Multiplication Background", sections on tile and wave quantization): the output is computed
// in kGemmTileM x kGemmTileN tiles, one per SM at a time, so a GEMM runs ceil(tiles / SMs) full
// waves. Returns useful work / work the waves could do, in (0, 1]; 1 when a dimension or the SM
// count is unknown (<= 0). The tile is the largest tensor-core tile cuBLAS and CUTLASS use for
// large half-precision GEMMs on Ampere and Hopper (256 x 128, the guide's example).
inline constexpr double kGemmTileM = 256, kGemmTileN = 128;
double wave_efficiency(double batch, double m, double n, int sm_count);

struct GemmRow {
  double m = 0, n = 0, k = 0;  // (m x k) times (k x n)
  FlopsPerSecond rate{0};      // achieved: 2 m n k FLOPs over the measured time
  std::string source;          // where the row was published
};

class GemmCurve {
 public:
  GemmCurve() = default;  // empty
  // InputError naming the row when the rows break the contract.
  static GemmCurve from_rows(std::vector<GemmRow> rows, FlopsPerSecond peak, int sm_count);

  bool empty() const { return x_.empty(); }
  // Achieved fraction of peak for `batch` GEMMs of m x n x k on a GPU of `sm_count` SMs,
  // quantization included. The rows were normalized with the SM count of the device they ran on
  // (from_rows), so a scenario that changes the SM count changes the quantization, not the rows.
  double efficiency(double batch, double m, double n, double k, int sm_count) const;
  // The wave-free curve at log2(FLOPs) = x (for tests and the hardware table).
  double wave_free(double x) const;
  // The highest wave-free efficiency of any row: the curve's plateau.
  double plateau() const;
  // The rows, ascending in FLOPs.
  const std::vector<GemmRow>& rows() const { return rows_; }

  friend bool operator==(const GemmCurve& a, const GemmCurve& b) {
    return a.x_ == b.x_ && a.y_ == b.y_;
  }

 private:
  std::vector<GemmRow> rows_;
  std::vector<double> x_, y_;
  double ceiling_ = 0;  // the best row's rate / peak
};

struct AttentionRow {
  double head_dim = 0;
  bool causal = false;
  double seq = 0;          // tokens per sequence (queries = keys)
  FlopsPerSecond rate{0};  // forward + backward, in the benchmark's FLOP convention
  std::string source;
};

class AttentionCurve {
 public:
  AttentionCurve() = default;
  static AttentionCurve from_rows(std::vector<AttentionRow> rows, FlopsPerSecond peak);

  bool empty() const { return rows_.empty(); }
  // Fraction of peak in the benchmark's convention (causal: half the square); 0 when no row has
  // this mask.
  double efficiency(double head_dim, double seq, bool causal) const;
  const std::vector<AttentionRow>& rows() const { return rows_; }

  friend bool operator==(const AttentionCurve& a, const AttentionCurve& b) {
    return a.eff_ == b.eff_;
  }

 private:
  // Per mask, per head dimension ascending: (log2 seq, efficiency) ascending in seq.
  struct Series {
    bool causal = false;
    double log_head_dim = 0;
    std::vector<double> x, y;
    friend bool operator==(const Series&, const Series&) = default;
  };
  double series_at(const Series& s, double x) const;

  std::vector<AttentionRow> rows_;
  std::vector<Series> eff_;
};

}  // namespace dtsim
