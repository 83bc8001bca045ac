// The engine names a scenario may choose (`simulate.engine`, `--engine`). The engine registry
// (core/exec/engine_registry.h) adds each engine here when it registers it, so the schema's
// choices, the generated reference and the command line's help read one list; the scenario stage
// keeps only the names, never the engines.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

struct EngineChoice {
  std::string name;         // "simgrid"
  std::string description;  // one line for --help and `dtsim catalog engines`
};

// Adds a name (a second add of the same name replaces its description).
void add_engine_choice(EngineChoice choice);
// The names, sorted.
std::vector<std::string> engine_choices();
std::vector<EngineChoice> engine_choice_list();

}  // namespace dtsim
