// Transformer graphs: GPT (Radford et al. 2019; Brown et al. 2020), Llama (Touvron et al. 2023;
// Dubey et al. 2024), Mixtral-style MoE (Jiang et al. 2024) and BERT (Devlin et al. 2019).
//
// Notation (docs/reference.md): b micro-batch, s sequence, h hidden, a heads, g key/value groups,
// f ffn width, V vocabulary, E experts, k top-k, e bytes per activation element.
// Element counts used below: N = bsh (one hidden-state tensor), N_kv = bs·(h/a)·g (K or V),
// N_s = b·a·s² (attention scores), N_f = bsf (MLP inner tensor), N_V = bsV (logits).
//
// FLOPs per block (Narayanan et al. 2021, section 5.1, generalised as Megatron-LM's
// num_floating_point_operations does for GQA, SwiGLU and MoE):
//   QKV 2bsh(h + 2h·g/a), scores 2bs²h, attention·V 2bs²h, projection 2bsh²,
//   GELU MLP 2 GEMMs of 2bshf, SwiGLU MLP 3 GEMMs of 2bshf, MoE MLP the same times k.
// For GPT (g = a, f = 4h) the forward total is 24bsh² + 4bs²h, and with the 2bshV logit GEMM
// and backward = 2x forward the step total is 72·B·s·l·h²·(1 + s/(6h) + V/(12lh)).
//
// Activation bytes per block (Korthikanti et al. 2022, section 4.1), tensor by tensor:
//   attention: norm input e·N, QKV input e·N, Q e·N, K e·N_kv, V e·N_kv, projection input e·N;
//              softmax output e·N_s; with dropout also its mask 1·N_s and output e·N_s, and
//              the 1-byte mask of the bias-dropout-add, 1·N.
//   MLP:       norm input e·N, MLP input e·N; GELU: GELU input e·N_f and fc2 input e·N_f;
//              SwiGLU: gate and up outputs 2e·N_f and down-projection input e·N_f; with
//              dropout the bias-dropout-add mask 1·N.
// GPT (e = 2, g = a, f = 4h): 34·sbh + 5·a·s²·b, Korthikanti's s·b·h·(34 + 5as/h) exactly.
// Llama (no dropout, RMSNorm, SwiGLU, GQA): e·sbh·(6 + 2g/a) + 3e·sbf + e·a·s²·b; at e = 2
// that is sbh·(12 + 4g/a) + 6·sbf + 2·a·s²·b. RMSNorm stashes what LayerNorm does (its input);
// RoPE needs no stash (a fixed rotation, its backward is the inverse rotation).
// Selective recompute drops the a·s²·b terms and replays scores, softmax, dropout and
// attention·V (Megatron-LM's checkpointed CoreAttention); full recompute keeps the block
// input e·N (2·sbh at e = 2). FlashAttention, which never stores N_s, is not modelled.
//
// Elementwise traffic in elements (× e unless marked 1-byte or fp32):
//   LayerNorm/RMSNorm fwd read N + write N, bwd read x, dy + write dx (3N);
//   softmax fwd 2·N_s, bwd 3·N_s (read y, dy; write dx);
//   dropout fwd read N + write N + 1-byte mask, bwd read dy + mask, write dx;
//   bias-dropout-add (Megatron's fused kernel) fwd read branch and residual, write out (3N) +
//   1-byte mask, bwd read dy + mask, write the branch gradient; a plain residual add is 3N
//   forward and free backward (the gradient is passed through); where a tensor has two
//   consumers, backward adds the two gradients (3N, "residual_grad_add");
//   GELU fwd 2·N_f, bwd 3·N_f; SwiGLU fwd read gate and up, write out (3·N_f), bwd read gate,
//   up, dy, write two gradients (5·N_f); RoPE reads and writes Q and K both ways;
//   embedding lookup fwd reads one row per token from each table and writes N, bwd reads dy
//   once and read-modify-writes each table's rows; cross-entropy is Megatron's unfused
//   vocab-parallel one, six fp32 passes over the logits forward and two backward, keeping the
//   fp32 probabilities (Korthikanti's 4·sbV); see cross_entropy() below.
// FP8 (BuildOptions::fp8, Transformer Engine's delayed scaling): a cast-transpose of each
// 16-bit GEMM input (e + 2 bytes per element) and of each GEMM output gradient, the fused
// pre-norms writing FP8 (1 byte) and transposing it in backward (2 bytes per element); the
// kernel inventory in docs/models.md lists every kernel with its source.
//
// MoE MLP: a router GEMM (2bshE), top-k softmax, token dispatch (each token copied to its k
// experts), one grouped GEMM per expert matrix over the k·b·s routed tokens (so every token's
// expert FFN costs k dense FFNs of FLOPs, as the task statement and Megatron-LM count it), and
// a weighted combine. Weight traffic and parameters count all E experts. Stashed: router
// input e·N, router probabilities e·bsE, expert inputs e·k·N, the expert MLP tensors above
// times k, and expert outputs e·k·N (the combine's backward needs them for the router
// gradient). Expert-parallel all-to-alls belong to the strategy, not to the graph.
//
// BERT is post-norm (Devlin et al. 2019 follows Vaswani et al. 2017): each block normalises
// after the residual add, so there is no final_norm layer; the stashed element counts are the
// same as GPT's. Its lm_head holds the masked-LM head (dense + GELU + LayerNorm + a decoder
// tied to the word embeddings with its own V biases), evaluated on all s positions as
// Megatron-LM's BERT does, and the pooler + next-sentence classifier on the first token.
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "models/internal/builders.h"
#include "models/internal/layer_builder.h"
#include "models/model_builder.h"

