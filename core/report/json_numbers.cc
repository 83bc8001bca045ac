#include "core/report/json_numbers.h"

#include <cmath>
#include <cstdint>

namespace dtsim {

nlohmann::json as_json_number(double v) {
  constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) <= kLargestExactInteger)
    return static_cast<int64_t>(v);
  return v;
}

void whole_numbers_as_integers(nlohmann::json& j) {
  if (j.is_structured()) {
    for (auto& v : j) whole_numbers_as_integers(v);
    return;
  }
  if (j.is_number_float()) j = as_json_number(j.get<double>());
}

}  // namespace dtsim
