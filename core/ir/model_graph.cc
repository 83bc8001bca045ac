#include "core/ir/model_graph.h"

namespace dtsim {

double ModelGraph::parameters() const {
  double p = 0;
  for (const auto& l : layers) p += l.parameters;
  return p;
}

Flops ModelGraph::model_flops_per_micro_batch() const {
  Flops f{0};
  auto add = [&f](const std::vector<Kernel>& ks) {
    for (const auto& k : ks)
      if ((k.kind == KernelKind::kGemm || k.kind == KernelKind::kAttention) && !k.recomputation)
        f += k.flops;
  };
  for (const auto& l : layers) {
    add(l.forward);
    add(l.backward);
  }
  return f;
}

}  // namespace dtsim
