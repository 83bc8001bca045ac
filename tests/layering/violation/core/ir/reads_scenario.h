// A header of core/ir that includes core/scenario: below the driver in the old stage order, but
// dtsim_ir links only dtsim_base, so the link graph refuses it (layering_rejects_upward_include
// in tests/CMakeLists.txt expects both this and core/base/bad.h to be named).
#pragma once
#include "core/scenario/scenario.h"
