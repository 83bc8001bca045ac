// The memory category that holds the most bytes at a peak: what simulate's, validate's, plan's
// and real mode's "does not fit" messages name.
#pragma once

#include <array>
#include <cstddef>

#include "core/ir/program.h"

namespace dtsim {

// The first of the largest when two hold the same bytes.
inline MemoryCategory largest_category(const std::array<double, kMemoryCategories>& bytes) {
  size_t largest = 0;
  for (size_t c = 1; c < bytes.size(); ++c)
    if (bytes[c] > bytes[largest]) largest = c;
  return static_cast<MemoryCategory>(largest);
}

}  // namespace dtsim
