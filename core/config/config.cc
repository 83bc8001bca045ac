#include "core/config/config.h"

#include <algorithm>
#include <sstream>

namespace dtsim {

std::string to_string(const std::array<ParallelDim, 4>& order) {
  std::string text;
  for (ParallelDim d : order)
    text += (text.empty() ? "" : "-") + std::string(kParallelDimNames.to_string(d));
  return text;
}

bool parse_placement_order(const std::string& text, std::array<ParallelDim, 4>* order) {
  std::stringstream in(text);
  std::string part;
  std::vector<ParallelDim> dims;
  while (std::getline(in, part, '-')) {
    const std::optional<ParallelDim> dim = kParallelDimNames.parse(part);
    if (!dim) return false;
    dims.push_back(*dim);
  }
  if (dims.size() != 4) return false;
  auto sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  std::copy(dims.begin(), dims.end(), order->begin());
  return true;
}

int64_t Scenario::micro_batches() const {
  int64_t per_step = training.micro_batch_size.value * parallelism.data.value;
  return per_step > 0 ? training.global_batch_size.value / per_step : 0;
}

}  // namespace dtsim
