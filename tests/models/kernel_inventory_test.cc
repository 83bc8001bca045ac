// The kernel inventory of docs/models.md against the built graph: for a Megatron-core-like GPT
// layer (LayerNorm, bias + GeLU, dropout, learned positions) and a Llama layer (RMSNorm, SwiGLU,
// RoPE, GQA, no biases or dropout), in BF16 and in FP8, with and without FlashAttention and
// sequence parallelism, every kernel the inventory lists as modelled is found by name in the
// forward or backward list with the bytes and FLOPs of its formula, and the graph holds no
// kernel the inventory does not list. The formulas are written out here from the dimensions,
// independently of models/transformer.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

using testing::find_layer;

struct Setting {
  const char* name;
  bool llama;
  bool fp8;
  bool flash;
  bool sequence_parallel;
};
void PrintTo(const Setting& st, std::ostream* os) {
  *os << st.name;
}

// One expected kernel: where it is and its cost.
struct Expected {
  std::string name;
  bool backward;
  double bytes;
  double flops;
};

class Inventory {
 public:
  void add(const std::string& name, bool backward, double bytes, double flops = 0) {
    kernels_.push_back({name, backward, bytes, flops});
  }
  // An elementwise kernel: forward `name`, backward "<name>.backward" where it has one.
  void elementwise(const std::string& name, double forward_bytes, double backward_bytes) {
    add(name, false, forward_bytes);
    if (backward_bytes > 0) add(name + ".backward", true, backward_bytes);
  }
  // A GEMM (m x k)·(k x n) on e-byte operands: the forward product and its dgrad and wgrad, each
  // 2mkn FLOPs and reading/writing the three operands.
  void gemm(const std::string& name, double m, double k, double n, double e) {
    const double flops = 2 * m * k * n, bytes = e * (m * k + k * n + m * n);
    add(name, false, bytes, flops);
    add(name + ".dgrad", true, bytes, flops);
    add(name + ".wgrad", true, bytes, flops);
  }
  void collective(const std::string& name, bool backward, double bytes) {
    add(name, backward, bytes);
  }
  const std::vector<Expected>& kernels() const { return kernels_; }

 private:
  std::vector<Expected> kernels_;
};

ModelSpec spec_for(const Setting& st) {
  ModelSpec spec = *find_preset(st.llama ? "llama3-8b" : "gpt3-125m");
  spec.name = "inventory";
  spec.num_layers = 2;
  spec.hidden_size = 1024;
  spec.num_attention_heads = 16;
  spec.num_query_groups = st.llama ? 4 : 16;
  spec.ffn_hidden_size = st.llama ? 2816 : 4096;
  spec.seq_length = 512;
  spec.vocab_size = 32000;
  return spec;
}

constexpr double kB = 2, kT = 2, kE = 2;  // micro-batch, tensor-parallel size, bytes/element

