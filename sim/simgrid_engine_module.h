// The SimGrid engine as a loadable module: its file name and entry point (sim/CMakeLists.txt
// builds it; core/base/module_loader.h explains why).
#pragma once

#include "sim/simgrid_executor.h"

namespace dtsim::sim {
inline constexpr const char* kSimGridEngineModule = "libdtsim_simgrid_engine.so";
}  // namespace dtsim::sim

// A new SimGridExecutor with `options`; the caller owns it.
extern "C" dtsim::Executor* dtsim_simgrid_engine_create(const dtsim::sim::SimGridOptions* options);
