#include "core/exec/compute_cost.h"

#include <algorithm>
#include <cmath>

namespace dtsim {
namespace {

// The share of the GPU's peak that sms of its SMs give (1 when the SM count is unknown).
double sm_share(const GpuSpec& gpu, int sms) {
  if (gpu.sm_count <= 0 || sms >= gpu.sm_count) return 1.0;
  return static_cast<double>(std::max(sms, 1)) / gpu.sm_count;
}

}  // namespace

FlopsPerSecond achievable_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype) {
  double eff = kind == KernelKind::kAttention ? gpu.attention_efficiency : gpu.gemm_efficiency;
  return gpu.peak_for(dtype) * eff;
}

BytesPerSecond achievable_memory_bandwidth(const GpuSpec& gpu, TrafficClass traffic) {
  return gpu.memory_bandwidth * (gpu.memory_efficiency * gpu.traffic.of(traffic));
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

std::optional<FlopsPerSecond> published_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                  const GemmShape& shape, int sms) {
  if (!shape.known()) return std::nullopt;
  if (kind == KernelKind::kGemm) {
    const auto it = gpu.gemm_curve.find(dtype);
    if (it == gpu.gemm_curve.end() || it->second.empty()) return std::nullopt;
    // On sms of the GPU's SMs: their share of the peak, with the waves of that many SMs.
    return gpu.peak_for(dtype) *
           (sm_share(gpu, sms) *
            it->second.efficiency(shape.batch, shape.m, shape.n, shape.k, sms));
  }
  if (kind == KernelKind::kAttention && shape.fused_attention) {
    const auto it = gpu.attention_curve.find(dtype);
    if (it == gpu.attention_curve.end() || it->second.empty()) return std::nullopt;
    const double eff = it->second.efficiency(shape.k, shape.n, shape.causal);
    if (eff <= 0) return std::nullopt;
    return gpu.peak_for(dtype) * (eff * (shape.causal ? 2 : 1) * sm_share(gpu, sms));
  }
  return std::nullopt;
}

std::optional<FlopsPerSecond> published_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype,
                                                  const GemmShape& shape) {
  return published_flop_rate(gpu, kind, dtype, shape, gpu.sm_count);
}

FlopsPerSecond flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype, const GemmShape& shape,
                         int sms) {
  if (auto measured = measured_flop_rate(gpu, kind, dtype, shape))
    return *measured * sm_share(gpu, sms);
  if (auto published = published_flop_rate(gpu, kind, dtype, shape, sms)) return *published;
  return achievable_flop_rate(gpu, kind, dtype) *
         (sm_share(gpu, sms) * wave_efficiency(shape, sms));
}

FlopsPerSecond flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype, const GemmShape& shape) {
  return flop_rate(gpu, kind, dtype, shape, gpu.sm_count);
}

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu) {
  return compute_time(op, gpu, gpu.sm_count);
}

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu, int sms) {
  Seconds t{0};
  if (op.flops.value() > 0 && op.kind != KernelKind::kElementwise &&
      op.kind != KernelKind::kOptimizer)
    t = op.flops / flop_rate(gpu, op.kind, op.dtype, op.shape, sms);
  if (op.bytes.value() > 0)
    t = std::max(t, op.bytes / achievable_memory_bandwidth(gpu, op.traffic));
  return t * op.load_factor + gpu.kernel_launch_overhead * static_cast<double>(op.launches);
}

}  // namespace dtsim
