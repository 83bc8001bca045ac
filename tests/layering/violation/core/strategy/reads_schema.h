// A header of core/strategy that includes the YAML schema: the step builder reads the plain
// configuration of core/config, and dtsim_strategy does not link dtsim_scenario, so the link
// graph refuses it (layering_rejects_upward_include in tests/CMakeLists.txt expects it named).
#pragma once
#include "core/scenario/schema.h"
