// How dtsim's JSON writes numbers: a whole value as an integer (memory_bytes 85899345920, not
// 85899345920.0), so that a count reads as one; fractions and non-whole figures stay floats.
// Every verb's JSON (simulate, collective, plan, catalog) writes its numbers through this.
#pragma once

#include <nlohmann/json.hpp>

namespace dtsim {

// Every float in `j` (recursively) that is whole and exactly representable (|v| <= 2^53)
// becomes an integer.
void whole_numbers_as_integers(nlohmann::json& j);

// One number, as whole_numbers_as_integers writes it.
nlohmann::json as_json_number(double v);

}  // namespace dtsim
