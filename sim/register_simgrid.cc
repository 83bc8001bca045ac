// Registers the SimGrid engine by name (core/exec/engine_registry.h), linked: for the programs
// that link SimGrid (the tests, the GUI). The dtsim program registers it on demand instead
// (simgrid_on_demand.cc). Compiled into each program through the dtsim_engines target, never
// into a static library the linker could drop.
#include "core/exec/engine_registry.h"
#include "sim/simgrid_executor.h"

namespace {

const bool kRegistered = dtsim::register_engine(
    {"simgrid", dtsim::sim::kSimGridEngineDescription,
     [](const dtsim::EngineSettings& s) -> std::unique_ptr<dtsim::Executor> {
       return std::make_unique<dtsim::sim::SimGridExecutor>(dtsim::sim::simgrid_options(s));
     }});

}  // namespace
