// The entry point of the SimGrid engine module (libdtsim_simgrid_engine.so), which the dtsim
// program loads on demand (simgrid_on_demand.cc, core/base/module_loader.h). The module holds
// the SimGrid executor and its own copy of what it uses below it, linked with every library
// symbol kept local (-Wl,--exclude-libs,ALL), so that it never resolves to the program's copy.
#include "sim/simgrid_engine_module.h"

#include "sim/simgrid_executor.h"

extern "C" dtsim::Executor* dtsim_simgrid_engine_create(const dtsim::sim::SimGridOptions* options) {
  return new dtsim::sim::SimGridExecutor(*options);
}