namespace dtsim::models::internal {
namespace {

// Model dimensions as doubles, so that products of large sizes neither overflow nor truncate.
struct Dims {
  double b = 0;   // micro-batch
  double s = 0;   // sequence length
  double h = 0;   // hidden size
  double a = 0;   // attention heads
  double kv = 0;  // key/value width: (h/a)·g
  double f = 0;   // ffn width (per expert)
  double V = 0;   // vocabulary
  double E = 0;   // experts (1 for a dense MLP)
  double k = 1;   // experts per token (1 for a dense MLP)
  double e = 2;   // bytes per activation element
  bool moe = false;
  double t = 1;        // tensor-parallel size: heads, ffn width and vocabulary are split t ways
  bool sp = false;     // sequence parallel: norms, dropouts and residuals split t ways too
  double cp = 1;       // context-parallel size: each rank holds s/cp tokens of a sequence
  double ep = 1;       // expert-parallel size: each rank holds E/ep experts
  bool flash = false;  // FlashAttention: fused attention core
  bool fp8 = false;    // Transformer Engine FP8 GEMMs (cast/transpose kernels around them)
  bool permute_fusion = true;  // MoE token permutation as one fused kernel each way
  bool router_fusion = true;   // MoE router's top-k, softmax and statistics as one kernel
  double load = 1;  // expert kernels: the busiest expert-parallel rank's load over the mean

  // Tokens of the micro-batch this rank holds (its context shard), and tensor sizes over them.
  double tokens() const { return b * s / cp; }
  double n() const { return tokens() * h; }
  double n_kv() const { return tokens() * kv; }
  // Each local query attends to all s keys of its sequence.
  double n_scores() const { return b * a * (s / cp) * s; }
  double n_ffn() const { return tokens() * f; }
  // Elements of a hidden-state tensor held by one rank outside the tensor-parallel regions
  // (the whole tensor, or its sequence shard under sequence parallelism).
  double n_seq() const { return sp ? n() / t : n(); }
  bool sharded() const { return t > 1; }
};

Dims dims_of(const ModelSpec& spec, const BuildOptions& options) {
  Dims d;
  d.b = options.micro_batch_size;
  d.s = spec.seq_length;
  d.h = spec.hidden_size;
  d.a = spec.num_attention_heads;
  // h/a is whole (check_spec), so the key/value width is an exact integer.
  d.kv = static_cast<double>(spec.hidden_size / spec.num_attention_heads) * spec.num_query_groups;
  d.f = spec.ffn_hidden_size;
  d.V = spec.vocab_size;
  d.moe = spec.num_experts >= 2;
  d.E = d.moe ? spec.num_experts : 1;
  d.k = d.moe ? spec.top_k : 1;
  d.e = options.activation_bytes_per_element;
  d.t = options.tensor_parallel;
  d.sp = options.sequence_parallel && options.tensor_parallel > 1;
  d.cp = options.context_parallel;
  d.ep = d.moe ? options.expert_parallel : 1;
  d.flash = options.flash_attention;
  d.fp8 = options.fp8;
  d.permute_fusion = options.moe_permute_fusion;
  d.router_fusion = options.moe_router_fusion;
  if (d.moe && d.ep > 1)
    d.load = options.moe_load_imbalance.value_or(random_routing_load_factor(
        d.n_seq() / d.h, spec.num_experts, spec.top_k, options.expert_parallel));
  return d;
}

class BlockBuilder {
 public:
  BlockBuilder(const ModelSpec& spec, const Dims& d, LayerBuilder& layer)
      : spec_(spec), d_(d), layer_(layer), e_(d.e) {}

  // A LayerNorm (2h parameters: gain and bias) or RMSNorm (h: gain only, Zhang and Sennrich
  // 2019) over N elements, stashing its input. With `fp8_output` the norm feeds an FP8 GEMM
  // through Transformer Engine's LayerNormLinear, whose fused norm kernel writes its output in
  // FP8 (1 byte) instead of 16 bits (TransformerEngine d0067d0da6,
  // transformer_engine/pytorch/module/layernorm_linear.py, `with_quantized_norm`, and
  // csrc/extensions/normalization.cpp, Impl::FULLY_FUSED for delayed-scaling quantizers).
  void norm(const std::string& name, const std::string& input_tensor, bool fp8_output = false) {
    const bool layer_norm = spec_.norm == Norm::kLayerNorm;
    const double out_bytes = fp8_output ? 1 : e_;
    layer_.elementwise(name, (e_ + out_bytes) * d_.n_seq(), 3 * e_ * d_.n_seq());
    layer_.add_parameters(layer_norm ? 2 * d_.h : d_.h);  // replicated on every TP rank
    layer_.stash(input_tensor, e_ * d_.n_seq());
  }

  // FP8 GEMMs under Transformer Engine's delayed scaling (Megatron-core's default recipe,
  // Megatron-LM d98e8a64dd, megatron/core/transformer/transformer_config.py `fp8_recipe`). TE
  // quantizes each GEMM operand with its scale from the previous step and records its amax in
  // the same kernel, so amax costs no extra pass here (the reductions are per step:
  // core/strategy/parallel_step.cc).
  //
  // Before a GEMM whose input is 16-bit (not a fused norm's output): one cast-transpose kernel
  // reads the input (e bytes) and writes it in FP8 row-wise for the forward GEMM and column-wise
  // (transposed) for the weight-gradient GEMM, 1 + 1 bytes (TE module/linear.py `_Linear`
  // forward: input_quantizer with rowwise and columnwise usage when backward needs the input).
  // The weights' casts run once per step (parallel_step.cc), not per micro-batch.
  void fp8_input_cast(const std::string& gemm, double elements) {
    if (!d_.fp8) return;
    layer_.elementwise(gemm + ".fp8_cast_transpose", (e_ + 2) * elements, 0);
  }

  // After recording a GEMM (so that, backward being reversed, these run before its dgrad and
  // wgrad): the output gradient's cast-transpose (read e, write FP8 row-wise for dgrad and
  // column-wise for wgrad: e + 2 bytes per element; TE linear.py `_linear_backward`,
  // grad_output_quantizer with both usages) and, for a GEMM fed by a fused FP8 norm, the
  // column-wise copy of that norm's FP8 output for wgrad, made in backward (layernorm_linear.py
  // `ln_out_total.update_usage(columnwise_usage=True)`): read 1, write 1 byte per element.
  void fp8_backward_casts(const std::string& gemm, double output_elements,
                          double norm_input_elements) {
    if (!d_.fp8) return;
    if (norm_input_elements > 0)
      layer_.backward_kernel({gemm + ".fp8_input_transpose", KernelKind::kElementwise, Flops(0),
                              Bytes(2 * norm_input_elements)});
    layer_.backward_kernel({gemm + ".fp8_grad_cast_transpose", KernelKind::kElementwise, Flops(0),
                            Bytes((e_ + 2) * output_elements)});
  }

