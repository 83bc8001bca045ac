// cuBLASLt loaded on the GPU back end's first call to it (cublaslt_on_demand.cc), so that a dtsim
// command that never runs a GEMM on a GPU does not pay for loading the library.
#pragma once

namespace dtsim::real::cuda {

// Whether libcublasLt is loaded in this process (it is once any cuBLASLt function was called).
bool cublaslt_loaded();

}  // namespace dtsim::real::cuda
