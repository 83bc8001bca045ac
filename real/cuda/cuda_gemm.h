// Internal to the CUDA back end: one (batched) GEMM as cuBLASLt runs it, planned once and run
// many times (the executor's GEMM and attention ops, and calibration's grid).
//
// Contract:
// - Layout "TN" for every dtype (A stored k x m and transposed, B k x n, D m x n, column-major),
//   the layout cuBLASLt's FP8 kernels require (cuBLAS docs, "cublasLtMatmul", FP8 rules), so that
//   all dtypes run the same problem. batch > 1 is a strided batch.
// - Types: bf16 and fp16 in and out with fp32 accumulation; fp32 (CUBLAS_COMPUTE_32F, no tensor
//   cores) and tf32 (CUBLAS_COMPUTE_32F_FAST_TF32) in fp32; fp8 e4m3 in, bf16 out, fp32
//   accumulation (the output type Transformer Engine uses), only where compute capability >= 8.9.
// - FP8 needs m and k multiples of 16 (16-byte aligned leading dimensions): plan() rounds them
//   up and says so in GemmPlan::rounded.
// - plan() picks cuBLASLt's first heuristic algorithm within the workspace; no algorithm is a
//   RuntimeError naming the op and the shape.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/base/dtype.h"
#include "real/cuda/cuda_device.h"

namespace dtsim::real::cuda {

struct GemmDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  DType dtype = DType::kBf16;
  auto operator<=>(const GemmDims&) const = default;
};

class GemmPlan {
 public:
  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  GemmPlan(GemmPlan&& o) noexcept;
  GemmPlan& operator=(GemmPlan&& o) noexcept;
  ~GemmPlan();

  GemmDims dims;  // as run (after FP8 rounding)
  bool rounded = false;
  // Bytes of each operand over the whole batch.
  size_t a_bytes = 0, b_bytes = 0, d_bytes = 0;
  double flops() const {
    return 2.0 * static_cast<double>(dims.batch) * static_cast<double>(dims.m) *
           static_cast<double>(dims.n) * static_cast<double>(dims.k);
  }

  // Enqueues D = A B on `stream`; the buffers hold at least a_bytes, b_bytes, d_bytes.
  void run(cublasLtHandle_t lt, const void* a, const void* b, void* d, void* workspace,
           size_t workspace_bytes, cudaStream_t stream, const Site& site,
           const std::string& op) const;

 private:
  friend GemmPlan plan_gemm(cublasLtHandle_t, GemmDims, size_t, const Site&, const std::string&);
  void release();
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

GemmPlan plan_gemm(cublasLtHandle_t lt, GemmDims dims, size_t workspace_bytes, const Site& site,
                   const std::string& op);

// Whether this device runs FP8 GEMMs (compute capability 8.9 or newer: Ada, Hopper).
bool supports_fp8(int cc_major, int cc_minor);

// The workspace cuBLAS recommends for Hopper (cuBLAS docs, "cublasSetWorkspace": 32 MiB on
// sm_90); the executor allocates one per stream, once.
inline constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

}  // namespace dtsim::real::cuda
