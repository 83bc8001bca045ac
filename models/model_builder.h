// build_model: turns a ModelSpec into the layer graph the parallel strategies consume.
//
// Contract:
// - The graph describes ONE micro-batch of b samples on one replica, or on one rank of its
//   tensor-parallel group (BuildOptions::tensor_parallel; core/ir/model_graph.h): per layer,
//   forward and backward kernels with FLOPs and device-memory bytes, parameter count, and the
//   activation bytes stashed for backward under each recompute setting. Strategies place and
//   replicate it; tensor parallelism is the one split that changes the layers themselves, so it is
//   built here.
// - FLOP accounting (Narayanan et al. 2021, section 5.1): a GEMM (m×k)·(k×n) costs 2mkn; every
//   GEMM and attention kernel appears once forward and twice backward (input gradient and
//   weight/operand gradient) with the same FLOPs, so backward is exactly 2× forward.
//   Elementwise kernels (norms, softmax, dropout, activations, residual adds, embedding
//   lookups, pooling, the loss) carry 0 FLOPs and bytes = elements read + written × element
//   size; the element counts are documented next to each kernel in the .cc files.
// - Activation bytes follow Korthikanti et al. 2022, section 4: 16-bit tensors are scaled by
//   BuildOptions::activation_bytes_per_element, dropout masks are 1 byte per element, and the
//   fp32 loss keeps 4-byte probabilities. A layer counts its input and every intermediate that
//   a backward kernel reads, each tensor once; it does not count its output, which is the next
//   layer's input.
// - Layers: transformers give "embedding", "block.0".."block.{l-1}" (recomputable),
//   "final_norm" (not BERT, which is post-norm) and "lm_head"; CNNs and MLPs give one layer per
//   block, documented in cnn.cc and mlp.cc.
// - Throws InputError (key paths "model.<field>" and "training.micro_batch_size") when
//   check_spec(spec) is not empty or micro_batch_size < 1. Never asserts on input.
// Thread safety: pure function.
#pragma once

#include <optional>

#include "core/ir/model_graph.h"
#include "models/model_spec.h"

namespace dtsim::models {

struct BuildOptions {
  int micro_batch_size = 1;  // samples per micro-batch, b
  // Bytes of one stashed activation element: 2 for fp16/bf16 training (the default,
  // Korthikanti et al. 2022), 4 for fp32. GEMM operand traffic uses the same size.
  double activation_bytes_per_element = 2;
  // One shard of a Megatron-LM tensor-parallel group of this size (transformers only; other
  // families ignore it): GEMMs, attention heads, the MLP width and the vocabulary are split
  // t ways, and kCommunication kernels mark the group's collectives (Shoeybi et al. 2019;
  // Korthikanti et al. 2022). With sequence_parallel the norms, dropouts and residuals are
  // split along the sequence too, and each all-reduce becomes a reduce-scatter + all-gather.
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  // Context parallelism (Megatron-LM's cp): each rank holds s/cp tokens of every sequence and
  // all-gathers the keys and values of the others for attention (and reduce-scatters their
  // gradients). Expert parallelism: each rank holds E/ep experts and exchanges routed tokens
  // with all-to-alls; experts are not split by tensor parallelism then (expert TP = 1).
  int context_parallel = 1;
  int expert_parallel = 1;
  // FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023): one fused kernel that never
  // writes the a·s² scores, so nothing of that size is stashed or streamed; its backward
  // recomputes the scores (5 matrix products against the forward's 2).
  bool flash_attention = false;
  // FP8 training with Transformer Engine (training.precision fp8): the transformer blocks' GEMM
  // inputs and output gradients get TE's FP8 cast-transpose kernels, and the pre-norms fused
  // into the QKV and fc1 GEMMs write FP8 (models/transformer.cc). Tensors stay 16-bit
  // (activation_bytes_per_element); the per-step FP8 kernels (weight casts, amax reductions)
  // are the strategy's (core/strategy/parallel_step.cc).
  bool fp8 = false;
  // Mixture-of-experts kernels (TrainingConfig): fused token permutation and router, and the
  // busiest expert-parallel rank's load over the mean (nullopt: uniformly random routing's
  // expected maximum, random_routing_load_factor below).
  bool moe_permute_fusion = true;
  bool moe_router_fusion = true;
  std::optional<double> moe_load_imbalance = std::nullopt;

  bool operator==(const BuildOptions&) const = default;
};

ModelGraph build_model(const ModelSpec& spec, const BuildOptions& options);

// The expected routed tokens of the busiest of `expert_parallel` ranks over the mean, per MoE
// layer and micro-batch, when each of tokens_per_rank x expert_parallel tokens picks top_k
// distinct experts of `experts` uniformly at random (each rank holding experts / expert_parallel
// of them): 1 + sqrt(ep / (ep - 1)) x e_ep x sigma / mu, the normal approximation to the
// rank counts (a hypergeometric share of each token's top_k picks, counts summing to the total)
// with e_ep the expected maximum of ep standard normals (Tippett 1925). 1 when ep is 1 or
// every expert is picked.
double random_routing_load_factor(double tokens_per_rank, int experts, int top_k,
                                  int expert_parallel);

// The expected maximum of n independent standard normal variables: the integral of
// x n phi(x) Phi(x)^(n-1) (Tippett 1925: 0.5642 for n = 2, 1.4236 for n = 8).
double expected_max_of_normals(int n);

// The ModelShape build_model() records for a spec (after resolve_spec()).
ModelShape shape_of(const ModelSpec& spec);

}  // namespace dtsim::models
