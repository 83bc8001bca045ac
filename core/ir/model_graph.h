// The layer graph: what a model architecture hands to the parallel strategies.
//
// Contract:
// - models/ builds a ModelGraph for one micro-batch (b samples); strategies in core/strategy
//   turn it into per-rank Programs. Nothing here knows about a particular architecture.
// - Every Kernel is one GPU kernel's worth of work for the whole micro-batch on one
//   (unsharded) replica: its FLOPs, the bytes it moves through device memory, and its kind,
//   which selects the efficiency model (roofline for elementwise, GEMM efficiency for gemm).
// - Model FLOPs (for MFU) are the FLOPs of gemm and attention kernels in forward and backward,
//   as Narayanan et al. 2021 count them; elementwise kernels carry bytes only.
// - activation_bytes is what the layer stashes for backward for one micro-batch
//   (Korthikanti et al. 2022, Table 2 for transformers).
// - A graph may describe one shard of a tensor-parallel group (models::BuildOptions): then
//   kernels, parameters and stashes are one rank's share, and kCommunication kernels mark where
//   the shard talks to its group (Megatron-LM's f/g operators), with the collective's
//   nccl-tests size in `bytes`. Strategies turn them into collectives on the right group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/enum_table.h"
#include "core/base/traffic_class.h"
#include "core/base/units.h"

namespace dtsim {

enum class KernelKind { kGemm, kAttention, kElementwise, kOptimizer, kCommunication };
inline constexpr auto kKernelKindNames =
    make_enum_table<KernelKind>({{KernelKind::kGemm, "gemm"},
                                 {KernelKind::kAttention, "attention"},
                                 {KernelKind::kElementwise, "elementwise"},
                                 {KernelKind::kOptimizer, "optimizer"},
                                 {KernelKind::kCommunication, "communication"}});
constexpr std::string_view to_string(KernelKind k) {
  return kKernelKindNames.to_string(k);
}

// The shape of a (batched) GEMM: batch products of (m x k)·(k x n). All zero when unknown; the
// cost model then applies no tile or wave quantization.
struct GemmShape {
  double batch = 0, m = 0, n = 0, k = 0;
  // Attention kernels: a fused (FlashAttention-style) kernel over batch = micro-batch x heads,
  // m = queries, n = keys, k = head dimension, and whether a causal mask lets it skip the masked
  // half of the scores (the FLOPs still count the whole square, Megatron-LM's convention).
  bool fused_attention = false;
  bool causal = false;
  bool known() const { return batch > 0 && m > 0 && n > 0 && k > 0; }
};

// For kCommunication kernels: the group and the collective.
enum class CommGroup : uint8_t { kTensor, kExpert, kContext };
enum class CommPattern : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll };

struct Kernel {
  std::string name;  // "qkv", "attention_scores", "gelu", ...
  KernelKind kind = KernelKind::kGemm;
  Flops flops{0};
  Bytes bytes{0};  // device-memory traffic (reads + writes); kCommunication: collective size
  CommGroup group = CommGroup::kTensor;
  CommPattern pattern = CommPattern::kAllReduce;
  GemmShape shape{};  // GEMM and attention kernels
  TrafficClass traffic = TrafficClass::kStreaming;
  // FLOPs that only repeat work already counted (FlashAttention's backward recomputing the
  // scores): hardware FLOPs, not model FLOPs.
  bool recomputation = false;
  // The busiest rank's share of this kernel's work over the mean (>= 1): an expert-parallel
  // rank's expert kernels wait for the rank that drew the most routed tokens, since the
  // combine all-to-all joins them all. The kernel takes load_factor times as long as its FLOPs
  // and bytes, which stay the mean rank's (model and hardware FLOPs count what runs on
  // average).
  double load_factor = 1;
  // Back-to-back launches the operation takes (a PyTorch operation that runs as several kernels
  // and stream copies, each too small to matter but for its launch): each pays the GPU's
  // per-kernel overhead, and `bytes` sums their traffic.
  int launches = 1;
};

struct Layer {
  std::string name;       // "embedding", "block.3", "conv2_1", "lm_head"
  std::string kind;       // "embedding", "transformer", "conv", "fc", "norm", "pool", "head"
  double parameters = 0;  // trainable parameter count (of this shard)
  // The part of `parameters` that are expert weights split over the expert-parallel group; their
  // gradients are reduced over the expert-data-parallel ranks only.
  double expert_parameters = 0;
  // Parameters this layer uses but another layer owns (the output head tied to the input
  // embedding): not counted in `parameters`; a pipeline keeps a copy on the last stage.
  double tied_parameters = 0;
  std::vector<Kernel> forward;
  std::vector<Kernel> backward;
  // Kernels replayed before backward under selective recompute (the attention core,
  // Korthikanti et al. 2022 section 5). Empty where the layer has no attention.
  std::vector<Kernel> selective_recompute;
  Bytes activation_bytes{0};            // stashed for backward, no recompute
  Bytes activation_bytes_selective{0};  // stashed with selective recompute
  Bytes activation_bytes_full{0};       // stashed with full recompute (the layer input)
  // Whether full recompute replays this layer's forward (true for repeated blocks; false
  // for embeddings and the output head, as Megatron-LM checkpoints only the blocks).
  bool recomputable = false;
};

// Architecture facts used by feasibility checks and by FLOP formulas.
struct ModelShape {
  std::string family;  // gpt, llama, moe, bert, resnet, vgg, inception, mlp
  int num_layers = 0;  // repeated blocks (transformer layers); for CNNs the layer count
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_query_groups = 0;
  int ffn_hidden_size = 0;
  int seq_length = 1;  // tokens per sample; 1 for models without a sequence
  int vocab_size = 0;
  int num_experts = 0;
  int top_k = 0;
};

struct ModelGraph {
  std::string name;  // preset name or "custom"
  ModelShape shape;
  int micro_batch_size = 1;
  std::vector<Layer> layers;

  double parameters() const;
  // Model FLOPs of forward + backward for this micro-batch (gemm and attention kernels).
  Flops model_flops_per_micro_batch() const;
  int64_t tokens_per_sample() const { return shape.seq_length; }
};

}  // namespace dtsim
