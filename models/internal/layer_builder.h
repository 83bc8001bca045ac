// LayerBuilder: the bookkeeping shared by the transformer, CNN and MLP builders.
//
// Contract (private to models/):
// - Forward kernels are recorded in execution order. Backward kernels are recorded alongside
//   their forward kernel and reversed by finish(), because backward walks the layer in reverse.
// - matmul() records one forward kernel and two backward kernels of the same FLOPs and the
//   same traffic |A|+|B|+|C| elements (each backward product reads the output gradient and one
//   operand and writes the other operand's gradient), so backward FLOPs are exactly 2x forward.
// - stash() counts a tensor kept for backward once per name, however many kernels read it;
//   tensors flagged kAttentionCore are the ones selective recompute drops (Korthikanti et al.
//   2022, section 5). forget() drops a tensor that turned out to be the layer's output, which
//   the next layer counts as its input.
// - Sizes are doubles: element counts of 1e20 and more are exact enough and never overflow.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/ir/model_graph.h"

namespace dtsim::models::internal {

enum class StashKind { kKept, kAttentionCore };

class LayerBuilder {
 public:
  LayerBuilder(std::string name, std::string kind, double bytes_per_element);

  // Size in bytes of one 16-bit (or fp32, per BuildOptions) activation or weight element.
  double element_bytes() const { return element_bytes_; }

  // C = A·B with `flops` forward FLOPs; a/b/c_elements are the operand sizes in elements.
  // Backward kernels are "<name>.<grad_a>" (dA = dC·Bᵀ) and "<name>.<grad_b>" (dB = Aᵀ·dC).
  // `shape` is the forward product (m x k)·(k x n); backward's dA = dC·Bᵀ is (m x n)·(n x k)
  // and dB = Aᵀ·dC is (k x m)·(m x n).
  void matmul(const std::string& name, KernelKind kind, double flops, double a_elements,
              double b_elements, double c_elements, std::string_view grad_a = "dgrad",
              std::string_view grad_b = "wgrad", GemmShape shape = {},
              TrafficClass forward_traffic = TrafficClass::kStreaming,
              TrafficClass backward_traffic = TrafficClass::kStreaming);
  // A dense layer on m rows: (m×k)·(k×n), 2mkn FLOPs (Narayanan et al. 2021, section 5.1);
  // adds k·n weights and n biases when `bias`.
  void linear(const std::string& name, double m, double k, double n, bool bias);
  // An elementwise kernel: 0 FLOPs and the given device-memory traffic in bytes.
  // `*_traffic`: which measured memory efficiency prices each pass (core/base/traffic_class.h).
  void elementwise(const std::string& name, double forward_bytes, double backward_bytes,
                   TrafficClass forward_traffic = TrafficClass::kStreaming,
                   TrafficClass backward_traffic = TrafficClass::kStreaming);
  // A kernel that only backward has (gradient accumulation where a tensor has two consumers).
  void backward_only(const std::string& name, double bytes);
  // One framework operation that runs as `launches` back-to-back elementwise kernels (and stream
  // copies) moving `bytes` in all (Kernel::launches): in forward, or with `backward` in backward
  // at this point's mirror, named "<name>.backward".
  void operation(const std::string& name, double bytes, int launches, bool backward = false);
  // A communication point of a tensor-parallel shard: the forward collective (skipped when
  // forward_bytes is 0) and, at the mirror position in backward, the backward one.
  void communication(const std::string& name, CommGroup group, CommPattern forward,
                     double forward_bytes, CommPattern backward, double backward_bytes);
  // A kernel recorded as is (for fused kernels whose backward is not two GEMMs).
  void forward_kernel(Kernel k) { layer_.forward.push_back(std::move(k)); }
  void backward_kernel(Kernel k) { layer_.backward.push_back(std::move(k)); }
  // Megatron-LM's backward order for the column-parallel GEMMs recorded since `mark` (a size of
  // the backward list taken before their f operator): the sequence-parallel re-gather of the
  // input first, then the input-gradient kernels (casts, dgrad GEMMs), then the f operator's
  // input-gradient collective, then the weight-gradient GEMMs, which only that re-gather feeds.
  // The order a framework that launches those collectives asynchronously runs them in
  // (core/strategy/parallel_step.cc overlaps them with the GEMM that follows); a serial
  // schedule's time does not depend on it.
  void order_column_parallel_backward(size_t mark);
  size_t backward_size() const { return layer_.backward.size(); }
  size_t forward_size() const { return layer_.forward.size(); }
  // Marks the compute kernels recorded since the two marks (sizes of the forward and backward
  // lists taken before them) as running `factor` times as long as their work: the busiest
  // rank's load over the mean (Kernel::load_factor).
  void set_load_factor_since(size_t forward_mark, size_t backward_mark, double factor);
  // Replays the most recent forward kernel under selective recompute.
  void mark_last_selective();

  void add_parameters(double count) { layer_.parameters += count; }
  void set_tied_parameters(double count) { layer_.tied_parameters = count; }
  void add_expert_parameters(double count) {
    layer_.parameters += count;
    layer_.expert_parameters += count;
  }
  void stash(const std::string& tensor, double bytes, StashKind kind = StashKind::kKept);
  void forget(const std::string& tensor);
  void set_recomputable(bool recomputable) { layer_.recomputable = recomputable; }
  // What full recompute keeps: the layer input. Ignored for layers that are not recomputable,
  // which keep everything (Megatron-LM checkpoints only the repeated blocks).
  void set_input_bytes(double bytes) { input_bytes_ = bytes; }

  Layer finish();

 private:
  struct Stashed {
    double bytes = 0;
    StashKind kind = StashKind::kKept;
  };
  Layer layer_;
  double element_bytes_;
  double input_bytes_ = 0;
  std::map<std::string, Stashed> stash_;
};

}  // namespace dtsim::models::internal
