// Closed-form kernel costs: the roofline, with per-shape GEMM and attention rates where they are
// known.
//
// Contract:
// - compute_time: a kernel takes max(FLOPs / rate, bytes / (memory bandwidth x memory
//   efficiency)) times its load factor (the busiest rank's work over the mean rank's, 1 for
//   most kernels) plus the kernel launch overhead once per launch (Williams et al. 2009,
//   "Roofline"). The rate of a GEMM or attention kernel is the first of these that applies:
//   1. a measured GEMM table for the op's dtype (a hardware profile, core/hardware/profile.h):
//      the table's rate at the op's per-GEMM m, n, k (the rate at the largest grid point when the
//      shape is unknown); an attention kernel runs at attention_factor x that rate (absent:
//      attention_efficiency / gemm_efficiency x it). No quantization on top: the measurement ran
//      on the device's real SMs at that shape.
//   2. a published curve for the dtype (GpuSpec::gemm_curve / attention_curve,
//      core/hardware/kernel_rates.h): a GEMM of known shape at peak x the curve's efficiency
//      there (tile and wave quantization included); a fused attention kernel of known shape at
//      peak x the attention curve's efficiency at its head dimension and key length, doubled
//      under a causal mask because the curve counts half the square and the op's FLOPs count all
//      of it.
//   3. the roofline: peak(dtype) x gemm_efficiency (attention_efficiency for attention kernels)
//      x tile and wave quantization where the shape is known.
//   Elementwise and optimizer kernels are priced by their bytes alone.
// - The memory side runs at memory bandwidth x memory_efficiency x the GPU's factor for the op's
//   traffic class (GpuSpec::traffic: 1 for streaming kernels; the unfused attention core's
//   measured factors, core/hardware/published_rates.cc).
// - The same function gives the analytic engine its kernel durations and the SimGrid engine its
//   Exec sizes, so there is one definition of a kernel's cost.
#pragma once

#include <optional>

#include "core/base/units.h"
#include "core/hardware/catalog.h"
#include "core/hardware/kernel_rates.h"
#include "core/ir/program.h"

namespace dtsim {

// Peak rate a kernel of this kind can reach on this GPU under the roofline (case 3 above).
FlopsPerSecond achievable_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype);
BytesPerSecond achievable_memory_bandwidth(const GpuSpec& gpu,
                                           TrafficClass traffic = TrafficClass::kStreaming);

// Tile and wave quantization of a GEMM shape (core/hardware/kernel_rates.h); 1 when the shape
// is unknown.
inline double wave_efficiency(const GemmShape& shape, int sm_count) {
  return shape.known() ? wave_efficiency(shape.batch, shape.m, shape.n, sm_count) : 1.0;
}

// The measured rate of a GEMM or attention kernel (case 1); nullopt when the GPU has no GEMM
// table for this dtype, or the kernel is not a GEMM or attention kernel.
std::optional<FlopsPerSecond> measured_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                 const GemmShape& shape);

// The published-curve rate (case 2); nullopt when no curve applies.
std::optional<FlopsPerSecond> published_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                  const GemmShape& shape);

// The rate compute_time uses for a kernel's FLOPs (cases 1 to 3).
FlopsPerSecond flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype, const GemmShape& shape);

// The same on `sms` of the GPU's SMs (the others held by communication kernels,
// core/exec/overlap_contention.h): the FLOP rate scales with the SMs' share of the GPU, and GEMM
// tiles are quantized into waves of `sms` SMs. A measured table's rate (case 1) scales with the
// share alone. The memory side and the launch overhead are unchanged. With sms >= sm_count (or
// an unknown SM count) these equal the functions above.
std::optional<FlopsPerSecond> published_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                  const GemmShape& shape, int sms);
FlopsPerSecond flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype, const GemmShape& shape,
                         int sms);

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu);
Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu, int sms);

}  // namespace dtsim
