// The CPU back end's entry points (MPI + Eigen): the MPI control channel, the executor and the
// CPU calibration. Plain C++ declarations, so real/backends.cc needs no MPI header.
#pragma once

#include <memory>

#include "core/exec/executor.h"
#include "core/hardware/profile.h"
#include "real/backends.h"
#include "real/channel.h"
#include "real/launch.h"
#include "real/real_executor.h"

namespace dtsim::real::cpu {

// MPI_Init_thread(MPI_THREAD_MULTIPLE) on first use, MPI_Finalize at exit.
std::unique_ptr<Channel> make_mpi_channel(const LaunchInfo& launch, Seconds timeout);

// `channel` must be the MPI channel.
std::unique_ptr<Executor> make_executor(Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options);

HardwareProfile calibrate(Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options);

}  // namespace dtsim::real::cpu
