// The entry points of libdtsim_real_backends.so (backends_module.h): the linked back ends
// (backends.cc) behind a C-named interface. The module holds MPI, the CUDA runtime and NCCL, so
// that a dtsim process that runs nothing on real hardware never loads them.
#include "real/backends_module.h"

void dtsim_real_make_channel(const dtsim::real::LaunchInfo* launch, dtsim::real::Backend backend,
                             double timeout_s, std::unique_ptr<dtsim::real::Channel>* out) {
  *out = dtsim::real::make_channel(*launch, backend, dtsim::Seconds(timeout_s));
}

void dtsim_real_make_executor(dtsim::real::Backend backend, dtsim::real::Channel* channel,
                              const dtsim::real::LaunchInfo* launch,
                              const dtsim::real::RealOptions* options,
                              std::unique_ptr<dtsim::Executor>* out) {
  *out = dtsim::real::make_executor(backend, *channel, *launch, *options);
}

void dtsim_real_calibrate(dtsim::real::Backend backend, dtsim::real::Channel* channel,
                          const dtsim::real::LaunchInfo* launch,
                          const dtsim::real::CalibrateOptions* options,
                          dtsim::HardwareProfile* out) {
  *out = dtsim::real::calibrate(backend, *channel, *launch, *options);
}

void dtsim_real_cuda_device_count(std::string* why, int* out) {
  *out = dtsim::real::cuda_device_count(*why);
}
