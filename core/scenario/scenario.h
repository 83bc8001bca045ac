// The scenario: one training job on one cluster, as typed values with units checked.
//
// Contract (docs/design.md section 4):
// - load_scenario() reads a YAML file, applies `--set key.path=value` overrides, validates every
//   key against scenario_schema() and reports all problems at once as an InputError whose
//   diagnostics name FILE:LINE:COL and the key path. It never crashes on any input.
// - Keys for features that later work will build are accepted by the schema; a value that asks
//   for one (tensor > 1, stragglers, ...) is a "not supported yet" diagnostic, never silence.
// - Catalog names (GPUs, fabrics, networks) are resolved here; the model section is kept as
//   located raw values and resolved by models/ (core does not know the architectures).
// - Cross-key checks that need the model (TP divides heads, ...) live in models/scenario_model.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/config/config.h"
#include "core/scenario/schema.h"

namespace dtsim {

// The schema of scenario files; the single source of truth for keys, types and defaults.
const SchemaNode& scenario_schema();

// The `model` section of the schema belongs to models/, which knows the architectures and their
// bounds: models/register_model_schema.cc registers its builder at static initialisation, before
// the schema is first built (scenario_schema() throws std::logic_error when none was). A second
// registration of the same builder does nothing; a different builder, or one after the schema
// was built, is a programmer error (std::logic_error). Returns true, to initialise a static.
using ModelSchemaBuilder = SchemaNode (*)();
bool register_model_schema(ModelSchemaBuilder build);

// One --set override, "cluster.nodes=16".
struct Override {
  std::string text;
};

// Checks one override as --set would, before any scenario is loaded: the key path exists and the
// value has its type and unit. Problems go to `sink`, located at `flag` and `index` ("--vary",
// 2). Cross-checks (divisibility, memory) need the whole scenario and are not made here.
void check_override(const Override& override_text, const std::string& flag, int index,
                    DiagnosticSink& sink);

// A check that needs more than core knows (models/ checks the model section and the parallel
// sizes against the architecture); it adds diagnostics to the sink or throws InputError.
using CrossCheck = std::function<void(const Scenario&, DiagnosticSink&)>;

// What the caller will do with the scenario. A training run needs every section bound and
// checked. A cluster alone (dtsim collective) needs the cluster and simulate sections: the other
// sections, when present, are still checked against the schema (unknown keys, types, units) but
// not bound, so training-only checks such as batch divisibility do not apply, and the cross-check
// is not run. A search (dtsim plan) replaces the parallel shape, the micro-batch and the
// recompute with each candidate's: the parallelism section is checked against the schema but
// not bound (the scenario holds one GPU's shape), and the checks between the batch and the shape
// are left to each candidate's own load.
enum class LoadScope { kTraining, kCluster, kSearch };

// Throws InputError listing every problem, the cross-check's included.
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {},
                       const CrossCheck& check = {}, LoadScope scope = LoadScope::kTraining);
Scenario load_scenario_text(const std::string& yaml_text, const std::string& name = "<string>",
                            const std::vector<Override>& overrides = {},
                            const CrossCheck& check = {}, LoadScope scope = LoadScope::kTraining);

}  // namespace dtsim
