// Renders the scenario schema as the Markdown reference in docs/scenario-reference.md.
// A test compares the file with this output, so the documentation cannot drift from the parser.
#pragma once

#include <string>

namespace dtsim {

std::string render_scenario_reference_markdown();

}  // namespace dtsim
