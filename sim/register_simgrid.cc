// Registers the SimGrid engine by name (core/exec/engine_registry.h). Compiled into every program
// through the dtsim_engines target, never into a static library the linker could drop.
#include "core/exec/engine_registry.h"
#include "sim/simgrid_executor.h"

namespace {

const bool kRegistered = dtsim::register_engine(
    {"simgrid",
     "SimGrid discrete-event simulation: link contention, topology and overlap emerge from the "
     "platform; fidelity chunk, collective or auto",
     [](const dtsim::Scenario& s) -> std::unique_ptr<dtsim::Executor> {
       return std::make_unique<dtsim::sim::SimGridExecutor>(
           dtsim::sim::SimGridOptions{s.simulate.fidelity, s.training.precision});
     }});

}  // namespace