// The inventory of one transformer block (docs/models.md, "Kernel inventory"), per TP rank.
Inventory block_inventory(const Setting& st, const ModelSpec& spec) {
  const double b = kB, t = kT, e = kE;
  const double s = spec.seq_length, h = spec.hidden_size, a = spec.num_attention_heads;
  const double kv = h / a * spec.num_query_groups, f = spec.ffn_hidden_size;
  const double tokens = b * s, n = tokens * h, n_seq = st.sequence_parallel ? n / t : n;
  const double n_q = n / t, n_kv = tokens * kv / t, n_scores = b * a * s * s / t;
  const double n_mid = tokens * f / t;
  const double qkv_out = tokens * (h + 2 * kv) / t;
  const bool biases = !st.llama, dropout = !st.llama;
  const std::string norm = st.llama ? "rmsnorm" : "layernorm";
  Inventory inv;
  // Norms: Megatron-core's TE spec fuses each pre-norm into the GEMM after it; under FP8 the
  // fused norm writes its output in FP8 (1 byte) and backward transposes it for wgrad.
  const double norm_out = st.fp8 ? 1 : e;
  inv.elementwise("input_" + norm, (e + norm_out) * n_seq, 3 * e * n_seq);
  inv.elementwise("post_attention_" + norm, (e + norm_out) * n_seq, 3 * e * n_seq);
  // Tensor-parallel f/g operators.
  for (const char* region : {"attention", "mlp"}) {
    const std::string r = region;
    if (st.sequence_parallel) {
      inv.collective(r + "_sp_regather.backward", true, e * n);
      inv.collective(r + "_tp_enter", false, e * n);
      inv.collective(r + "_tp_enter.backward", true, e * n);
      inv.collective(r + "_tp_exit", false, e * n);
      inv.collective(r + "_tp_exit.backward", true, e * n);
    } else {
      inv.collective(r + "_tp_enter.backward", true, e * n);
      inv.collective(r + "_tp_exit", false, e * n);
    }
  }
  // Attention.
  inv.gemm("qkv", tokens, h, (h + 2 * kv) / t, e);
  if (st.llama) inv.elementwise("rope", 2 * e * (n_q + n_kv), 2 * e * (n_q + n_kv));
  const double core = 2 * b * s * s * h / t;
  if (st.flash) {
    const double lse = 4 * (b * a / t) * s;
    inv.add("flash_attention", false, e * (2 * n_q + 2 * n_kv) + lse, 2 * core);
    inv.add("flash_attention.backward", true, e * (4 * n_q + 4 * n_kv) + lse, 4 * core);
    inv.add("flash_attention.backward_recompute", true, 0, core);
  } else {
    const double io = e * (n_q + n_kv + n_scores);
    inv.add("attention_scores", false, io, core);
    inv.add("attention_scores.dgrad_query", true, io, core);
    inv.add("attention_scores.dgrad_key", true, io, core);
    inv.elementwise("softmax", 2 * e * n_scores, 3 * e * n_scores);
    if (dropout)
      inv.elementwise("attention_dropout", (2 * e + 1) * n_scores, (2 * e + 1) * n_scores);
    inv.add("attention_v", false, io, core);
    inv.add("attention_v.dgrad_probs", true, io, core);
    inv.add("attention_v.dgrad_value", true, io, core);
  }
  inv.gemm("attention_proj", tokens, h / t, h, e);
  // MLP.
  if (st.llama) {
    inv.gemm("mlp_gate", tokens, h, f / t, e);
    inv.gemm("mlp_up", tokens, h, f / t, e);
    inv.elementwise("swiglu", 3 * e * n_mid, 5 * e * n_mid);
    inv.gemm("mlp_down", tokens, f / t, h, e);
  } else {
    inv.gemm("mlp_fc1", tokens, h, f / t, e);
    inv.elementwise("gelu", 2 * e * n_mid, 3 * e * n_mid);
    inv.gemm("mlp_fc2", tokens, f / t, h, e);
  }
  // Residuals: Megatron's fused bias-dropout-add with dropout, a plain add without; the
  // backward-only sum of the two gradients of the residual stream.
  for (const char* branch : {"attention", "mlp"}) {
    const std::string br = branch;
    if (dropout)
      inv.elementwise(br + "_bias_dropout_add", (3 * e + 1) * n_seq, (2 * e + 1) * n_seq);
    else
      inv.elementwise(br + "_residual_add", 3 * e * n_seq, 0);
    inv.add(br + "_residual_grad_add.backward", true, 3 * e * n_seq);
  }
  // Bias gradients reduced outside the GEMMs (biases handed to Megatron's fusions).
  if (biases) {
    inv.add("attention_bias_grad", true, e * (n_seq + h));
    inv.add("mlp_bias_grad", true, e * (n_seq + h));
    inv.add("gelu_bias_grad", true, e * (n_mid + f / t));
  }
  // FP8 (Transformer Engine, delayed scaling): input cast-transposes where the input is 16-bit,
  // input transposes where a fused norm wrote it, output-gradient cast-transposes everywhere.
  if (st.fp8) {
    inv.add("qkv.fp8_input_transpose", true, 2 * n);
    inv.add("qkv.fp8_grad_cast_transpose", true, (e + 2) * qkv_out);
    inv.add("attention_proj.fp8_cast_transpose", false, (e + 2) * n_q);
    inv.add("attention_proj.fp8_grad_cast_transpose", true, (e + 2) * n);
    const std::string first = st.llama ? "mlp_gate" : "mlp_fc1";
    const std::string last = st.llama ? "mlp_down" : "mlp_fc2";
    inv.add(first + ".fp8_input_transpose", true, 2 * n);
    inv.add(first + ".fp8_grad_cast_transpose", true, (e + 2) * n_mid);
    if (st.llama) inv.add("mlp_up.fp8_grad_cast_transpose", true, (e + 2) * n_mid);
    inv.add(last + ".fp8_cast_transpose", false, (e + 2) * n_mid);
    inv.add(last + ".fp8_grad_cast_transpose", true, (e + 2) * n);
  }
  return inv;
}

