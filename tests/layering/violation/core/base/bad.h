// A header of the lowest stage that includes a higher one: tests/CMakeLists.txt checks that
// cmake/check_layering.cmake rejects this tree (layering_rejects_upward_include).
#pragma once
#include "sim/platform.h"
