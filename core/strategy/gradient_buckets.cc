// Gradient buckets for data parallelism (PyTorch DDP; Li et al., VLDB 2020, "PyTorch
// Distributed"). The step itself is built in parallel_step.cc.
#include <algorithm>
#include <cmath>
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
    // The layer's gradient bytes fill the open bucket up to its cap; what is left opens the
    // next bucket, so a layer larger than the cap spans several buckets.
    double left = params * grad_bytes_per_param;
    while (left > 0) {
      if (!has_open) {
        open = GradientBucket{i, i, Bytes(0)};
        has_open = true;
      }
      open.first_layer = i;
      const double limit = (buckets.empty() ? first_cap : cap).value();
      const double room = limit - open.bytes.value();
      if (left < room) {
        open.bytes += Bytes(left);
        left = 0;
      } else {
        open.bytes = Bytes(limit);
        left -= room;
        buckets.push_back(open);
        has_open = false;
      }
    }
  }
  if (has_open) buckets.push_back(open);
  return buckets;
}

double gradient_bucket_count(double gradient_bytes, Bytes first_cap, Bytes cap) {
  if (gradient_bytes <= 0) return 0;
  if (gradient_bytes <= first_cap.value()) return 1;
  return 1 + std::ceil((gradient_bytes - first_cap.value()) / cap.value());
}

}  // namespace dtsim
