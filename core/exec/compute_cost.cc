#include "core/exec/compute_cost.h"

#include <algorithm>
#include <cmath>

namespace dtsim {

FlopsPerSecond achievable_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype) {
  double eff = kind == KernelKind::kAttention ? gpu.attention_efficiency : gpu.gemm_efficiency;
  return gpu.peak_for(dtype) * eff;
}

BytesPerSecond achievable_memory_bandwidth(const GpuSpec& gpu) {
  return gpu.memory_bandwidth * gpu.memory_efficiency;
}

double wave_efficiency(const GemmShape& shape, int sm_count) {
  if (!shape.known() || sm_count <= 0) return 1.0;
  const double tiles =
      shape.batch * std::ceil(shape.m / kGemmTileM) * std::ceil(shape.n / kGemmTileN);
  // Tile quantization: partial tiles at the edges compute padding.
  const double useful = shape.batch * shape.m * shape.n;
  const double tile_efficiency = useful / (tiles * kGemmTileM * kGemmTileN);
  // Wave quantization: the last wave of tiles leaves SMs idle.
  const double waves = std::ceil(tiles / sm_count);
  const double wave = tiles / (waves * sm_count);
  return tile_efficiency * wave;
}

std::optional<FlopsPerSecond> measured_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                 const GemmShape& shape) {
  if (kind != KernelKind::kGemm && kind != KernelKind::kAttention) return std::nullopt;
  const auto it = gpu.gemm_table.find(dtype);
  if (it == gpu.gemm_table.end() || it->second.empty()) return std::nullopt;
  const GemmTable& table = it->second;
  const FlopsPerSecond gemm =
      shape.known() ? table.rate(shape.m, shape.n, shape.k) : table.rate_at_largest();
  if (kind == KernelKind::kGemm) return gemm;
  return gemm * gpu.attention_factor.value_or(gpu.attention_efficiency / gpu.gemm_efficiency);
}

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu) {
  Seconds t{0};
  if (op.flops.value() > 0 && op.kind != KernelKind::kElementwise &&
      op.kind != KernelKind::kOptimizer) {
    if (auto measured = measured_flop_rate(gpu, op.kind, op.dtype, op.shape))
      t = op.flops / *measured;
    else
      t = op.flops /
          (achievable_flop_rate(gpu, op.kind, op.dtype) * wave_efficiency(op.shape, gpu.sm_count));
  }
  if (op.bytes.value() > 0) t = std::max(t, op.bytes / achievable_memory_bandwidth(gpu));
  return t + gpu.kernel_launch_overhead;
}

}  // namespace dtsim
