// The CUDA + NCCL back end's entry points, as plain C++ (no CUDA types), so that real/backends.cc
// compiles with a C++ compiler and links the nvcc-built library only when CUDA was found.
#pragma once

#include <memory>
#include <string>

#include "core/exec/executor.h"
#include "core/hardware/profile.h"
#include "real/backends.h"
#include "real/channel.h"
#include "real/launch.h"
#include "real/real_executor.h"

namespace dtsim::real::cuda {

// See real/backends.h, cuda_device_count. Never throws; error 35 (no driver) is "no GPU".
int device_count(std::string& why);

// Throws dtsim::Error (exit 1) with a clear message when no device is usable.
std::unique_ptr<Executor> make_executor(Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options);

HardwareProfile calibrate(Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options);

}  // namespace dtsim::real::cuda