// The embedding, final norm and output layer (per TP rank).
Inventory edge_inventory(const Setting& st, const ModelSpec& spec) {
  const double b = kB, t = kT, e = kE;
  const double s = spec.seq_length, h = spec.hidden_size, V = spec.vocab_size;
  const double tokens = b * s, n = tokens * h, n_seq = st.sequence_parallel ? n / t : n;
  const double tables = st.llama ? 1 : 2;  // word (+ learned positions)
  const std::string norm = st.llama ? "rmsnorm" : "layernorm";
  Inventory inv;
  inv.elementwise("embedding_lookup", (tables + 1) * e * n, (1 + 2 * tables) * e * n);
  inv.elementwise("embedding_vocab_mask", e * n * (t - 1) / t, e * n * (t - 1) / t);
  inv.elementwise("embedding_transpose", 2 * e * n, 2 * e * n);
  inv.add("embedding_weight_grad_accumulate", true, (2 * e + 8) * V / t * h);
  inv.collective("embedding_tp_reduce", false, e * n);
  if (st.sequence_parallel) inv.collective("embedding_tp_reduce.backward", true, e * n);
  if (!st.llama) inv.elementwise("embedding_dropout", (2 * e + 1) * n_seq, (2 * e + 1) * n_seq);
  inv.elementwise("final_" + norm, 2 * e * n_seq, 3 * e * n_seq);  // feeds the BF16 logits
  if (st.sequence_parallel) {
    inv.collective("logits_sp_regather.backward", true, e * n);
    inv.collective("logits_tp_enter", false, e * n);
    inv.collective("logits_tp_enter.backward", true, e * n);
  } else {
    inv.collective("logits_tp_enter.backward", true, e * n);
  }
  inv.gemm("logits", tokens, h, V / t, e);
  const double nl = tokens * V / t;  // this rank's logits
  inv.elementwise("cross_entropy_fp32_cast", (e + 4) * nl, (4 + e) * nl);
  inv.elementwise("cross_entropy_max", 4 * nl, 0);
  inv.elementwise("cross_entropy_subtract_max", 8 * nl, 0);
  inv.elementwise("cross_entropy_exp", 8 * nl, 0);
  inv.elementwise("cross_entropy_sum_exp", 4 * nl, 0);
  inv.elementwise("cross_entropy_softmax", 8 * nl, 8 * nl);
  for (const char* ar : {"max", "target_logit", "sum_exp"})
    inv.collective(std::string("cross_entropy_") + ar + "_all_reduce", false, 4 * tokens);
  return inv;
}

ModelGraph build(const Setting& st, const ModelSpec& spec) {
  BuildOptions options;
  options.micro_batch_size = static_cast<int>(kB);
  options.tensor_parallel = static_cast<int>(kT);
  options.sequence_parallel = st.sequence_parallel;
  options.flash_attention = st.flash;
  options.fp8 = st.fp8;
  return build_model(spec, options);
}

// Every expected kernel is in `layers` with its bytes and FLOPs, and nothing else is.
void check(const ModelGraph& g, const std::vector<std::string>& layers, const Inventory& inv) {
  std::map<std::pair<std::string, bool>, const Kernel*> built;
  for (const std::string& name : layers) {
    const Layer* l = find_layer(g, name);
    ASSERT_NE(l, nullptr) << name;
    for (const Kernel& k : l->forward)
      EXPECT_TRUE(built.emplace(std::make_pair(k.name, false), &k).second) << "two " << k.name;
    for (const Kernel& k : l->backward)
      EXPECT_TRUE(built.emplace(std::make_pair(k.name, true), &k).second) << "two " << k.name;
  }
  for (const Expected& x : inv.kernels()) {
    SCOPED_TRACE(x.name + (x.backward ? " (backward)" : " (forward)"));
    const auto it = built.find({x.name, x.backward});
    ASSERT_NE(it, built.end()) << "listed in the inventory but not in the graph";
    EXPECT_DOUBLE_EQ(it->second->bytes.value(), x.bytes);
    EXPECT_DOUBLE_EQ(it->second->flops.value(), x.flops);
    built.erase(it);
  }
  for (const auto& [key, k] : built)
    ADD_FAILURE() << "the graph has " << key.first << (key.second ? " (backward)" : " (forward)")
                  << ", which the inventory does not list";
}

class KernelInventory : public ::testing::TestWithParam<Setting> {};

