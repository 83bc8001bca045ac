// The real-mode back ends this build has, and the one place that builds them: the driver
// (driver/real.h) asks here for a channel, an executor or a calibration and never names MPI or
// CUDA itself. A back end this build lacks is an InputError that says how to get it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/exec/executor.h"
#include "core/hardware/profile.h"
#include "real/channel.h"
#include "real/launch.h"
#include "real/real_executor.h"

namespace dtsim::real {

enum class Backend { kCpu, kCuda };
std::string to_string(Backend b);  // "cpu" (MPI + Eigen), "cuda" (CUDA + NCCL)

bool built_with_mpi();
bool built_with_cuda();

// The control channel for this launch: MPI under an MPI launcher (MPI_Init_thread with
// MPI_THREAD_MULTIPLE), TCP with torchrun-style variables, local for one process. The CPU back
// end needs MPI: with Backend::kCpu and world > 1 outside MPI it is an InputError.
std::unique_ptr<Channel> make_channel(const LaunchInfo& launch, Backend backend, Seconds timeout);

std::unique_ptr<Executor> make_executor(Backend backend, Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options);

struct CalibrateOptions {
  std::string command;    // recorded in the profile
  std::string gpu_model;  // the catalog GPU name to record (gpu: from the device name if empty)
  bool quick = false;     // a smaller grid and sweep, for tests
  std::function<void(const std::string&)> phase;  // progress, may be empty
};
HardwareProfile calibrate(Backend backend, Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options);

// The number of CUDA devices this process sees; 0 with `why` set ("no NVIDIA driver is loaded
// (cudaGetDeviceCount: error 35, CUDA driver version is insufficient)") when there are none or
// the build has no CUDA.
int cuda_device_count(std::string& why);

}  // namespace dtsim::real
