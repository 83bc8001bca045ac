// Internal to the CUDA back end: pieces of calibration (cuda_calibrate.cc) that need no GPU and
// are tested without one.
#pragma once

#include <string>
#include <string_view>

namespace dtsim::real::cuda {

// The catalog GPU (core/hardware/catalog.cc) that a device of this cudaDeviceProp::name is:
// "NVIDIA H200" -> "H200-SXM", "NVIDIA H100 80GB HBM3" -> "H100-SXM", "NVIDIA A100-SXM4-80GB"
// -> "A100-SXM-80GB". An unknown name comes back empty: the caller then records the device name
// and says that --gpu-model picks the catalog entry.
std::string catalog_gpu_name(std::string_view device_name);

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md there): all-reduce 2(n-1)/n, all-gather
// and reduce-scatter (n-1)/n, of the algorithm bandwidth size / time.
double bus_factor(std::string_view op, int ranks);

// "2.28.9" from NCCL's version code 22809 (NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9).
std::string nccl_version_string(int code);
// "13.0" from CUDA's version integer 13000 (1000 * major + 10 * minor).
std::string cuda_version_string(int code);

}  // namespace dtsim::real::cuda
