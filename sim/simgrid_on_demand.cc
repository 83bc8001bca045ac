// Registers the SimGrid engine by name for the dtsim program, which does not link SimGrid: the
// first run that asks for the engine loads it from its module (simgrid_engine_module.h). Every
// other command, an analytic prediction included, never loads SimGrid and the ns-3 libraries it
// brings (core/base/module_loader.h, bench/results/startup.md).
#include "core/base/module_loader.h"
#include "core/exec/engine_registry.h"
#include "sim/simgrid_engine_module.h"

namespace {

const bool kRegistered = dtsim::register_engine(
    {"simgrid", dtsim::sim::kSimGridEngineDescription,
     [](const dtsim::EngineSettings& s) -> std::unique_ptr<dtsim::Executor> {
       auto* create = dtsim::module_entry<decltype(dtsim_simgrid_engine_create)>(
           dtsim::sim::kSimGridEngineModule, "the SimGrid engine", "dtsim_simgrid_engine_create");
       const dtsim::sim::SimGridOptions options = dtsim::sim::simgrid_options(s);
       return std::unique_ptr<dtsim::Executor>(create(&options));
     }});

}  // namespace
