// Transformer graphs against the published formulas: Narayanan et al. 2021 (parameters and
// FLOPs), Korthikanti et al. 2022 (activation memory), model cards (Llama parameter counts).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/base/error.h"
#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

using testing::backward_model_flops;
using testing::build_preset;
using testing::find_layer;
using testing::forward_model_flops;
using testing::model_flops;

const char* const kGptPresets[] = {"gpt3-125m", "gpt3-350m", "gpt3-1.3b", "gpt3-2.7b",
                                   "gpt3-6.7b", "gpt3-13b",  "gpt3-175b"};

TEST(TransformerTest, GptParametersEqualNarayananFormulaPlusFinalNorm) {
  for (const char* name : kGptPresets) {
    SCOPED_TRACE(name);
    const ModelSpec* spec = find_preset(name);
    ASSERT_NE(spec, nullptr);
    const double l = spec->num_layers, h = spec->hidden_size;
    const double V = spec->vocab_size, s = spec->seq_length;
    // Narayanan et al. 2021, eq. 2 expanded: 12lh² + 13lh + (V + s)h; +2h is the final
    // LayerNorm, which the paper's formula omits.
    const double expected = 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h;
    EXPECT_EQ(build_preset(name).parameters(), expected);
  }
}

TEST(TransformerTest, Gpt3_175bHas174_6BillionParameters) {
  // 12·96·12288² + 13·96·12288 + (51200 + 2048)·12288 + 2·12288.
  EXPECT_EQ(build_preset("gpt3-175b").parameters(), 174'615'846'912.0);
}

TEST(TransformerTest, GptModelFlopsPerStepEqualNarayananFormula) {
  const int b = 2;
  const double B = 1536;  // global batch (Narayanan et al. 2021, Table 1 for GPT-3 175B)
  for (const char* name : kGptPresets) {
    SCOPED_TRACE(name);
    const ModelSpec* spec = find_preset(name);
    ASSERT_NE(spec, nullptr);
    const ModelGraph g = build_preset(name, b);
    const double l = spec->num_layers, h = spec->hidden_size;
    const double V = spec->vocab_size, s = spec->seq_length;
    // Narayanan et al. 2021, eq. 3.
    const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    const double measured = g.model_flops_per_micro_batch().value() * (B / b);
    EXPECT_NEAR(measured / expected, 1.0, 1e-9);
  }
}

TEST(TransformerTest, GptBlockForwardFlopsAndBackwardIsTwiceForward) {
  const ModelGraph g = build_preset("gpt3-2.7b", 4);
  const Layer* block = find_layer(g, "block.7");
  ASSERT_NE(block, nullptr);
  const double b = 4, s = 2048, h = 2560;
  EXPECT_EQ(model_flops(block->forward), 24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_EQ(model_flops(block->backward), 2 * model_flops(block->forward));
  double attention = 0;
  for (const Kernel& k : block->forward)
    if (k.kind == KernelKind::kAttention) attention += k.flops.value();
  EXPECT_EQ(attention, 4 * b * s * s * h);  // scores 2bs²h + attention·V 2bs²h
  const Layer* head = find_layer(g, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(model_flops(head->forward), 2 * b * s * h * 51200);
}

TEST(TransformerTest, BackwardModelFlopsAreTwiceForwardForEveryTransformerPreset) {
  for (const char* name : {"gpt3-125m", "llama2-70b", "llama3-8b", "mixtral-8x7b", "bert-large"}) {
    SCOPED_TRACE(name);
    const ModelGraph g = build_preset(name, 1);
    ASSERT_FALSE(g.layers.empty());
    EXPECT_EQ(backward_model_flops(g), 2 * forward_model_flops(g));
  }
}

TEST(TransformerTest, ElementwiseKernelsCarryBytesButNoFlops) {
  const ModelGraph g = build_preset("llama3-8b", 1);
  int elementwise = 0;
  for (const Layer& l : g.layers) {
    for (const auto* list : {&l.forward, &l.backward}) {
      for (const Kernel& k : *list) {
        EXPECT_GT(k.bytes.value(), 0) << l.name << " " << k.name;
        if (k.kind == KernelKind::kElementwise) {
          ++elementwise;
          EXPECT_EQ(k.flops.value(), 0) << l.name << " " << k.name;
        }
      }
    }
  }
  EXPECT_GT(elementwise, 32 * 5);
}

TEST(TransformerTest, GptBlockActivationBytesMatchKorthikanti) {
  const double b = 2;
  for (const char* name : {"gpt3-1.3b", "gpt3-175b"}) {
    SCOPED_TRACE(name);
    const ModelSpec* spec = find_preset(name);
    ASSERT_NE(spec, nullptr);
    const ModelGraph g = build_preset(name, static_cast<int>(b));
    const double s = spec->seq_length, h = spec->hidden_size, a = spec->num_attention_heads;
    for (int i = 0; i < spec->num_layers; ++i) {
      const Layer& block = g.layers[i + 1];
      ASSERT_EQ(block.name, "block." + std::to_string(i));
      // Korthikanti et al. 2022, Table 2 (no parallelism), 16-bit activations.
      EXPECT_EQ(block.activation_bytes.value(), s * b * h * (34 + 5 * a * s / h));
      EXPECT_EQ(block.activation_bytes_selective.value(), s * b * h * 34);
      EXPECT_EQ(block.activation_bytes_full.value(), 2 * s * b * h);
      EXPECT_TRUE(block.recomputable);
    }
  }
}

TEST(TransformerTest, GptActivationBytesScaleWithElementSizeButNotMasks) {
  // fp32 activations: the 16-bit tensors double, the 1-byte dropout masks do not.
  const ModelGraph g = build_preset("gpt3-125m", 1, 4);
  const double s = 2048, b = 1, h = 768, a = 12;
  const Layer* block = find_layer(g, "block.0");
  ASSERT_NE(block, nullptr);
  // sbh·(16e + 2) + as²b·(2e + 1) with e = 4.
  EXPECT_EQ(block->activation_bytes.value(), s * b * h * 66 + a * s * s * b * 9);
  EXPECT_EQ(block->activation_bytes_full.value(), 4 * s * b * h);
}

TEST(TransformerTest, LlamaBlockActivationBytesFollowDocumentedAccounting) {
  const ModelSpec* spec = find_preset("llama3-70b");
  ASSERT_NE(spec, nullptr);
  const double b = 1, s = 8192, h = 8192, a = 64, g = 8, f = 28672, e = 2;
  const ModelGraph graph = build_preset("llama3-70b", 1);
  const Layer* block = find_layer(graph, "block.0");
  ASSERT_NE(block, nullptr);
  // e·sbh·(6 + 2g/a) + 3e·sbf + e·a·s²·b (transformer.cc header).
  const double core = e * a * s * s * b;
  const double rest = e * s * b * h * (6 + 2 * g / a) + 3 * e * s * b * f;
  EXPECT_EQ(block->activation_bytes.value(), rest + core);
  EXPECT_EQ(block->activation_bytes_selective.value(), rest);
  EXPECT_EQ(block->activation_bytes_full.value(), e * s * b * h);
}

TEST(TransformerTest, SelectiveRecomputeReplaysTheAttentionCore) {
  const ModelGraph g = build_preset("gpt3-125m", 1);
  const Layer* block = find_layer(g, "block.0");
  ASSERT_NE(block, nullptr);
  std::string names;
  for (const Kernel& k : block->selective_recompute) names += k.name + " ";
  EXPECT_EQ(names, "attention_scores softmax attention_dropout attention_v ");
  EXPECT_EQ(model_flops(block->selective_recompute), 4.0 * 2048 * 2048 * 768);
  const Layer* embedding = find_layer(g, "embedding");
  ASSERT_NE(embedding, nullptr);
  EXPECT_FALSE(embedding->recomputable);
  EXPECT_TRUE(embedding->selective_recompute.empty());
  EXPECT_EQ(embedding->activation_bytes_full, embedding->activation_bytes);
}

TEST(TransformerTest, LayerNamesAndOrder) {
  const ModelGraph g = build_preset("gpt3-125m", 1);
  ASSERT_EQ(g.layers.size(), 12u + 3u);
  EXPECT_EQ(g.layers.front().name, "embedding");
  EXPECT_EQ(g.layers[1].name, "block.0");
  EXPECT_EQ(g.layers[12].name, "block.11");
  EXPECT_EQ(g.layers[13].name, "final_norm");
  EXPECT_EQ(g.layers[14].name, "lm_head");
  EXPECT_EQ(g.shape.num_layers, 12);
  EXPECT_EQ(g.shape.seq_length, 2048);
  EXPECT_EQ(g.name, "gpt3-125m");
}

// Meta's model cards (Llama 3: 8.03B, 70.6B, 405.9B as in the Hugging Face listings).
TEST(TransformerTest, Llama3ParametersWithinOnePercentOfModelCards) {
  EXPECT_NEAR(build_preset("llama3-8b").parameters() / 8.03e9, 1.0, 0.01);
  EXPECT_NEAR(build_preset("llama3-70b").parameters() / 70.6e9, 1.0, 0.01);
  EXPECT_NEAR(build_preset("llama3-405b").parameters() / 405.9e9, 1.0, 0.01);
  // Exact from the shapes: 32·(2h + h(h + 2·1024) + h² + 3h·14336) + 2·128256·h + h, h = 4096.
  EXPECT_EQ(build_preset("llama3-8b").parameters(), 8'030'261'248.0);
}

TEST(TransformerTest, Llama2_7bParametersMatchReleasedCheckpoint) {
  // Hugging Face meta-llama/Llama-2-7b-hf reports 6,738,415,616 parameters.
  EXPECT_EQ(build_preset("llama2-7b").parameters(), 6'738'415'616.0);
}

TEST(TransformerTest, LlamaFlopsMatchMegatronGqaSwigluFormula) {
  // Megatron-LM num_floating_point_operations (docs/reference.md): 12·B·s·l·h²·(1 + 1.5·(f/h)·k
  // + g/a + s/h + V/(2lh)); the 1.5 is SwiGLU's third matrix (gated_linear_multiplier).
  for (const char* name : {"llama2-13b", "llama3-70b", "llama3-405b"}) {
    SCOPED_TRACE(name);
    const ModelSpec* p = find_preset(name);
    ASSERT_NE(p, nullptr);
    const double B = 1, s = p->seq_length, l = p->num_layers, h = p->hidden_size;
    const double f = p->ffn_hidden_size, g = p->num_query_groups, a = p->num_attention_heads;
    const double V = p->vocab_size;
    const double expected =
        12 * B * s * l * h * h * (1 + 1.5 * f / h + g / a + s / h + V / (2 * l * h));
    EXPECT_NEAR(build_preset(name).model_flops_per_micro_batch().value() / expected, 1.0, 1e-9);
  }
}

TEST(TransformerTest, MixtralCountsAllExpertsInParametersAndTopKInFlops) {
  const ModelSpec* p = find_preset("mixtral-8x7b");
  ASSERT_NE(p, nullptr);
  const ModelGraph g = build_preset("mixtral-8x7b", 1);
  // Jiang et al. 2024: 47B parameters in total (46.7B in the released checkpoint).
  EXPECT_NEAR(g.parameters() / 46.7e9, 1.0, 0.01);
  const double s = 4096, l = 32, h = 4096, f = 14336, k = 2, E = 8, V = 32000;
  const double expected =
      12 * s * l * h * h *
      (1 + 1.5 * f / h * k + 8.0 / 32 + s / h + V / (2 * l * h) + E / (2 * h));  // + router
  EXPECT_NEAR(g.model_flops_per_micro_batch().value() / expected, 1.0, 1e-9);
  EXPECT_EQ(g.shape.num_experts, 8);
  EXPECT_EQ(g.shape.top_k, 2);
}

TEST(TransformerTest, BertLargeParameters) {
  const ModelGraph g = build_preset("bert-large", 1);
  // Devlin et al. 2019, section 3: BERT-large has 340M parameters; the Hugging Face
  // bert-large-uncased encoder with pooler has 335,141,888.
  EXPECT_NEAR(g.parameters() / 335e6, 1.0, 0.02);
  // Without the pre-training heads (MLM dense h² + h, LayerNorm 2h, decoder bias V; NSP 2h + 2)
  // the count is the encoder-with-pooler count exactly.
  const double h = 1024, V = 30522;
  const double heads = (h * h + h) + 2 * h + V + (2 * h + 2);
  EXPECT_EQ(g.parameters() - heads, 335'141'888.0);
  EXPECT_EQ(find_layer(g, "final_norm"), nullptr);  // post-norm: no final norm
  EXPECT_NE(find_layer(g, "lm_head"), nullptr);
  const Layer* block = find_layer(g, "block.3");
  ASSERT_NE(block, nullptr);
  const double s = 512, a = 16;
  EXPECT_EQ(block->activation_bytes.value(), s * h * (34 + 5 * a * s / h));
}

TEST(TransformerTest, CustomSpecDerivesFfnAndGroups) {
  ModelSpec spec = *family_defaults("llama");
  spec.num_layers = 2;
  spec.hidden_size = 4096;
  spec.num_attention_heads = 32;
  const ModelGraph g = build_model(spec, BuildOptions{1});
  EXPECT_EQ(g.shape.ffn_hidden_size, 11008);  // Llama 2 7B's width, from the 256-multiple rule
  EXPECT_EQ(g.shape.num_query_groups, 32);
  EXPECT_EQ(g.name, "custom");
}

TEST(TransformerTest, BuildRejectsBadInputWithKeyPaths) {
  ModelSpec spec = *find_preset("gpt3-125m");
  spec.hidden_size = 770;  // not divisible by 12 heads
  try {
    build_model(spec, BuildOptions{0});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u);
    EXPECT_EQ(e.diagnostics()[0].key_path, "training.micro_batch_size");
    EXPECT_EQ(e.diagnostics()[1].key_path, "model.num_attention_heads");
  }
}

}  // namespace
}  // namespace dtsim::models
