// Small helpers for the models tests: sums over a ModelGraph's kernels.
#pragma once

#include <string>
#include <vector>

#include "core/ir/model_graph.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::models::testing {

// GEMM + attention FLOPs of a kernel list (the model FLOPs of core/ir/model_graph.h).
inline double model_flops(const std::vector<Kernel>& kernels) {
  double f = 0;
  for (const Kernel& k : kernels)
    if (k.kind == KernelKind::kGemm || k.kind == KernelKind::kAttention) f += k.flops.value();
  return f;
}

inline double forward_model_flops(const ModelGraph& g) {
  double f = 0;
  for (const Layer& l : g.layers) f += model_flops(l.forward);
  return f;
}

inline double backward_model_flops(const ModelGraph& g) {
  double f = 0;
  for (const Layer& l : g.layers) f += model_flops(l.backward);
  return f;
}

// Multiply-accumulates of one sample's forward pass (2 FLOPs each), as torchvision reports.
inline double forward_macs_per_sample(const ModelGraph& g) {
  return forward_model_flops(g) / 2 / g.micro_batch_size;
}

inline const Layer* find_layer(const ModelGraph& g, const std::string& name) {
  for (const Layer& l : g.layers)
    if (l.name == name) return &l;
  return nullptr;
}

inline ModelGraph build_preset(const std::string& name, int micro_batch = 1,
                               double bytes_per_element = 2) {
  const ModelSpec* spec = find_preset(name);
  if (!spec) return {};
  return build_model(*spec, BuildOptions{micro_batch, bytes_per_element});
}

}  // namespace dtsim::models::testing