  // The gradient of a bias that Megatron-core adds outside the GEMM (TE's `return_bias`, the
  // bias handed to its fused bias-GeLU/SwiGLU or bias-dropout-add): autograd reduces the
  // broadcast add's output gradient over the tokens, reading e·rows·width and writing e·width
  // (megatron/core/fusions/fused_bias_gelu.py `GeLUFunction.backward` returns one gradient
  // for both the input and the broadcast bias). Recorded before the fused kernel, so that it
  // runs after that kernel's backward.
  void bias_grad(const std::string& name, double rows, double width) {
    if (!spec_.linear_biases) return;
    layer_.backward_kernel({name + "_bias_grad", KernelKind::kElementwise, Flops(0),
                            Bytes(e_ * (rows * width + width))});
  }

  // The residual add after the attention or MLP branch; with dropout, Megatron-LM's fused
  // bias-dropout-add, which keeps a 1-byte mask.
  void residual(const std::string& branch) {
    // The projection's bias is added in the fused bias-dropout-add (Megatron-core
    // transformer_layer.py, `self_attn_bda` / `mlp_bda` with the bias TE returned).
    bias_grad(branch, d_.n_seq() / d_.h, d_.h);
    if (spec_.dropout) {
      layer_.elementwise(branch + "_bias_dropout_add", (3 * e_ + 1) * d_.n_seq(),
                         (2 * e_ + 1) * d_.n_seq());
      layer_.stash(branch + "_residual_dropout_mask", d_.n_seq());
    } else {
      layer_.elementwise(branch + "_residual_add", 3 * e_ * d_.n_seq(), 0);
    }
  }

  void residual_grad_add(const std::string& branch) {
    layer_.backward_only(branch + "_residual_grad_add", 3 * e_ * d_.n_seq());
  }

  // Megatron-LM's f operator before a column-parallel GEMM: forward identity (sequence
  // parallel: all-gather of the sequence shards), backward all-reduce of the input gradient
  // (sequence parallel: reduce-scatter). Under sequence parallelism the GEMM stashed only its
  // input's shard, so backward all-gathers it again for the weight gradient
  // (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication).
  void enter_tensor_parallel(const std::string& region) {
    if (!d_.sharded()) return;
    const double bytes = e_ * d_.n();
    if (d_.sp)
      layer_.communication(region + "_sp_regather", CommGroup::kTensor, CommPattern::kAllGather, 0,
                           CommPattern::kAllGather, bytes);
    layer_.communication(region + "_tp_enter", CommGroup::kTensor, CommPattern::kAllGather,
                         d_.sp ? bytes : 0,
                         d_.sp ? CommPattern::kReduceScatter : CommPattern::kAllReduce, bytes);
  }

  // The g operator after a row-parallel GEMM: forward all-reduce of the partial sums (sequence
  // parallel: reduce-scatter), backward identity (sequence parallel: all-gather).
  void exit_tensor_parallel(const std::string& region) {
    if (!d_.sharded()) return;
    const double bytes = e_ * d_.n();
    layer_.communication(region + "_tp_exit", CommGroup::kTensor,
                         d_.sp ? CommPattern::kReduceScatter : CommPattern::kAllReduce, bytes,
                         CommPattern::kAllGather, d_.sp ? bytes : 0);
  }

  // `from_norm`: the QKV GEMM's input is the pre-norm's output (TE's LayerNormLinear).
  void attention(const std::string& input_tensor, bool from_norm) {
    const bool bias = spec_.linear_biases;
    const double t = d_.t;
    // Column-parallel QKV (each rank owns a/t heads and g/t key/value groups), the attention
    // core on those heads, and the row-parallel projection (its bias is replicated).
    // An FP8 input is cast before the f operator's all-gather, which then moves FP8 data
    // (TE's LayerNormLinear/Linear gather the quantized input); counted over the whole input.
    if (!from_norm) fp8_input_cast("qkv", d_.n());
    const size_t column_parallel_mark = layer_.backward_size();
    enter_tensor_parallel("attention");
    layer_.linear("qkv", d_.tokens(), d_.h, (d_.h + 2 * d_.kv) / t, bias);
    fp8_backward_casts("qkv", d_.tokens() * (d_.h + 2 * d_.kv) / t, from_norm ? d_.n() : 0);
    layer_.order_column_parallel_backward(column_parallel_mark);
    layer_.stash(input_tensor, e_ * d_.n_seq());
    const double n_q = d_.n() / t, n_kv = d_.n_kv() / t, n_scores = d_.n_scores() / t;
    if (spec_.positions == Positions::kRope) {
      const double qk = n_q + n_kv;
      layer_.elementwise("rope", 2 * e_ * qk, 2 * e_ * qk);
    }
    // Context parallelism: the keys and values of the other s - s/cp tokens are all-gathered
    // (forward, and again in backward), their gradients reduce-scattered (Megatron-LM's
    // all-gather context parallelism; ring attention moves the same bytes point to point).
    if (d_.cp > 1) {
      const double kv_bytes = 2 * e_ * d_.b * d_.s * d_.kv / t;
      layer_.communication("attention_cp_kv_regather", CommGroup::kContext, CommPattern::kAllGather,
                           0, CommPattern::kReduceScatter, kv_bytes);
      layer_.communication("attention_cp_kv", CommGroup::kContext, CommPattern::kAllGather,
                           kv_bytes, CommPattern::kAllGather, kv_bytes);
    }
    // Q·Kᵀ per head: (s × h/a)·(h/a × s) for b·a heads = 2bs²h FLOPs; GQA heads share K.
    const double s_local = d_.s / d_.cp;
    const double core_flops = 2 * d_.b * s_local * d_.s * d_.h / t;
    const double heads = d_.b * d_.a / t, head_dim = d_.h / d_.a;
    if (d_.flash) {
      flash_attention(core_flops, n_q, n_kv, heads, s_local, head_dim);
      return attention_output(bias, n_q);
    }
    // Batched over b·a/t heads: (s x h/a)·(h/a x s) scores, then (s x s)·(s x h/a). These
    // kernels stream the a·s² scores and were measured to reach less of the memory bandwidth
    // than a streaming kernel (TrafficClass, core/hardware/published_rates.cc).
    constexpr TrafficClass kCoreFwd = TrafficClass::kAttentionCoreForward;
    constexpr TrafficClass kCoreBwd = TrafficClass::kAttentionCoreBackward;
    layer_.matmul("attention_scores", KernelKind::kAttention, core_flops, n_q, n_kv, n_scores,
                  "dgrad_query", "dgrad_key", GemmShape{heads, s_local, d_.s, head_dim}, kCoreFwd,
                  kCoreBwd);
    layer_.mark_last_selective();
    layer_.stash("query", e_ * n_q);
    layer_.stash("key", e_ * n_kv);
    // Scale, causal mask and softmax in one kernel (Megatron-LM's scaled_masked_softmax).
    layer_.elementwise("softmax", 2 * e_ * n_scores, 3 * e_ * n_scores, kCoreFwd, kCoreBwd);
    layer_.mark_last_selective();
    layer_.stash("softmax_output", e_ * n_scores, StashKind::kAttentionCore);
    if (spec_.dropout) {
      const double bytes = (2 * e_ + 1) * n_scores;
      // Backward only applies the stored mask: a streaming kernel.
      layer_.elementwise("attention_dropout", bytes, bytes, TrafficClass::kAttentionDropoutForward,
                         TrafficClass::kStreaming);
      layer_.mark_last_selective();
      layer_.stash("attention_dropout_mask", n_scores, StashKind::kAttentionCore);
      layer_.stash("attention_dropout_output", e_ * n_scores, StashKind::kAttentionCore);
    }
    layer_.matmul("attention_v", KernelKind::kAttention, core_flops, n_scores, n_kv, n_q,
                  "dgrad_probs", "dgrad_value", GemmShape{heads, s_local, head_dim, d_.s}, kCoreFwd,
                  kCoreBwd);
    layer_.mark_last_selective();
    layer_.stash("value", e_ * n_kv);
    attention_output(bias, n_q);
  }

