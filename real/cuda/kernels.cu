#include "real/cuda/kernels.h"

#include <algorithm>

namespace dtsim::real::cuda {
namespace {

__device__ __forceinline__ float chain(float x, int fmas) {
  // Dependent FMAs: the compiler cannot drop them, and 0.999 keeps the values finite.
  for (int i = 0; i < fmas; ++i) x = fmaf(x, 0.999f, 0.001f);
  return x;
}

__global__ void streaming_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                                 size_t vectors, const float* __restrict__ tail_in,
                                 float* __restrict__ tail_out, size_t tail, int fmas) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t i = first; i < vectors; i += stride) {
    float4 v = in[i];
    v.x = chain(v.x, fmas);
    v.y = chain(v.y, fmas);
    v.z = chain(v.z, fmas);
    v.w = chain(v.w, fmas);
    out[i] = v;
  }
  if (first < tail) tail_out[first] = chain(tail_in[first], fmas);
}

__global__ void empty_kernel() {}

}  // namespace

cudaError_t launch_streaming(const float* in, float* out, size_t floats, int fmas_per_float,
                             int sm_count, cudaStream_t stream) {
  if (floats == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const size_t vectors = floats / 4;
  const size_t tail = floats % 4;
  // Enough resident blocks to saturate HBM (a few per SM), no more: the grid-stride loop does
  // the rest, so a huge op is one launch.
  const size_t wanted = (vectors + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(
      std::max<size_t>(1, std::min<size_t>(wanted, static_cast<size_t>(sm_count) * 8)));
  streaming_kernel<<<blocks, kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), vectors,
      in + vectors * 4, out + vectors * 4, tail, fmas_per_float);
  return cudaGetLastError();
}

cudaError_t launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace dtsim::real::cuda
