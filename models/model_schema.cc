#include "models/model_schema.h"

#include "models/model_spec.h"

namespace dtsim::models {

SchemaNode model_schema() {
  using schema::choice;
  using schema::count;
  using schema::leaf;
  const std::string from_preset = "from preset";
  return schema::section(
      "model", "the network being trained: a preset, or a family with its fields",
      {leaf("preset", ValueType::kString,
            "model preset (dtsim catalog models); fields below override it"),
       choice("family", kModelFamilyNames.names(), "architecture family for a custom model",
              from_preset),
       count("num_layers", "transformer blocks (or CNN depth where the family has variants)",
             from_preset, 1, kMaxLayers),
       count("hidden_size", "hidden dimension h", from_preset, 1, kMaxHidden),
       count("num_attention_heads", "attention heads a", from_preset, 1, kMaxHeads),
       count("num_query_groups", "key/value head groups for GQA (= heads for MHA)", "heads", 1,
             kMaxHeads),
       count("ffn_hidden_size", "MLP inner dimension", "4 x hidden (gpt)", 1, kMaxFfn),
       count("seq_length", "tokens per sample s", from_preset, 1, kMaxSeqLength),
       count("vocab_size", "vocabulary size V", from_preset, 1, kMaxVocab),
       count("num_experts", "experts per MoE layer", from_preset, 1, kMaxExperts),
       count("top_k", "experts each token is routed to", from_preset, 1, kMaxExperts),
       // ReLU is no choice: the CNNs fix it, and transformers take GELU or SwiGLU.
       choice(
           "activation",
           {std::string(to_string(Activation::kGelu)), std::string(to_string(Activation::kSwiglu))},
           "MLP activation", from_preset),
       count("image_size", "input image side in pixels (CNNs)", from_preset, 1, kMaxImageSize),
       count("num_classes", "output classes (CNNs, MLP)", from_preset, 1, kMaxClasses),
       leaf("mlp_widths", ValueType::kCountList, "layer widths of an MLP, input first",
            from_preset)});
}

}  // namespace dtsim::models