  // The row-parallel output projection (its bias replicated) and the g operator.
  void attention_output(bool bias, double n_q) {
    fp8_input_cast("attention_proj", n_q);
    layer_.linear("attention_proj", d_.tokens(), d_.h / d_.t, d_.h, false);
    if (bias) layer_.add_parameters(d_.h);
    layer_.stash("attention_proj_input", e_ * n_q);
    exit_tensor_parallel("attention");
    // Recorded after the g operator so that, backward being reversed, the output gradient is
    // cast before its sequence-parallel all-gather, which then sits next to the dgrad GEMM (TE
    // casts the local gradient and gathers FP8 data).
    fp8_backward_casts("attention_proj", d_.n(), 0);
  }

  // FlashAttention-2 (Dao 2023): forward reads Q, K, V and writes O and the fp32 row
  // log-sum-exp; the scores stay in on-chip memory, and attention dropout regenerates its mask
  // from the RNG state. Backward recomputes the scores and runs 5 products where the forward
  // ran 2: 2x the forward as model FLOPs (dQ, dK, dV... as for standard attention) plus 0.5x of
  // recomputation, which counts as hardware FLOPs only. Stashed: Q, K, V, O (the projection's
  // input, stashed below) and the log-sum-exp.
  void flash_attention(double core_flops, double n_q, double n_kv, double heads, double s_local,
                       double head_dim) {
    const double lse_bytes = 4 * heads * s_local;
    const double io = e_ * (2 * n_q + 2 * n_kv) + lse_bytes;
    GemmShape scores{heads, s_local, d_.s, head_dim};
    // The published attention rates (core/hardware/kernel_rates.h) are for fused kernels, and
    // GPT-style decoders mask the future (the kernel skips the masked tiles); BERT attends both
    // ways.
    scores.fused_attention = true;
    scores.causal = spec_.family != ModelFamily::kBert;
    Kernel fwd{"flash_attention", KernelKind::kAttention, Flops(2 * core_flops), Bytes(io)};
    fwd.shape = scores;
    layer_.forward_kernel(fwd);
    // Backward reads Q, K, V, O, dO and the log-sum-exp and writes dQ, dK, dV.
    const Bytes bwd_io(e_ * (4 * n_q + 4 * n_kv) + lse_bytes);
    Kernel recompute{"flash_attention.backward_recompute", KernelKind::kAttention,
                     Flops(core_flops), Bytes(0)};
    recompute.shape = scores;
    recompute.recomputation = true;
    Kernel bwd{"flash_attention.backward", KernelKind::kAttention, Flops(4 * core_flops), bwd_io};
    bwd.shape = scores;
    // finish() reverses backward: pushed so that the recomputation runs first.
    layer_.backward_kernel(bwd);
    layer_.backward_kernel(recompute);
    layer_.stash("query", e_ * n_q);
    layer_.stash("key", e_ * n_kv);
    layer_.stash("value", e_ * n_kv);
    layer_.stash("attention_logsumexp", lse_bytes);
  }

