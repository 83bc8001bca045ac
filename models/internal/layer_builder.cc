#include "models/internal/layer_builder.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace dtsim::models::internal {

LayerBuilder::LayerBuilder(std::string name, std::string kind, double bytes_per_element)
    : element_bytes_(bytes_per_element) {
  layer_.name = std::move(name);
  layer_.kind = std::move(kind);
}

void LayerBuilder::matmul(const std::string& name, KernelKind kind, double flops, double a_elements,
                          double b_elements, double c_elements, std::string_view grad_a,
                          std::string_view grad_b, GemmShape shape, TrafficClass forward_traffic,
                          TrafficClass backward_traffic) {
  const Bytes traffic((a_elements + b_elements + c_elements) * element_bytes_);
  const GemmShape da{shape.batch, shape.m, shape.k, shape.n};
  const GemmShape db{shape.batch, shape.k, shape.n, shape.m};
  auto kernel = [&](std::string kernel_name, GemmShape s, TrafficClass c) {
    Kernel k{std::move(kernel_name), kind, Flops(flops), traffic};
    k.shape = s;
    k.traffic = c;
    return k;
  };
  layer_.forward.push_back(kernel(name, shape, forward_traffic));
  // Pushed in reverse so that finish()'s reversal yields grad_a first, then grad_b.
  layer_.backward.push_back(kernel(name + "." + std::string(grad_b), db, backward_traffic));
  layer_.backward.push_back(kernel(name + "." + std::string(grad_a), da, backward_traffic));
}

void LayerBuilder::linear(const std::string& name, double m, double k, double n, bool bias) {
  matmul(name, KernelKind::kGemm, 2 * m * k * n, m * k, k * n, m * n, "dgrad", "wgrad",
         GemmShape{1, m, n, k});
  add_parameters(k * n + (bias ? n : 0));
}

void LayerBuilder::elementwise(const std::string& name, double forward_bytes, double backward_bytes,
                               TrafficClass forward_traffic, TrafficClass backward_traffic) {
  layer_.forward.push_back({name, KernelKind::kElementwise, Flops(0), Bytes(forward_bytes)});
  layer_.forward.back().traffic = forward_traffic;
  if (backward_bytes > 0) {
    backward_only(name, backward_bytes);
    layer_.backward.back().traffic = backward_traffic;
  }
}

void LayerBuilder::backward_only(const std::string& name, double bytes) {
  layer_.backward.push_back({name + ".backward", KernelKind::kElementwise, Flops(0), Bytes(bytes)});
}

void LayerBuilder::operation(const std::string& name, double bytes, int launches, bool backward) {
  if (backward)
    backward_only(name, bytes);
  else
    layer_.forward.push_back({name, KernelKind::kElementwise, Flops(0), Bytes(bytes)});
  (backward ? layer_.backward : layer_.forward).back().launches = launches;
}

void LayerBuilder::communication(const std::string& name, CommGroup group, CommPattern forward,
                                 double forward_bytes, CommPattern backward,
                                 double backward_bytes) {
  if (forward_bytes > 0)
    layer_.forward.push_back(
        {name, KernelKind::kCommunication, Flops(0), Bytes(forward_bytes), group, forward});
  if (backward_bytes > 0)
    layer_.backward.push_back({name + ".backward", KernelKind::kCommunication, Flops(0),
                               Bytes(backward_bytes), group, backward});
}

void LayerBuilder::set_load_factor_since(size_t forward_mark, size_t backward_mark, double factor) {
  auto mark = [factor](std::vector<Kernel>& ks, size_t from) {
    for (size_t i = from; i < ks.size(); ++i)
      if (ks[i].kind != KernelKind::kCommunication) ks[i].load_factor = factor;
  };
  mark(layer_.forward, forward_mark);
  mark(layer_.backward, backward_mark);
}

void LayerBuilder::order_column_parallel_backward(size_t mark) {
  // The list is in reverse execution order until finish(); work in execution order.
  std::vector<Kernel> segment(layer_.backward.rbegin(),
                              layer_.backward.rend() - static_cast<std::ptrdiff_t>(mark));
  std::vector<Kernel> regather, input_grad, collective, weight_grad;
  for (Kernel& k : segment) {
    const bool is_comm = k.kind == KernelKind::kCommunication;
    if (is_comm && k.pattern == CommPattern::kAllGather)
      regather.push_back(std::move(k));
    else if (is_comm)
      collective.push_back(std::move(k));
    else if (k.kind == KernelKind::kGemm && k.name.ends_with(".wgrad"))
      weight_grad.push_back(std::move(k));
    else
      input_grad.push_back(std::move(k));
  }
  std::vector<Kernel> ordered;
  for (auto* part : {&regather, &input_grad, &collective, &weight_grad})
    for (Kernel& k : *part) ordered.push_back(std::move(k));
  layer_.backward.resize(mark);
  layer_.backward.insert(layer_.backward.end(), ordered.rbegin(), ordered.rend());
}

void LayerBuilder::mark_last_selective() {
  layer_.selective_recompute.push_back(layer_.forward.back());
}

void LayerBuilder::stash(const std::string& tensor, double bytes, StashKind kind) {
  const auto [it, inserted] = stash_.try_emplace(tensor, Stashed{bytes, kind});
  // A second stash of one name must be the same tensor; anything else is two tensors that
  // were given one name by mistake, and one of them would go uncounted.
  assert(inserted || (it->second.bytes == bytes && it->second.kind == kind));
  (void)inserted;
}

void LayerBuilder::forget(const std::string& tensor) {
  stash_.erase(tensor);
}

Layer LayerBuilder::finish() {
  std::reverse(layer_.backward.begin(), layer_.backward.end());
  double all = 0;
  double kept = 0;
  for (const auto& [name, t] : stash_) {
    all += t.bytes;
    if (t.kind == StashKind::kKept) kept += t.bytes;
  }
  layer_.activation_bytes = Bytes(all);
  layer_.activation_bytes_selective = layer_.selective_recompute.empty() ? Bytes(all) : Bytes(kept);
  layer_.activation_bytes_full = layer_.recomputable ? Bytes(input_bytes_) : Bytes(all);
  return std::move(layer_);
}

}  // namespace dtsim::models::internal
