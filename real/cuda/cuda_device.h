// Internal to the CUDA back end (real/cuda): where a failure happened, and the checks every CUDA,
// cuBLASLt and NCCL call goes through. As nccl-tests' CUDACHECK/NCCLCHECK do, an error names the
// call, its error string, the source line, and here also the rank, the host and the op, so that
// one line in a job's log says which process failed doing what.
//
// Contract: check_*() return normally on success and throw dtsim::RuntimeError (exit 1) otherwise.
// The CUDA types here never leave real/cuda (docs/style.md, "Layout and layering").
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/units.h"
#include "real/channel.h"
#include "real/launch.h"

namespace dtsim::real::cuda {

// Who is calling: "rank 3 on node7". Set once per process; every check names it.
struct Site {
  std::string who;
  static Site of(const LaunchInfo& launch);
};

[[noreturn]] void fail(const Site& site, const std::string& op, const std::string& call,
                       const std::string& error, const char* file, int line);

inline void check(cudaError_t e, const Site& site, const std::string& op, const char* call,
                  const char* file, int line) {
  if (e != cudaSuccess)
    fail(site, op, call, std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")",
         file, line);
}
inline void check(cublasStatus_t s, const Site& site, const std::string& op, const char* call,
                  const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(site, op, call, std::string("cuBLAS status ") + std::to_string(static_cast<int>(s)), file,
         line);
}
// ncclInProgress is not an error for a non-blocking communicator: the caller polls it.
inline void check(ncclResult_t r, const Site& site, const std::string& op, const char* call,
                  const char* file, int line) {
  if (r != ncclSuccess && r != ncclInProgress)
    fail(site, op, call,
         std::string(ncclGetErrorString(r)) + " (" + ncclGetLastError(nullptr) + ")", file, line);
}

// DTSIM_CHECK(site, op, call): runs `call` and throws naming site, op and call on failure.
#define DTSIM_CHECK(site, op, call) \
  ::dtsim::real::cuda::check((call), (site), (op), #call, __FILE__, __LINE__)

// The number of devices and, when there are none, why (see cuda_backend.h).
int visible_devices(const std::string& host, std::string& why);

// Selects this process's device (by local rank) and returns its index; throws when none fits.
int select_device(const LaunchInfo& launch, const Site& site);

// NCCL communicators are non-blocking (ncclConfig_t::blocking = 0) so that no NCCL call can hang
// this process past the job's timeout: every call is followed by wait_ready(), which polls
// ncclCommGetAsyncError until the communicator is ready, and aborts it and throws on an error or
// after `timeout`.
void wait_ready(ncclComm_t comm, const Site& site, const std::string& op, const char* call,
                Seconds timeout);

// The world communicator: rank 0 creates the unique id and the channel broadcasts it.
ncclComm_t init_world_comm(Channel& channel, const Site& site, Seconds timeout);

// A communicator split from `world` (ncclCommSplit: every rank of the world calls it; `member`
// false passes NCCL_SPLIT_NOCOLOR and returns null). `key` orders the ranks of the new one.
ncclComm_t split_comm(ncclComm_t world, bool member, int key, const Site& site,
                      const std::string& what, Seconds timeout);

// Finalises and destroys a communicator (null is ignored); errors are ignored: this runs on the
// way out, also after another failure.
void destroy_comm(ncclComm_t comm);

// NCCL's element type for a dtype (tf32 travels as fp32, fp8 as e4m3).
ncclDataType_t nccl_type(DType t);

}  // namespace dtsim::real::cuda