  // The MLP, dense or mixture-of-experts, in one of two layouts:
  // - tensor-parallel (dense, and MoE without expert parallelism): the f operator gathers the
  //   whole sequence, every rank runs all E experts on f/t columns, the g operator reduces;
  // - expert-parallel (Megatron-Core's all-to-all token dispatcher): the tokens stay this
  //   rank's (its sequence shard under sequence parallelism, which Megatron-LM requires with
  //   TP), are routed and sent to the ranks owning their k experts by an all-to-all, run
  //   through the E/ep local experts at full width (expert TP = 1), and come back by a second
  //   all-to-all; backward mirrors both.
  // `from_norm`: the first MLP GEMM's input is the pre-norm's output (TE's LayerNormLinear;
  // never for MoE, whose router needs the norm's output too).
  void mlp(const std::string& input_tensor, bool from_norm) {
    const bool expert_parallel = d_.moe && d_.ep > 1;
    const double tokens = expert_parallel ? d_.n_seq() / d_.h : d_.tokens();
    const double width = expert_parallel ? d_.f : d_.f / d_.t;    // MLP columns per rank
    const double copies = expert_parallel ? d_.E / d_.ep : d_.E;  // experts held (1: dense)
    const double k = d_.k;
    const double n_in = k * tokens * d_.h;  // routed copies of the MLP input
    const double n_mid = k * tokens * width;
    const size_t column_parallel_mark = layer_.backward_size();
    if (!expert_parallel) enter_tensor_parallel("mlp");
    layer_.stash(input_tensor, e_ * d_.n_seq());
    const std::string prefix = d_.moe ? "expert_" : "mlp_";
    if (d_.moe) {
      route(tokens);
      if (expert_parallel) count_tokens(tokens);
      permute(tokens);
      if (expert_parallel)
        layer_.communication("expert_dispatch", CommGroup::kExpert, CommPattern::kAllToAll,
                             e_ * n_in, CommPattern::kAllToAll, e_ * n_in);
      layer_.stash("expert_input", e_ * n_in);
    }
    // The expert kernels, from here to the combine all-to-all, run on the routed tokens a rank
    // draws: the busiest rank's load sets the pace (Dims::load).
    const size_t expert_forward_mark = layer_.forward_size();
    const size_t expert_backward_mark = layer_.backward_size();
    // One MLP matrix over the k·tokens routed rows, as `copies` grouped GEMMs of k·tokens/copies
    // rows on average. A column-parallel matrix's bias is split with its columns; a row-parallel
    // one's is whole.
    // `input`: how the FP8 input is made: cast here, shared with the previous matrix (SwiGLU's
    // up projection reads the gate's input: Megatron-core's fc1 is one GEMM of both), or the
    // fused norm's output.
    enum class Fp8Input { kCast, kShared, kNorm };
    std::pair<std::string, double> deferred_grad_cast{"", 0};
    auto matrix = [&](const std::string& name, double in, double out, bool column_parallel,
                      Fp8Input input) {
      const double rows = k * tokens;
      if (input == Fp8Input::kCast) fp8_input_cast(name, rows * in);
      layer_.matmul(name, KernelKind::kGemm, 2 * rows * in * out, rows * in, copies * in * out,
                    rows * out, "dgrad", "wgrad", GemmShape{copies, rows / copies, out, in});
      // A dense row-parallel GEMM's gradient cast is recorded after the g operator (see
      // attention_output()).
      if (column_parallel || d_.moe)
        fp8_backward_casts(name, rows * out, input == Fp8Input::kNorm ? rows * in : 0);
      else
        deferred_grad_cast = {name, rows * out};
      const double bias = !spec_.linear_biases ? 0 : column_parallel ? out : d_.h;
      if (d_.moe)
        layer_.add_expert_parameters(copies * (in * out + bias));
      else
        layer_.add_parameters(copies * (in * out + bias));
    };
    const Fp8Input first = from_norm && !d_.moe ? Fp8Input::kNorm : Fp8Input::kCast;
    // The fc1 bias goes to the fused bias-activation kernel (Megatron-core mlp.py with
    // bias_activation_fusion: bias_gelu_impl / bias_swiglu_impl), so its gradient is a
    // reduction over the routed rows; a SwiGLU fc1's bias spans gate and up (2·width).
    const double rows = k * tokens;
    if (spec_.activation == Activation::kSwiglu) {
      matrix(prefix + "gate", d_.h, width, true, first);
      matrix(prefix + "up", d_.h, width, true, Fp8Input::kShared);
      if (!d_.moe) layer_.order_column_parallel_backward(column_parallel_mark);
      bias_grad("swiglu", rows, 2 * width);
      layer_.elementwise("swiglu", 3 * e_ * n_mid, 5 * e_ * n_mid);
      layer_.stash("gate_output", e_ * n_mid);
      layer_.stash("up_output", e_ * n_mid);
      matrix(prefix + "down", width, d_.h, false, Fp8Input::kCast);
      layer_.stash("down_input", e_ * n_mid);
    } else {
      matrix(prefix + "fc1", d_.h, width, true, first);
      if (!d_.moe) layer_.order_column_parallel_backward(column_parallel_mark);
      bias_grad("gelu", rows, width);
      layer_.elementwise("gelu", 2 * e_ * n_mid, 3 * e_ * n_mid);
      layer_.stash("gelu_input", e_ * n_mid);
      matrix(prefix + "fc2", width, d_.h, false, Fp8Input::kCast);
      layer_.stash("fc2_input", e_ * n_mid);
    }
    if (expert_parallel)
      layer_.set_load_factor_since(expert_forward_mark, expert_backward_mark, d_.load);
    if (d_.moe) {
      if (expert_parallel)
        layer_.communication("expert_combine", CommGroup::kExpert, CommPattern::kAllToAll,
                             e_ * n_in, CommPattern::kAllToAll, e_ * n_in);
      unpermute(tokens);
      layer_.stash("expert_output", e_ * n_in);
    }
    if (!expert_parallel) exit_tensor_parallel("mlp");
    if (deferred_grad_cast.second > 0)
      fp8_backward_casts(deferred_grad_cast.first, deferred_grad_cast.second, 0);
  }

