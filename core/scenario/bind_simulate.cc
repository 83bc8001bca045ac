// The simulate section's binder: how to run the prediction.
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {

void bind_simulate(const Reader& r, SimulateConfig& sim) {
  sim.engine = r.value<std::string>("simulate.engine");
  sim.fidelity = kFidelitySettingNames.from_valid(r.value<std::string>("simulate.fidelity"));
  sim.symmetry_folding = r.value<std::string>("simulate.symmetry_folding") == "auto";
  sim.iterations = r.count("simulate.iterations").value;
  sim.seed = static_cast<uint64_t>(r.value<int64_t>("simulate.seed"));
}

}  // namespace dtsim::scenario_binding
