// The back ends linked: the real-mode functions of real/backends.h calling the CPU and GPU back
// ends directly. Programs that link them (the tests, dtsim-gui) use this file as it is; the dtsim
// program loads it from the module libdtsim_real_backends.so on first use (backends_on_demand.cc).
#include "real/backends.h"

#include "core/base/error.h"

#include "real/built_back_ends.h"

#if DTSIM_HAVE_MPI
#include "real/cpu/cpu_backend.h"
#endif
#if DTSIM_HAVE_CUDA
#include "real/cuda/cuda_backend.h"
#endif

namespace dtsim::real {
namespace {

[[noreturn]] void missing(Backend b) {
  if (b == Backend::kCpu)
    throw InputError(Diagnostic{
        {},
        "--cpu",
        "this dtsim was built without MPI, which the CPU back end needs; install Open MPI "
        "(apt-get install libopenmpi-dev openmpi-bin) and rebuild (scripts/setup.sh run)"});
  throw InputError(Diagnostic{
      {},
      "--gpu",
      "this dtsim was built without CUDA and NCCL, which the GPU back end needs; install the CUDA "
      "toolkit and NCCL under /usr/local/cuda (or set NCCL_HOME) and rebuild"});
}

}  // namespace

std::unique_ptr<Channel> make_channel(const LaunchInfo& launch, Backend backend, Seconds timeout) {
#if DTSIM_HAVE_MPI
  // The CPU back end moves its data with MPI, so it always initialises MPI (a singleton job when
  // there is no launcher); the GPU back end needs MPI only to find its peers.
  if (backend == Backend::kCpu || launch.mpi) return cpu::make_mpi_channel(launch, timeout);
#else
  if (backend == Backend::kCpu) missing(backend);
#endif
  if (launch.world == 1) return std::make_unique<LocalChannel>();
  if (launch.launcher == "torchrun") return make_tcp_channel(launch, timeout);
  throw InputError(Diagnostic{
      {},
      "launcher",
      "this dtsim was built without MPI, so it cannot join a job started by " + launch.launcher +
          "; launch with torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) "
          "or rebuild with Open MPI"});
}

std::unique_ptr<Executor> make_executor(Backend backend, Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options) {
  if (backend == Backend::kCpu) {
#if DTSIM_HAVE_MPI
    return cpu::make_executor(channel, launch, options);
#endif
  } else {
#if DTSIM_HAVE_CUDA
    return cuda::make_executor(channel, launch, options);
#endif
  }
  missing(backend);
}

HardwareProfile calibrate(Backend backend, Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options) {
  if (backend == Backend::kCpu) {
#if DTSIM_HAVE_MPI
    return cpu::calibrate(channel, launch, options);
#endif
  } else {
#if DTSIM_HAVE_CUDA
    return cuda::calibrate(channel, launch, options);
#endif
  }
  missing(backend);
}

int cuda_device_count(std::string& why) {
#if DTSIM_HAVE_CUDA
  return cuda::device_count(why);
#else
  why = "this dtsim was built without CUDA";
  return 0;
#endif
}

}  // namespace dtsim::real