 private:
  // The MoE router over this rank's `tokens`: logits (a GEMM of E columns), the top-k experts
  // with a softmax over their k logits, the per-expert token counts, and the load-balancing loss
  // over the softmax of all E logits (Megatron-core's aux_loss router). Fused: one kernel each
  // way. Unfused: Megatron-core v0.9's PyTorch operations (tag core_r0.9.0,
  // megatron/core/transformer/moe/router.py aux_loss_load_balancing and moe_utils.py
  // topk_softmax_with_capacity, switch_load_balancing_loss_func, save_to_aux_losses_tracker),
  // each with the kernels PyTorch 2.5 runs it as: topk 2 (gatherTopK, a bitonic sort of the k),
  // a bf16 softmax in fp32 3 (two casts around it), histc 2 (zeros, histogram), the loss's
  // 6 small reductions and scalings; backward, the loss's 5, each softmax's casts and
  // backward, topk's zeros and scatter, and the sum of the logits' two gradients. Bytes: the
  // [tokens x E] and [tokens x k] tensors each reads and writes (fp32 4 bytes, indices 8).
  void route(double tokens) {
    const double te = tokens * d_.E, tk = tokens * d_.k;
    // Backward, last: the MLP input feeds the router and the token permutation, so autograd
    // sums its two gradients (read two, write one).
    layer_.backward_only("moe_input_grad_add", 3 * e_ * tokens * d_.h);
    // The router weight's gradient (a plain linear, not a Transformer Engine one) is added into
    // its fp32 main gradient by Megatron's gradient hook.
    layer_.operation("router_weight_grad_accumulate", (8 + e_) * d_.h * d_.E, 1, true);
    layer_.linear("router", tokens, d_.h, d_.E, false);
    if (d_.router_fusion) {
      layer_.elementwise("router_softmax_topk", 2 * e_ * te, 3 * e_ * te);
    } else {
      layer_.operation("router_logits_grad_add", 3 * e_ * te, 1,
                       true);  // top-k's and softmax's gradients
      layer_.operation("router_topk", e_ * te + 3 * (e_ + 8) * tk, 2);
      layer_.operation("router_topk", 2 * e_ * te + (e_ + 8) * tk, 2, true);
      layer_.operation("router_softmax", 2 * e_ * tk + 16 * tk, 3);
      layer_.operation("router_softmax", 2 * e_ * tk + 32 * tk, 4, true);
      layer_.operation("router_token_histogram", 8 * tk + 16 * d_.E, 2);
      layer_.operation("aux_loss_softmax", e_ * te + 12 * te, 2);
      layer_.operation("aux_loss_softmax", e_ * te + 24 * te, 3, true);
      layer_.operation("aux_loss", 4 * te, 6);
      layer_.operation("aux_loss", 0, 5, true);
    }
    layer_.stash("router_probs", e_ * te);
  }

  // Megatron-core's all-to-all dispatcher before the dispatch (token_dispatcher.py preprocess,
  // core_r0.9.0 and after): the per-expert counts again (histc: zeros, histogram), an
  // all-gather of every rank's counts over the expert-parallel group (E 8-byte counts each),
  // and the split sizes summed from them (5 small kernels) and copied to the host (4 copies).
  void count_tokens(double tokens) {
    const double tk = tokens * d_.k;
    layer_.operation("token_count_histogram", 8 * tk + 16 * d_.E, 2);
    layer_.communication("token_count_gather", CommGroup::kExpert, CommPattern::kAllGather,
                         8 * d_.E * d_.ep, CommPattern::kAllGather, 0);
    layer_.operation("token_count_splits", 16 * d_.E * d_.ep, 5 + 4);
  }

  // Each of this rank's tokens copied to its k experts' rows (the dispatch all-to-all sends
  // them). Fused: one kernel each way. Unfused: Megatron-core v0.9's moe_utils.py permute, a
  // stable argsort of the k x tokens expert indices, their division by k, and a gather of the
  // rows (torch.gather with an expanded index); backward, zeros and a scatter-add. PyTorch 2.5
  // sorts more than 4096 int64 keys with CUB's onesweep radix sort over all 64 bits: a copy,
  // an index fill, 2 memsets, a histogram, a scan and 8 passes of a memset and a sort kernel
  // (22 launches, each pass reading and writing keys and values); up to 4096 in one block
  // (arange, 2 copies and the sort: 4).
  void permute(double tokens) {
    const double rows = d_.k * tokens, n_in = rows * d_.h, n_out = tokens * d_.h;
    if (d_.permute_fusion) {
      layer_.elementwise("token_dispatch", 2 * e_ * n_in, 2 * e_ * n_in);
      return;
    }
    // PyTorch's small-sort limit (aten/src/ATen/native/cuda/Sort.h, should_use_small_sort).
    constexpr double kOneBlockSortKeys = 4096;
    if (rows > kOneBlockSortKeys)
      // 8-byte keys and values: the copy reads and writes R keys (2), the index fill writes R
      // values (1), the histogram reads the keys (1), each of the 8 passes reads and writes keys
      // and values (4); the memsets and the scan move the 8 passes' 256-bin counters, about
      // 32 KiB (CUB dispatch_radix_sort.cuh, onesweep).
      layer_.operation("token_argsort", 8 * rows * (2 + 1 + 1 + 8 * 4) + 32 * 1024, 22);
    else
      // arange writes R (1), two copies read and write R (2 + 2), the one-block sort reads and
      // writes keys and values (4).
      layer_.operation("token_argsort", 8 * rows * (1 + 2 + 2 + 4), 4);
    layer_.operation("token_index_div", 16 * rows, 1);
    layer_.operation("token_gather", 2 * e_ * n_in, 1);
    layer_.operation("token_gather", e_ * n_out + e_ * n_in + 2 * e_ * n_out, 2, true);
  }

  // The expert outputs back to their tokens, weighted by the routing probabilities and summed
  // over each token's k experts; backward also forms the probabilities' gradient, which reads
  // the expert outputs. Fused: one kernel each way. Unfused: Megatron-core v0.9's unpermute,
  // zeros and a scatter-add of the rows (reading the output it adds into), the multiply by the
  // probabilities and the sum over k; backward, the multiply's two gradients (the
  // probabilities' one a whole [tokens x k x h] product summed over h afterwards: 3 kernels)
  // and a gather for the scatter-add.
  void unpermute(double tokens) {
    const double tk = d_.k * tokens, n_in = tk * d_.h, n_out = tokens * d_.h;
    if (d_.permute_fusion) {
      layer_.elementwise("token_combine", e_ * (n_in + n_out + tk), e_ * (2 * n_in + n_out));
      return;
    }
    layer_.operation("token_unpermute_zeros", e_ * n_in, 1);
    layer_.operation("token_unpermute_scatter_add", 3 * e_ * n_in, 1);
    layer_.operation("token_unpermute_scatter_add", 2 * e_ * n_in, 1, true);
    layer_.operation("token_combine_weight", 2 * e_ * n_in + e_ * tk, 1);
    layer_.operation("token_combine_weight", 2 * e_ * n_out + 4 * e_ * n_in + e_ * tk, 3, true);
    layer_.operation("token_combine_sum", e_ * n_in + e_ * n_out, 1);
  }

