// Gradient buckets for data parallelism (PyTorch DDP; Li et al., VLDB 2020, "PyTorch
// Distributed"). The step itself is built in parallel_step.cc.
#include <algorithm>
#include <numeric>

#include "core/base/error.h"
#include "core/strategy/model_state.h"
#include "core/strategy/strategy.h"

namespace dtsim {

std::vector<GradientBucket> assign_gradient_buckets(const ModelGraph& model,
                                                    double grad_bytes_per_param, Bytes first_cap,
                                                    Bytes cap) {
  return assign_gradient_buckets(model, 0, static_cast<int>(model.layers.size()) - 1,
                                 grad_bytes_per_param, first_cap, cap);
}

std::vector<GradientBucket> assign_gradient_buckets(
    const ModelGraph& model, int first_layer, int last_layer, double grad_bytes_per_param,
    Bytes first_cap, Bytes cap, const std::function<double(const Layer&)>& params_of) {
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  bool has_open = false;
  for (int i = last_layer; i >= first_layer; --i) {
    const double params = params_of(model.layers[static_cast<size_t>(i)]);
    if (params <= 0) continue;
    if (!has_open) {
      open = GradientBucket{i, i, Bytes(0)};
      has_open = true;
    }
    open.first_layer = i;
    open.bytes += Bytes(params * grad_bytes_per_param);
    const Bytes limit = buckets.empty() ? first_cap : cap;
    if (open.bytes >= limit) {
      buckets.push_back(open);
      has_open = false;
    }
  }
  if (has_open) buckets.push_back(open);
  return buckets;
}

}  // namespace dtsim
