// ModelSpec: the architecture of one network as plain numbers, plus the built-in presets.
//
// Contract:
// - A ModelSpec names a family (gpt, llama, moe, bert, resnet, vgg, inception, mlp) and the
//   fields that family reads. Field names match the scenario keys under `model:` (docs/design.md
//   section 4); fields a family does not read are ignored.
// - Zero in num_query_groups, ffn_hidden_size or top_k means "derive it" (see resolve_spec()),
//   so a custom spec may give only num_layers, hidden_size and num_attention_heads.
// - check_spec() reports every inconsistency at once, each tagged with the scenario key name
//   of the field at fault; build_model() (models/model_builder.h) requires it to be empty.
// - Presets are immutable data with a cited source; find_preset() returns a pointer into static
//   storage that lives for the whole program.
// Thread safety: all functions are pure; the preset table is built on first use (thread-safe
// static initialisation).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/enum_table.h"

namespace dtsim::models {

enum class ModelFamily { kGpt, kLlama, kMoe, kBert, kResnet, kVgg, kInception, kMlp };
inline constexpr auto kModelFamilyNames =
    make_enum_table<ModelFamily>({{ModelFamily::kGpt, "gpt"},
                                  {ModelFamily::kLlama, "llama"},
                                  {ModelFamily::kMoe, "moe"},
                                  {ModelFamily::kBert, "bert"},
                                  {ModelFamily::kResnet, "resnet"},
                                  {ModelFamily::kVgg, "vgg"},
                                  {ModelFamily::kInception, "inception"},
                                  {ModelFamily::kMlp, "mlp"}});
constexpr std::string_view to_string(ModelFamily f) {
  return kModelFamilyNames.to_string(f);
}

// The MLP nonlinearity. Transformers use GELU (GPT, BERT) or SwiGLU (Shazeer 2020; Llama);
// CNNs always use ReLU; an MLP may use ReLU or GELU.
enum class Activation { kGelu, kSwiglu, kRelu };
inline constexpr auto kActivationNames = make_enum_table<Activation>(
    {{Activation::kGelu, "gelu"}, {Activation::kSwiglu, "swiglu"}, {Activation::kRelu, "relu"}});
constexpr std::string_view to_string(Activation a) {
  return kActivationNames.to_string(a);
}

enum class Norm { kLayerNorm, kRmsNorm };
inline constexpr auto kNormNames =
    make_enum_table<Norm>({{Norm::kLayerNorm, "layernorm"}, {Norm::kRmsNorm, "rmsnorm"}});
constexpr std::string_view to_string(Norm n) {
  return kNormNames.to_string(n);
}

enum class Positions { kLearned, kRope };
inline constexpr auto kPositionsNames =
    make_enum_table<Positions>({{Positions::kLearned, "learned"}, {Positions::kRope, "rope"}});
constexpr std::string_view to_string(Positions p) {
  return kPositionsNames.to_string(p);
}

// True for gpt, llama, moe and bert: the families built by models/transformer.cc.
bool is_transformer(ModelFamily f);

struct ModelSpec {
  ModelFamily family = ModelFamily::kGpt;
  std::string name = "custom";
  std::string source;  // where the preset's numbers come from (paper, model card)

  // --- Transformers (gpt, llama, moe, bert) ---
  // For resnet and vgg, num_layers is the depth variant (resnet 18/34/50/101/152, vgg
  // 11/13/16/19), as the scenario key's description says; inception ignores it.
  int num_layers = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_query_groups = 0;  // key/value heads (GQA, Ainslie et al. 2023); 0 = heads (MHA)
  int ffn_hidden_size = 0;   // MLP inner width (per expert for MoE); 0 = derived
  int seq_length = 0;        // tokens per sample
  int vocab_size = 0;
  int num_experts = 0;  // 0 or 1: dense MLP; >= 2: every block's MLP is a mixture of experts
  int top_k = 0;        // experts per token; 0 = 2 when num_experts >= 2 (Mixtral), else 1
  Activation activation = Activation::kGelu;
  Norm norm = Norm::kLayerNorm;
  Positions positions = Positions::kLearned;
  bool tied_embeddings = true;  // output head reuses the input embedding matrix
  bool linear_biases = true;    // GPT/BERT linears carry biases; Llama's do not
  bool dropout = true;          // GPT/BERT train with dropout; Llama does not
  int type_vocab_size = 0;      // BERT token-type (segment) embeddings; 0 elsewhere

  // --- CNNs (resnet, vgg, inception) ---
  int image_size = 0;  // input side in pixels (square RGB images)
  int image_channels = 3;
  int num_classes = 0;  // also the MLP's output width
  // Inception-v3's auxiliary classifier (Szegedy et al. 2016, section 4). Off by default:
  // torchvision's 23,834,568-parameter count excludes it; on, the count is 27,161,264.
  bool aux_logits = false;

  // --- MLP ---
  // Input width first, then each hidden layer's width; the output layer has num_classes units.
  std::vector<int> mlp_widths;

  bool operator==(const ModelSpec&) const = default;
};

// One inconsistency in a spec. `field` is the scenario key name ("hidden_size", ...), so the
// loader can point at the offending line; `message` says what was expected and what was found.
struct SpecProblem {
  std::string field;
  std::string message;
};

// Upper bounds beyond which a value is treated as a typo rather than a model. The scenario
// schema's `model` section (models/model_schema.cc) takes its bounds from these.
inline constexpr int kMaxLayers = 100'000;
inline constexpr int kMaxHidden = 10'000'000;
inline constexpr int kMaxHeads = 1'000'000;
inline constexpr int kMaxFfn = 100'000'000;
inline constexpr int kMaxSeqLength = 100'000'000;
inline constexpr int kMaxVocab = 100'000'000;
inline constexpr int kMaxExperts = 100'000;
inline constexpr int kMaxImageSize = 100'000;
inline constexpr int kMaxClasses = 100'000'000;
inline constexpr int kMaxMlpWidth = 100'000'000;

// The preset of that exact name (lower case, e.g. "gpt3-175b"), or nullptr.
const ModelSpec* find_preset(std::string_view name);
// All preset names, in catalog order.
std::vector<std::string> preset_names();

// A spec with the family's architectural conventions (activation, norm, positions, biases,
// dropout, vocabulary, sequence length; the default variant for CNNs) and the size fields left
// zero for the user to fill. nullopt for an unknown family name.
std::optional<ModelSpec> family_defaults(std::string_view family);

// Fills the derivable zeros: num_query_groups = num_attention_heads; ffn_hidden_size = 4h for
// GELU (Vaswani et al. 2017) or Llama's SwiGLU rule 256·ceil((8h/3)/256) (Touvron et al. 2023,
// reference code model.py: 2/3 of 4h rounded up to a multiple of 256); top_k = 2 for MoE.
ModelSpec resolve_spec(ModelSpec spec);

// Every inconsistency in resolve_spec(spec); empty when build_model() may be called.
std::vector<SpecProblem> check_spec(const ModelSpec& spec);

}  // namespace dtsim::models