  const ModelSpec& spec_;
  const Dims& d_;
  LayerBuilder& layer_;
  double e_;
};

std::string norm_name(const ModelSpec& spec) {
  return spec.norm == Norm::kLayerNorm ? "layernorm" : "rmsnorm";
}

Layer build_block(const ModelSpec& spec, const Dims& d, int index) {
  LayerBuilder layer("block." + std::to_string(index), "transformer", d.e);
  layer.set_recomputable(true);
  layer.set_input_bytes(d.e * d.n_seq());
  BlockBuilder block(spec, d, layer);
  const std::string norm = norm_name(spec);
  if (spec.family == ModelFamily::kBert) {
    // Post-norm: x -> attention -> add -> norm -> MLP -> add -> norm.
    block.residual_grad_add("attention");
    block.attention("block_input", false);
    block.residual("attention");
    block.norm("attention_output_" + norm, "attention_norm_input");
    block.residual_grad_add("mlp");
    block.mlp("mlp_input", false);
    block.residual("mlp");
    block.norm("output_" + norm, "mlp_norm_input");
  } else {
    // Pre-norm (GPT-2 onwards, Llama): x -> norm -> attention -> add -> norm -> MLP -> add.
    // The backward-only gradient adds are recorded first so they run last in each half.
    // Megatron-core's TE layer spec (megatron/core/models/gpt/gpt_layer_specs.py,
    // get_gpt_layer_with_transformer_engine_spec) fuses each pre-norm into the GEMM after it
    // (TELayerNormColumnParallelLinear for QKV and a dense fc1); a MoE layer keeps a separate
    // pre-MLP norm (TENorm) for the router and the experts.
    const bool dense = spec.num_experts < 2;
    block.residual_grad_add("attention");
    block.norm("input_" + norm, "block_input", d.fp8);
    block.attention("attention_input", true);
    block.residual("attention");
    block.residual_grad_add("mlp");
    block.norm("post_attention_" + norm, "attention_output", d.fp8 && dense);
    block.mlp("mlp_input", dense);
    block.residual("mlp");
  }
  return layer.finish();
}

Layer build_embedding(const ModelSpec& spec, const Dims& d) {
  LayerBuilder layer("embedding", "embedding", d.e);
  const double e = d.e;
  double tables = 1;
  // Vocabulary-parallel word embedding: each rank holds V/t rows and outputs a partial sum that
  // the group all-reduces (sequence parallel: reduce-scatters); other tables are replicated.
  layer.add_parameters(d.V / d.t * d.h);
  if (spec.positions == Positions::kLearned) {
    layer.add_parameters(d.s * d.h);
    tables += 1;
  }
  if (spec.type_vocab_size > 0) {
    layer.add_parameters(static_cast<double>(spec.type_vocab_size) * d.h);
    tables += 1;
  }
  // Lookup (and sum) of one row per token from each table; backward scatter-adds dy into
  // each table's gradient rows. Token ids are not counted (8 bytes per token, under 0.1%).
  layer.elementwise("embedding_lookup", (tables + 1) * e * d.n(), (1 + 2 * tables) * e * d.n());
  // Megatron-core's VocabParallelEmbedding (megatron/core/tensor_parallel/layers.py, forward)
  // zeroes the rows of tokens outside this rank's V/t slice, (t-1)/t of them, before the
  // reduction; backward's gradient goes through the same masked write. e bytes per element.
  if (d.sharded()) {
    const double masked = e * d.n() * (d.t - 1) / d.t;
    layer.elementwise("embedding_vocab_mask", masked, masked);
  }
  // LanguageModelEmbedding.forward (megatron/core/models/common/embeddings/
  // language_model_embedding.py) turns [b, s, h] into Megatron's [s, b, h] layout with
  // transpose(0, 1).contiguous(): a copy of N elements (read and write), and its gradient the
  // copy back before the embedding's backward.
  layer.elementwise("embedding_transpose", 2 * e * d.n(), 2 * e * d.n());
  // The word embedding's weight gradient: F.embedding's backward writes a dense V/t x h
  // gradient (zero-filled, then the scatter-add counted in embedding_lookup), which Megatron's
  // gradient hook adds into the fp32 main_grad buffer (megatron/core/distributed/
  // distributed_data_parallel.py, `_make_backward_post_hook`: param.main_grad.add_(param.grad)):
  // write e, read e, read and write 4 bytes per weight. fp32 main gradients are Megatron's
  // default for bf16 (and fp8) training; fp16 would read and write 2 instead.
  const double word_rows = d.V / d.t * d.h;
  layer.backward_kernel({"embedding_weight_grad_accumulate", KernelKind::kElementwise, Flops(0),
                         Bytes((2 * e + 8) * word_rows)});
  if (d.sharded())
    layer.communication("embedding_tp_reduce", CommGroup::kTensor,
                        d.sp ? CommPattern::kReduceScatter : CommPattern::kAllReduce, e * d.n(),
                        CommPattern::kAllGather, d.sp ? e * d.n() : 0);
  if (spec.family == ModelFamily::kBert) {
    layer.elementwise("embedding_layernorm", 2 * e * d.n_seq(), 3 * e * d.n_seq());
    layer.add_parameters(2 * d.h);
    layer.stash("embedding_sum", e * d.n_seq());
  }
  if (spec.dropout) {
    // Korthikanti et al. 2022, section 4.3: the input embedding keeps its 1-byte dropout mask.
    const double bytes = (2 * e + 1) * d.n_seq();
    layer.elementwise("embedding_dropout", bytes, bytes);
    layer.stash("embedding_dropout_mask", d.n_seq());
  }
  return layer.finish();
}

Layer build_final_norm(const ModelSpec& spec, const Dims& d) {
  LayerBuilder layer("final_norm", "norm", d.e);
  BlockBuilder norm(spec, d, layer);
  norm.norm("final_" + norm_name(spec), "final_norm_input");
  return layer.finish();
}

// Softmax cross-entropy over `classes` per row in fp32 (Korthikanti et al. 2022, section 4.3),
// as Megatron-core's vocab-parallel cross-entropy runs it unfused (megatron/core/tensor_parallel/
// cross_entropy.py, `_VocabParallelCrossEntropy`; `cross_entropy_loss_fusion` is off by
// default), n = rows x classes elements of this rank's vocabulary slice:
//   forward: cast the 16-bit logits to fp32 (read e, write 4), the row max (read 4), its
//   all-reduce over TP, subtract it in place (read 4, write 4), exp in place (4 + 4), the row
//   sum (read 4), the all-reduces of the target logit and of the sum, and the in-place divide
//   that leaves the softmax kept for backward (4 + 4): (e + 36)·n bytes in 6 kernels;
//   backward: scale the softmax (minus one-hot, a per-row update) by the loss gradient in place
//   (4 + 4), and the fp32 gradient back to 16 bits (read 4, write e).
// Each all-reduce carries one fp32 per row (MAX, then SUM twice); they are three collectives
// with three latencies. Indexing the targets (a few bytes per row) is not counted.
void cross_entropy(LayerBuilder& layer, const std::string& name, double rows, double classes,
                   bool sharded) {
  const double n = rows * classes;
  const double e = layer.element_bytes();
  const double row_bytes = 4 * rows;
  layer.elementwise(name + "_fp32_cast", (e + 4) * n, (4 + e) * n);
  layer.elementwise(name + "_max", 4 * n, 0);
  if (sharded)
    layer.communication(name + "_max_all_reduce", CommGroup::kTensor, CommPattern::kAllReduce,
                        row_bytes, CommPattern::kAllReduce, 0);
  layer.elementwise(name + "_subtract_max", 8 * n, 0);
  layer.elementwise(name + "_exp", 8 * n, 0);
  layer.elementwise(name + "_sum_exp", 4 * n, 0);
  if (sharded) {
    layer.communication(name + "_target_logit_all_reduce", CommGroup::kTensor,
                        CommPattern::kAllReduce, row_bytes, CommPattern::kAllReduce, 0);
    layer.communication(name + "_sum_exp_all_reduce", CommGroup::kTensor, CommPattern::kAllReduce,
                        row_bytes, CommPattern::kAllReduce, 0);
  }
  layer.elementwise(name + "_softmax", 8 * n, 8 * n);
  layer.stash(name + "_probabilities", 4 * n);
}

Layer build_lm_head(const ModelSpec& spec, const Dims& d) {
  LayerBuilder layer("lm_head", "head", d.e);
  const double e = d.e;
  if (spec.family == ModelFamily::kBert) {
    // Masked-LM head on all positions.
    layer.linear("mlm_dense", d.tokens(), d.h, d.h, true);
    layer.stash("mlm_dense_input", e * d.n());
    layer.elementwise("mlm_gelu", 2 * e * d.n(), 3 * e * d.n());
    layer.stash("mlm_gelu_input", e * d.n());
    layer.elementwise("mlm_layernorm", 2 * e * d.n(), 3 * e * d.n());
    layer.add_parameters(2 * d.h);
    layer.stash("mlm_layernorm_input", e * d.n());
  }
  // Logits: (bs × h)·(h × V), 2bshV FLOPs (Narayanan et al. 2021, eq. 3's V/(12lh) term);
  // column-parallel over the vocabulary, V/t per rank, with Megatron-LM's vocabulary-parallel
  // cross-entropy (cross_entropy() above: three all-reduces of one fp32 per token, the max
  // logit, the target logit and the sum of exponentials). Megatron-core's output layer is its own
  // ColumnParallelLinear, not a Transformer Engine module (megatron/core/models/gpt/
  // gpt_model.py), so under FP8 it stays a 16-bit GEMM with no casts (parallel_step.cc runs
  // the GEMMs of non-transformer layers in BF16).
  const double v = d.V / d.t;
  if (d.sharded()) {
    const double bytes = e * d.n();
    if (d.sp)
      layer.communication("logits_sp_regather", CommGroup::kTensor, CommPattern::kAllGather, 0,
                          CommPattern::kAllGather, bytes);
    layer.communication("logits_tp_enter", CommGroup::kTensor, CommPattern::kAllGather,
                        d.sp ? bytes : 0,
                        d.sp ? CommPattern::kReduceScatter : CommPattern::kAllReduce, bytes);
  }
  layer.matmul("logits", KernelKind::kGemm, 2 * d.tokens() * d.h * v, d.n(), d.h * v,
               d.tokens() * v, "dgrad", "wgrad", GemmShape{1, d.tokens(), v, d.h});
  if (!spec.tied_embeddings) layer.add_parameters(v * d.h);
  if (spec.tied_embeddings) layer.set_tied_parameters(v * d.h);
  if (spec.family == ModelFamily::kBert) layer.add_parameters(v);  // decoder bias
  layer.stash("logits_input", e * d.n_seq());
  cross_entropy(layer, "cross_entropy", d.tokens(), v, d.sharded());
  if (spec.family == ModelFamily::kBert) {
    // Pooler (dense + tanh on the first token) and the 2-way next-sentence classifier.
    layer.linear("pooler_dense", d.b, d.h, d.h, true);
    layer.stash("pooler_input", e * d.b * d.h);
    layer.elementwise("pooler_tanh", 2 * e * d.b * d.h, 3 * e * d.b * d.h);
    layer.stash("pooler_output", e * d.b * d.h);
    layer.linear("nsp_classifier", d.b, d.h, 2, true);
    cross_entropy(layer, "nsp_cross_entropy", d.b, 2, false);
  }
  return layer.finish();
}

}  // namespace

std::vector<Layer> build_transformer_layers(const ModelSpec& spec, const BuildOptions& options) {
  const Dims d = dims_of(spec, options);
  std::vector<Layer> layers;
  layers.reserve(static_cast<size_t>(spec.num_layers) + 3);
  layers.push_back(build_embedding(spec, d));
  for (int i = 0; i < spec.num_layers; ++i) layers.push_back(build_block(spec, d, i));
  if (spec.family != ModelFamily::kBert) layers.push_back(build_final_norm(spec, d));
  layers.push_back(build_lm_head(spec, d));
  return layers;
}

}  // namespace dtsim::models::internal
