// Engines by name. An engine registers once (a factory and a one-line description) and from then
// on appears in the scenario schema's `simulate.engine` choices, in `--engine`, in `dtsim --help`
// and in `dtsim catalog engines`, and the driver can build it: nothing else needs editing.
//
// Contract:
// - register_engine() is safe to call from a static initializer. The built-in engines register
//   that way from core/exec/register_analytic.cc and sim/register_simgrid.cc, which the
//   `dtsim_engines` target compiles into every program that links the driver, so no linker ever
//   drops a registration.
// - make_engine() builds a fresh Executor for one run from the settings an engine may read
//   (EngineSettings, not the whole scenario: the Job and the Cluster carry the rest); an unknown
//   name is an InputError naming the registered ones.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/dtype.h"
#include "core/config/config.h"
#include "core/config/engine_choices.h"
#include "core/exec/executor.h"

namespace dtsim {

// What an engine reads of the scenario.
struct EngineSettings {
  FidelitySetting fidelity = FidelitySetting::kAuto;  // simulate.fidelity
  DType precision = DType::kBf16;                     // training.precision: which peak rate
};
inline EngineSettings engine_settings(const Scenario& scenario) {
  return EngineSettings{scenario.simulate.fidelity, scenario.training.precision};
}

using EngineFactory = std::function<std::unique_ptr<Executor>(const EngineSettings&)>;

struct EngineInfo {
  std::string name;
  std::string description;
  EngineFactory make;
};

// Returns true, so that `static const bool registered = register_engine(...)` registers at load.
bool register_engine(EngineInfo info);
std::vector<EngineInfo> registered_engines();
std::unique_ptr<Executor> make_engine(const std::string& name, const EngineSettings& settings);

}  // namespace dtsim
