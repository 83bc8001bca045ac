#include "real/cuda/cuda_gemm.h"

#include <utility>

namespace dtsim::real::cuda {
namespace {

struct Types {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
};

Types types_for(DType t) {
  switch (t) {
    case DType::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case DType::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::kFp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case DType::kFp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

size_t element_bytes(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_8F_E4M3:
      return 1;
    case CUDA_R_16BF:
    case CUDA_R_16F:
      return 2;
    default:
      return 4;
  }
}

int64_t round_up(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

}  // namespace

bool supports_fp8(int cc_major, int cc_minor) {
  return cc_major > 8 || (cc_major == 8 && cc_minor >= 9);
}

GemmPlan::GemmPlan(GemmPlan&& o) noexcept {
  *this = std::move(o);
}

GemmPlan& GemmPlan::operator=(GemmPlan&& o) noexcept {
  if (this != &o) {
    release();
    dims = o.dims;
    rounded = o.rounded;
    a_bytes = o.a_bytes;
    b_bytes = o.b_bytes;
    d_bytes = o.d_bytes;
    desc_ = std::exchange(o.desc_, nullptr);
    a_ = std::exchange(o.a_, nullptr);
    b_ = std::exchange(o.b_, nullptr);
    d_ = std::exchange(o.d_, nullptr);
    algo_ = o.algo_;
  }
  return *this;
}

GemmPlan::~GemmPlan() {
  release();
}

void GemmPlan::release() {
  // Destroy calls only free host memory; their status is of no use in a destructor.
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  desc_ = nullptr;
  a_ = b_ = d_ = nullptr;
}

GemmPlan plan_gemm(cublasLtHandle_t lt, GemmDims dims, size_t workspace_bytes, const Site& site,
                   const std::string& op) {
  GemmPlan p;
  if (dims.dtype == DType::kFp8) {
    const GemmDims asked = dims;
    dims.m = round_up(dims.m, 16);
    dims.k = round_up(dims.k, 16);
    dims.n = round_up(dims.n, 16);
    p.rounded = dims != asked;
  }
  p.dims = dims;
  const Types t = types_for(dims.dtype);
  const size_t ein = element_bytes(t.in), eout = element_bytes(t.out);
  const auto batch = static_cast<size_t>(dims.batch);
  const auto m = static_cast<size_t>(dims.m), n = static_cast<size_t>(dims.n),
             k = static_cast<size_t>(dims.k);
  p.a_bytes = batch * m * k * ein;
  p.b_bytes = batch * k * n * ein;
  p.d_bytes = batch * m * n * eout;

  DTSIM_CHECK(site, op, cublasLtMatmulDescCreate(&p.desc_, t.compute, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  DTSIM_CHECK(site, op,
              cublasLtMatmulDescSetAttribute(p.desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                             sizeof transpose));
  DTSIM_CHECK(
      site, op,
      cublasLtMatmulDescSetAttribute(p.desc_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  // A is stored k x m (ld k) and transposed; B k x n (ld k); D m x n (ld m).
  DTSIM_CHECK(site, op, cublasLtMatrixLayoutCreate(&p.a_, t.in, k, m, static_cast<int64_t>(k)));
  DTSIM_CHECK(site, op, cublasLtMatrixLayoutCreate(&p.b_, t.in, k, n, static_cast<int64_t>(k)));
  DTSIM_CHECK(site, op, cublasLtMatrixLayoutCreate(&p.d_, t.out, m, n, static_cast<int64_t>(m)));
  if (dims.batch > 1) {
    const int32_t count = static_cast<int32_t>(dims.batch);
    const int64_t strides[3] = {static_cast<int64_t>(m * k), static_cast<int64_t>(k * n),
                                static_cast<int64_t>(m * n)};
    cublasLtMatrixLayout_t layouts[3] = {p.a_, p.b_, p.d_};
    for (int i = 0; i < 3; ++i) {
      DTSIM_CHECK(site, op,
                  cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                   &count, sizeof count));
      DTSIM_CHECK(
          site, op,
          cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &strides[i], sizeof strides[i]));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  DTSIM_CHECK(site, op, cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_bytes;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(lt, p.desc_, p.a_, p.b_, p.d_, p.d_, pref, 1, &result,
                                            &found);
  cublasLtMatmulPreferenceDestroy(pref);
  DTSIM_CHECK(site, op, status);
  if (found == 0)
    fail(site, op, "cublasLtMatmulAlgoGetHeuristic",
         "no algorithm for a " + std::string(to_string(dims.dtype)) + " GEMM of batch " +
             std::to_string(dims.batch) + ", m " + std::to_string(dims.m) + ", n " +
             std::to_string(dims.n) + ", k " + std::to_string(dims.k),
         __FILE__, __LINE__);
  p.algo_ = result.algo;
  return p;
}

void GemmPlan::run(cublasLtHandle_t lt, const void* a, const void* b, void* d, void* workspace,
                   size_t workspace_bytes, cudaStream_t stream, const Site& site,
                   const std::string& op) const {
  const float alpha = 1.0f, beta = 0.0f;
  DTSIM_CHECK(site, op,
              cublasLtMatmul(lt, desc_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_,
                             workspace, workspace_bytes, stream));
}

}  // namespace dtsim::real::cuda
