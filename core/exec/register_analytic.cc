// Registers the analytic engine by name (core/exec/engine_registry.h). Compiled into every
// program through the dtsim_engines target, never into a static library the linker could drop.
#include "core/exec/analytic_executor.h"
#include "core/exec/engine_registry.h"

namespace {

const bool kRegistered = dtsim::register_engine(
    {"analytic",
     "closed form: the longest path through the activity graph with alpha-beta collectives and "
     "roofline kernels; instant, no contention",
     [](const dtsim::EngineSettings&) -> std::unique_ptr<dtsim::Executor> {
       return std::make_unique<dtsim::AnalyticExecutor>();
     }});

}  // namespace
