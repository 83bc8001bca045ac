// Closed-form kernel costs: the roofline with GEMM tile and wave quantization.
//
// Contract:
// - compute_time: a kernel takes max(FLOPs / (peak(dtype) x efficiency(kind)),
//   bytes / (memory bandwidth x memory efficiency)) plus the kernel launch overhead (Williams
//   et al. 2009, "Roofline"). Efficiencies come from the GpuSpec.
// - Measured GEMM rates (a hardware profile, core/hardware/profile.h): where the GPU has a GEMM
//   table for the op's dtype (GpuSpec::gemm_table), a GEMM kernel runs at the table's rate at its
//   shape (core/hardware/gemm_table.h: the per-GEMM m, n, k, whatever the batch; the rate at the
//   largest grid point when the shape is unknown), and an attention kernel at attention_factor x
//   that rate (absent: attention_efficiency / gemm_efficiency x it). Neither gemm_efficiency nor
//   wave quantization applies on top: the measurement already contains both, since a calibrated
//   GEMM of that shape ran on the device's real SMs at its real efficiency. A dtype without a
//   table keeps the roofline above, and the memory roof and launch overhead are the same in both.
// - The same function gives the analytic engine its kernel durations and the SimGrid engine its
//   Exec sizes, so there is one definition of a kernel's cost.
#pragma once

#include <optional>

#include "core/base/units.h"
#include "core/hardware/catalog.h"
#include "core/ir/program.h"

namespace dtsim {

// Peak rate a kernel of this kind can reach on this GPU: the compute roof.
FlopsPerSecond achievable_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype);
BytesPerSecond achievable_memory_bandwidth(const GpuSpec& gpu);

// GEMM tile and wave quantization (NVIDIA Deep Learning Performance Guide, "Matrix
// Multiplication Background", sections on tile and wave quantization): the output is computed
// in kGemmTileM x kGemmTileN tiles, one per SM at a time, so a GEMM runs ceil(tiles / SMs) full
// waves. Returns useful work / work the waves could do, in (0, 1]; 1 when the shape or the SM
// count is unknown. The tile is the largest tensor-core tile cuBLAS and CUTLASS use for large
// half-precision GEMMs on Ampere and Hopper (256 x 128, the guide's example); the achievable
// rate it scales (gemm_efficiency, from MAMF sweeps) already holds for well-shaped GEMMs.
inline constexpr double kGemmTileM = 256, kGemmTileN = 128;
double wave_efficiency(const GemmShape& shape, int sm_count);

// The measured rate of a GEMM or attention kernel (see the contract); nullopt when the GPU has no
// GEMM table for this dtype, or the kernel is not a GEMM or attention kernel.
std::optional<FlopsPerSecond> measured_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                 const GemmShape& shape);

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu);

}  // namespace dtsim
