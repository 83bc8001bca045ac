#include "real/cpu/kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dtsim::real::cpu {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_gemm_like(const ComputeOp& op) {
  return (op.kind == KernelKind::kGemm || op.kind == KernelKind::kAttention) &&
         op.flops.value() > 0;
}

}  // namespace

GemmPlan plan_gemm(const ComputeOp& op, double compute_scale) {
  GemmPlan p;
  const double flops = op.flops.value();
  double m, n, k;
  if (op.shape.known()) {
    m = op.shape.m;
    n = op.shape.n;
    k = op.shape.k;
  } else {
    m = n = k = std::max(1.0, std::round(std::cbrt(flops / 2)));
  }
  p.count = std::max(1L, std::lround(flops / (2 * m * n * k)));
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.m = static_cast<int>(std::max(1.0, std::round(m * compute_scale)));
  p.work_fraction = 2.0 * p.m * p.n * p.k * static_cast<double>(p.count) / flops;
  return p;
}

CpuKernels::Gemm& CpuKernels::gemm(int m, int n, int k) {
  auto& g = gemms_[{m, n, k}];
  if (!g) {
    g = std::make_unique<Gemm>();
    g->a = Eigen::MatrixXf::Constant(m, k, 0.5f);
    g->b = Eigen::MatrixXf::Constant(k, n, 0.25f);
    g->c = Eigen::MatrixXf::Zero(m, n);
  }
  return *g;
}

void CpuKernels::ensure_stream(size_t elements) {
  if (x_.size() < elements) {
    x_.assign(elements, 1.0f);
    y_.assign(elements, 0.0f);
  }
}

void CpuKernels::prepare(const ComputeOp& op, double compute_scale) {
  if (is_gemm_like(op)) {
    const GemmPlan p = plan_gemm(op, compute_scale);
    gemm(p.m, p.n, p.k);
  } else if (op.bytes.value() > 0) {
    ensure_stream(static_cast<size_t>(op.bytes.value() / 12) + 1);
  }
}

double CpuKernels::gemm_seconds(int m, int n, int k, long count) {
  Gemm& g = gemm(m, n, k);
  const double t0 = now_s();
  for (long i = 0; i < count; ++i) g.c.noalias() = g.a * g.b;
  return now_s() - t0;
}

double CpuKernels::stream_seconds(double bytes) {
  const size_t n = static_cast<size_t>(bytes / 12) + 1;
  ensure_stream(n);
  float* __restrict y = y_.data();
  const float* __restrict x = x_.data();
  const double t0 = now_s();
  for (size_t i = 0; i < n; ++i) y[i] = 0.999f * y[i] + x[i];
  const double t = now_s() - t0;
  // Keeps the loop from being optimised away.
  asm volatile("" : : "r"(y) : "memory");
  return t;
}

double CpuKernels::run(const ComputeOp& op, double compute_scale) {
  if (is_gemm_like(op)) {
    const GemmPlan p = plan_gemm(op, compute_scale);
    return gemm_seconds(p.m, p.n, p.k, p.count) / p.work_fraction;
  }
  if (op.bytes.value() > 0) return stream_seconds(op.bytes.value());
  return 0;
}

}  // namespace dtsim::real::cpu
