// The real-mode functions of real/backends.h for the dtsim program, which does not link MPI, the
// CUDA runtime or NCCL: each call goes to the same function in the module
// libdtsim_real_backends.so (backends_module.h), loaded on the first call. Loading them took
// about 10 ms of every dtsim process (bench/results/startup.md). The module is opened with its
// symbols global, as Open MPI's own plugins resolve MPI's symbols from the process.
#include "core/base/module_loader.h"
#include "real/backends_module.h"

namespace dtsim::real {
namespace {

template <class F>
F* entry(const char* name) {
  return module_entry<F>(kRealBackendsModule, "the real-mode back ends, MPI, CUDA and NCCL", name,
                         ModuleSymbols::kGlobal);
}

}  // namespace

std::unique_ptr<Channel> make_channel(const LaunchInfo& launch, Backend backend, Seconds timeout) {
  std::unique_ptr<Channel> channel;
  entry<decltype(dtsim_real_make_channel)>("dtsim_real_make_channel")(&launch, backend,
                                                                      timeout.value(), &channel);
  return channel;
}

std::unique_ptr<Executor> make_executor(Backend backend, Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options) {
  std::unique_ptr<Executor> executor;
  entry<decltype(dtsim_real_make_executor)>("dtsim_real_make_executor")(backend, &channel, &launch,
                                                                        &options, &executor);
  return executor;
}

HardwareProfile calibrate(Backend backend, Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options) {
  HardwareProfile profile;
  entry<decltype(dtsim_real_calibrate)>("dtsim_real_calibrate")(backend, &channel, &launch,
                                                                &options, &profile);
  return profile;
}

int cuda_device_count(std::string& why) {
  int count = 0;
  entry<decltype(dtsim_real_cuda_device_count)>("dtsim_real_cuda_device_count")(&why, &count);
  return count;
}

}  // namespace dtsim::real
