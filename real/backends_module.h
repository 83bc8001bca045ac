// The real-mode back ends as a loadable module (libdtsim_real_backends.so): its file name and
// entry points, each the function of real/backends.h of the same name with its result returned
// through the last argument (core/base/module_loader.h explains why the dtsim program loads it
// on demand). Exceptions pass through as they do from the linked functions.
#pragma once

#include <memory>
#include <string>

#include "real/backends.h"

namespace dtsim::real {
inline constexpr const char* kRealBackendsModule = "libdtsim_real_backends.so";
}  // namespace dtsim::real

extern "C" {
void dtsim_real_make_channel(const dtsim::real::LaunchInfo* launch, dtsim::real::Backend backend,
                             double timeout_s, std::unique_ptr<dtsim::real::Channel>* out);
void dtsim_real_make_executor(dtsim::real::Backend backend, dtsim::real::Channel* channel,
                              const dtsim::real::LaunchInfo* launch,
                              const dtsim::real::RealOptions* options,
                              std::unique_ptr<dtsim::Executor>* out);
void dtsim_real_calibrate(dtsim::real::Backend backend, dtsim::real::Channel* channel,
                          const dtsim::real::LaunchInfo* launch,
                          const dtsim::real::CalibrateOptions* options,
                          dtsim::HardwareProfile* out);
void dtsim_real_cuda_device_count(std::string* why, int* out);
}
