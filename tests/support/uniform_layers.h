// A synthetic layer graph for strategy tests: identical layers with round numbers, so that a
// schedule's time and memory can be computed by hand.
#pragma once

#include <string>

#include "core/ir/model_graph.h"

namespace dtsim::testing {

struct UniformLayers {
  int count = 1;
  double forward_flops = 1e12;  // one GEMM; backward is one GEMM of twice the FLOPs
  double parameters = 0;        // per layer
  double activation_bytes = 0;  // stashed per layer and micro-batch, whatever the recompute
  // Transformer-like blocks ("block.i", recomputable, pipeline-splittable, h = s = 1 so that
  // a pipeline sends 2-byte activations) rather than plain "layer.i" fc layers.
  bool blocks = false;
};

inline ModelGraph uniform_layers(const UniformLayers& u) {
  ModelGraph g;
  g.name = "uniform";
  g.shape.hidden_size = 1;
  g.shape.seq_length = 1;
  for (int i = 0; i < u.count; ++i) {
    Layer l;
    l.name = (u.blocks ? "block." : "layer.") + std::to_string(i);
    l.kind = u.blocks ? "transformer" : "fc";
    l.recomputable = u.blocks;
    l.parameters = u.parameters;
    l.forward = {Kernel{"gemm", KernelKind::kGemm, Flops(u.forward_flops), Bytes(0)}};
    l.backward = {Kernel{"gemm_grad", KernelKind::kGemm, Flops(2 * u.forward_flops), Bytes(0)}};
    l.activation_bytes = l.activation_bytes_selective = l.activation_bytes_full =
        Bytes(u.activation_bytes);
    g.layers.push_back(l);
  }
  return g;
}

}  // namespace dtsim::testing
