// The cuBLASLt entry points the GPU back end calls, each loading libcublasLt on its first call.
//
// Why: loading libcublasLt runs its static initialisers, about 0.4 s of CPU on the development
// VM (bench/results/startup.md), and a linked library is loaded by every dtsim command, including
// `dtsim --help` and each run of a sweep, which never touch a GPU. These definitions satisfy the
// linker in its place (dtsim is not linked against libcublasLt), and the first call dlopens the
// library the headers belong to and resolves every function from it. The library is the real
// one; nothing is stubbed: a failed load is an error naming the library and the loader's reason.
#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/base/error.h"
#include "real/cuda/cublaslt_on_demand.h"

namespace dtsim::real::cuda {
namespace {

// libcublasLt.so.<major> of the headers dtsim was compiled with.
const std::string& soname() {
  static const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

void* library() {
  static void* handle = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    // By name first (the executable's run path, LD_LIBRARY_PATH, the loader's cache), then the
    // file the build found (CMake's CUDA::cublasLt).
    handle = dlopen(soname().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = dlerror();
#ifdef DTSIM_CUBLASLT_PATH
      handle = dlopen(DTSIM_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
      if (!handle) error += "; " + std::string(dlerror());
#endif
    }
  });
  if (!handle)
    throw RuntimeError("the GPU back end cannot load " + soname() + " (cuBLASLt): " + error +
                       "; install the CUDA toolkit's cuBLAS or put its lib folder on "
                       "LD_LIBRARY_PATH");
  return handle;
}

// The function `name` of libcublasLt, with the type of its declaration in cublasLt.h.
template <class F>
F* entry(const char* name) {
  void* f = dlsym(library(), name);
  if (!f) throw RuntimeError(soname() + " has no function " + name + ": " + dlerror());
  return reinterpret_cast<F*>(f);
}

}  // namespace

bool cublaslt_loaded() {
  return dlopen(soname().c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

}  // namespace dtsim::real::cuda

using dtsim::real::cuda::entry;

// Each definition has its declaration's signature (cublasLt.h, extern "C").
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static auto* f = entry<decltype(cublasLtCreate)>("cublasLtCreate");
  return f(handle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  static auto* f = entry<decltype(cublasLtDestroy)>("cublasLtDestroy");
  return f(handle);
}

size_t cublasLtGetVersion(void) {
  static auto* f = entry<decltype(cublasLtGetVersion)>("cublasLtGetVersion");
  return f();
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t a_desc, const void* b,
                              cublasLtMatrixLayout_t b_desc, const void* beta, const void* c,
                              cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  static auto* f = entry<decltype(cublasLtMatmul)>("cublasLtMatmul");
  return f(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
           workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  static auto* f =
      entry<decltype(cublasLtMatmulAlgoGetHeuristic)>("cublasLtMatmulAlgoGetHeuristic");
  return f(handle, desc, a, b, c, d, preference, requested, results, returned);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  static auto* f = entry<decltype(cublasLtMatmulDescCreate)>("cublasLtMatmulDescCreate");
  return f(desc, compute, scale);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  static auto* f = entry<decltype(cublasLtMatmulDescDestroy)>("cublasLtMatmulDescDestroy");
  return f(desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void* value, size_t bytes) {
  static auto* f =
      entry<decltype(cublasLtMatmulDescSetAttribute)>("cublasLtMatmulDescSetAttribute");
  return f(desc, attribute, value, bytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
  static auto* f =
      entry<decltype(cublasLtMatmulPreferenceCreate)>("cublasLtMatmulPreferenceCreate");
  return f(preference);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  static auto* f =
      entry<decltype(cublasLtMatmulPreferenceDestroy)>("cublasLtMatmulPreferenceDestroy");
  return f(preference);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void* value, size_t bytes) {
  static auto* f =
      entry<decltype(cublasLtMatmulPreferenceSetAttribute)>("cublasLtMatmulPreferenceSetAttribute");
  return f(preference, attribute, value, bytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  static auto* f = entry<decltype(cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
  return f(layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  static auto* f = entry<decltype(cublasLtMatrixLayoutDestroy)>("cublasLtMatrixLayoutDestroy");
  return f(layout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attribute,
                                                const void* value, size_t bytes) {
  static auto* f =
      entry<decltype(cublasLtMatrixLayoutSetAttribute)>("cublasLtMatrixLayoutSetAttribute");
  return f(layout, attribute, value, bytes);
}
