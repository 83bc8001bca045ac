// Internal to the CUDA back end: the few kernels dtsim launches itself (kernels.cu, built by
// nvcc). Everything else that runs on the GPU is cuBLASLt's or NCCL's.
//
// Contract: each function only enqueues on `stream` and returns the launch's error; it never
// synchronises.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace dtsim::real::cuda {

// A bandwidth-bound op (elementwise, optimizer): reads `floats` floats from `in`, does
// `fmas_per_float` dependent fused multiply-adds on each (2 FLOPs each), and writes `floats`
// floats to `out`, in a grid-stride loop over float4 vectors. Traffic: 8 * floats bytes.
cudaError_t launch_streaming(const float* in, float* out, size_t floats, int fmas_per_float,
                             int sm_count, cudaStream_t stream);

// An empty kernel of one block of one thread: the launch overhead and nothing else.
cudaError_t launch_empty(cudaStream_t stream);

}  // namespace dtsim::real::cuda