TEST_P(KernelInventory, EveryListedKernelIsInTheGraphWithItsBytesAndFlops) {
  const Setting& st = GetParam();
  const ModelSpec spec = spec_for(st);
  const ModelGraph g = build(st, spec);
  {
    SCOPED_TRACE("block.0");
    check(g, {"block.0"}, block_inventory(st, spec));
  }
  {
    SCOPED_TRACE("embedding, final_norm, lm_head");
    check(g, {"embedding", "final_norm", "lm_head"}, edge_inventory(st, spec));
  }
}

INSTANTIATE_TEST_SUITE_P(
    MegatronCoreLayers, KernelInventory,
    ::testing::Values(Setting{"GptBf16Unfused", false, false, false, false},
                      Setting{"GptBf16FlashSequenceParallel", false, false, true, true},
                      Setting{"GptFp8Unfused", false, true, false, false},
                      Setting{"GptFp8FlashSequenceParallel", false, true, true, true},
                      Setting{"LlamaBf16Flash", true, false, true, false},
                      Setting{"LlamaFp8FlashSequenceParallel", true, true, true, true}),
    [](const ::testing::TestParamInfo<Setting>& info) { return std::string(info.param.name); });

// FP8 adds only cast and transpose kernels: the GEMM and attention FLOPs, the parameters and the
// stashed activations are those of the BF16 graph.
TEST(KernelInventoryFp8, AddsCastsWithoutChangingFlopsParametersOrActivations) {
  const Setting bf16{"bf16", false, false, true, true}, fp8{"fp8", false, true, true, true};
  const ModelSpec spec = spec_for(bf16);
  const ModelGraph a = build(bf16, spec), b = build(fp8, spec);
  EXPECT_EQ(a.model_flops_per_micro_batch().value(), b.model_flops_per_micro_batch().value());
  EXPECT_EQ(a.parameters(), b.parameters());
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].activation_bytes.value(), b.layers[i].activation_bytes.value());
    auto casts = [](const Layer& l) {
      int n = 0;
      for (const auto* list : {&l.forward, &l.backward})
        for (const Kernel& k : *list) n += k.name.find(".fp8_") != std::string::npos ? 1 : 0;
      return n;
    };
    EXPECT_EQ(casts(a.layers[i]), 0);
    // Per block: 4 GEMMs, each with a gradient cast; 2 inputs cast, 2 transposed.
    EXPECT_EQ(casts(b.layers[i]), a.layers[i].kind == "transformer" ? 8 : 0);
  }
}

}  // namespace
}  // namespace dtsim::models

namespace dtsim::models {
namespace {

// Under FP8 a GEMM's gradient is cast before the sequence-parallel all-gather that feeds its
// dgrad (TE casts the local shard and gathers FP8 data), so the collective stays next to the GEMM
// that tp_comm_overlap pairs it with; likewise forward, the fused norm's FP8 output is gathered
// straight into the QKV and fc1 GEMMs.
TEST(KernelInventoryFp8, CastsDoNotSeparateCollectivesFromTheirGemms) {
  const Setting fp8{"fp8", false, true, true, true};
  const ModelGraph g = build(fp8, spec_for(fp8));
  const Layer* block = find_layer(g, "block.0");
  ASSERT_NE(block, nullptr);
  auto next_after = [](const std::vector<Kernel>& ks, const std::string& name) -> std::string {
    for (size_t i = 0; i + 1 < ks.size(); ++i)
      if (ks[i].name == name) return ks[i + 1].name;
    return "(none)";
  };
  auto index_of = [](const std::vector<Kernel>& ks, const std::string& name) {
    for (size_t i = 0; i < ks.size(); ++i)
      if (ks[i].name == name) return static_cast<int>(i);
    return -1;
  };
  EXPECT_EQ(next_after(block->forward, "attention_tp_enter"), "qkv");
  EXPECT_EQ(next_after(block->forward, "mlp_tp_enter"), "mlp_fc1");
  EXPECT_EQ(next_after(block->backward, "attention_tp_exit.backward"), "attention_proj.dgrad");
  EXPECT_EQ(next_after(block->backward, "mlp_tp_exit.backward"), "mlp_fc2.dgrad");
  EXPECT_LT(index_of(block->backward, "mlp_fc2.fp8_grad_cast_transpose"),
            index_of(block->backward, "mlp_tp_exit.backward"));
  EXPECT_LT(index_of(block->backward, "qkv.fp8_grad_cast_transpose"),
            index_of(block->backward, "qkv.dgrad"));
  EXPECT_LT(index_of(block->backward, "qkv.fp8_input_transpose"),
            index_of(block->backward, "qkv.wgrad"));
}

}  // namespace
}  // namespace dtsim::models
