#include "models/model_spec.h"

#include <string>

namespace dtsim::models {
namespace {

// Collects problems for one spec; each check names the scenario key it is about.
class ProblemList {
 public:
  void add(std::string field, std::string message) {
    problems_.push_back({std::move(field), std::move(message)});
  }
  // A size that must lie in [min, max]; reports "must be ..., found N".
  void require_range(const char* field, long long value, long long min, long long max) {
    if (value < min) {
      add(field, "must be at least " + std::to_string(min) + ", found " + std::to_string(value));
    } else if (value > max) {
      add(field, "must be at most " + std::to_string(max) + " (larger is almost certainly a typo)" +
                     ", found " + std::to_string(value));
    }
  }
  std::vector<SpecProblem> take() { return std::move(problems_); }

 private:
  std::vector<SpecProblem> problems_;
};

// `s` is resolved; `given` is the spec as written, to tell derived fields from given ones.
void check_transformer(const ModelSpec& s, const ModelSpec& given, ProblemList& out) {
  out.require_range("num_layers", s.num_layers, 1, kMaxLayers);
  out.require_range("hidden_size", s.hidden_size, 1, kMaxHidden);
  out.require_range("num_attention_heads", s.num_attention_heads, 1, kMaxHeads);
  // A derived field is only as good as the field it comes from, which is reported itself.
  if (given.num_query_groups != 0) {
    out.require_range("num_query_groups", s.num_query_groups, 1, kMaxHeads);
  }
  if (given.ffn_hidden_size != 0)
    out.require_range("ffn_hidden_size", s.ffn_hidden_size, 1, kMaxFfn);
  out.require_range("seq_length", s.seq_length, 1, kMaxSeqLength);
  out.require_range("vocab_size", s.vocab_size, 1, kMaxVocab);
  out.require_range("num_experts", s.num_experts, 0, kMaxExperts);
  out.require_range("top_k", s.top_k, 0, kMaxExperts);

  if (s.hidden_size > 0 && s.num_attention_heads > 0 &&
      s.hidden_size % s.num_attention_heads != 0) {
    out.add("num_attention_heads", "must divide hidden_size " + std::to_string(s.hidden_size) +
                                       " (head dimension h/a must be whole), found " +
                                       std::to_string(s.num_attention_heads));
  }
  if (s.num_attention_heads > 0 && s.num_query_groups > 0) {
    if (s.num_query_groups > s.num_attention_heads) {
      out.add("num_query_groups", "must not exceed num_attention_heads " +
                                      std::to_string(s.num_attention_heads) + ", found " +
                                      std::to_string(s.num_query_groups));
    } else if (s.num_attention_heads % s.num_query_groups != 0) {
      out.add("num_query_groups", "must divide num_attention_heads " +
                                      std::to_string(s.num_attention_heads) +
                                      " (each key/value group serves a whole number of heads)" +
                                      ", found " + std::to_string(s.num_query_groups));
    }
  }
  if (s.activation == Activation::kRelu) {
    out.add("activation", "must be gelu or swiglu for a " + std::string(to_string(s.family)) +
                              " model, found relu");
  }
  const int experts = s.num_experts < 1 ? 1 : s.num_experts;
  if (s.family == ModelFamily::kMoe && s.num_experts < 2) {
    out.add("num_experts",
            "a moe model needs at least 2 experts, found " + std::to_string(s.num_experts));
  }
  if (s.num_experts >= 2 && s.top_k < 1) {
    out.add("top_k", "must be at least 1 with " + std::to_string(s.num_experts) +
                         " experts, found " + std::to_string(s.top_k));
  }
  if (s.top_k > experts) {
    out.add("top_k", "must not exceed num_experts " + std::to_string(s.num_experts) +
                         " (a token cannot be routed to more experts than exist), found " +
                         std::to_string(s.top_k));
  }
}

void check_cnn(const ModelSpec& s, ProblemList& out) {
  switch (s.family) {
    case ModelFamily::kResnet:
      if (s.num_layers != 18 && s.num_layers != 34 && s.num_layers != 50 && s.num_layers != 101 &&
          s.num_layers != 152) {
        out.add("num_layers",
                "resnet depth must be 18, 34, 50, 101 or 152 (He et al. 2016, "
                "Table 1), found " +
                    std::to_string(s.num_layers));
      }
      // Five stride-2 stages take 32 px down to 1 px.
      out.require_range("image_size", s.image_size, 32, kMaxImageSize);
      break;
    case ModelFamily::kVgg:
      if (s.num_layers != 11 && s.num_layers != 13 && s.num_layers != 16 && s.num_layers != 19) {
        out.add("num_layers",
                "vgg depth must be 11, 13, 16 or 19 (Simonyan and Zisserman 2015, "
                "Table 1), found " +
                    std::to_string(s.num_layers));
      }
      // Five 2x2 max pools take 32 px down to 1 px.
      out.require_range("image_size", s.image_size, 32, kMaxImageSize);
      break;
    default:
      // The smallest input torchvision's Inception3 accepts: the stem and the three grid
      // reductions need 75 px to leave a 1x1 map.
      out.require_range("image_size", s.image_size, 75, kMaxImageSize);
      break;
  }
  out.require_range("num_classes", s.num_classes, 1, kMaxClasses);
  if (s.activation != Activation::kRelu) {
    out.add("activation", "must be relu for a " + std::string(to_string(s.family)) +
                              " model (its activation is fixed), found " +
                              std::string(to_string(s.activation)));
  }
  if (s.image_channels < 1 || s.image_channels > 1024) {
    out.add("image_channels",
            "must be between 1 and 1024, found " + std::to_string(s.image_channels));
  }
}

void check_mlp(const ModelSpec& s, ProblemList& out) {
  if (s.mlp_widths.empty()) {
    out.add("mlp_widths", "must list at least the input width, found an empty list");
  }
  for (size_t i = 0; i < s.mlp_widths.size(); ++i) {
    const int w = s.mlp_widths[i];
    if (w < 1 || w > kMaxMlpWidth) {
      out.add("mlp_widths", "entry " + std::to_string(i) + " must be between 1 and " +
                                std::to_string(kMaxMlpWidth) + ", found " + std::to_string(w));
    }
  }
  out.require_range("num_classes", s.num_classes, 1, kMaxClasses);
  if (s.activation == Activation::kSwiglu) {
    out.add("activation", "must be relu or gelu for an mlp model, found swiglu");
  }
}

}  // namespace

bool is_transformer(ModelFamily f) {
  return f == ModelFamily::kGpt || f == ModelFamily::kLlama || f == ModelFamily::kMoe ||
         f == ModelFamily::kBert;
}

std::optional<ModelSpec> family_defaults(std::string_view family) {
  const std::optional<ModelFamily> f = kModelFamilyNames.parse(family);
  if (!f) return std::nullopt;
  ModelSpec s;
  s.family = *f;
  switch (*f) {
    case ModelFamily::kGpt:
      // GPT-3 conventions (Brown et al. 2020): GELU, LayerNorm, learned positions, tied
      // embeddings; V = 51200 is GPT-2's 50257 padded as Megatron-LM pads it; s = 2048.
      s.vocab_size = 51200;
      s.seq_length = 2048;
      break;
    case ModelFamily::kLlama:
    case ModelFamily::kMoe:
      // Llama 2 conventions (Touvron et al. 2023): SwiGLU, RMSNorm, RoPE, untied output head,
      // no biases, no dropout; V = 32000, s = 4096. MoE takes Mixtral's 8 experts, top-2
      // (Jiang et al. 2024), which reuse the Llama architecture around the MoE MLP.
      s.activation = Activation::kSwiglu;
      s.norm = Norm::kRmsNorm;
      s.positions = Positions::kRope;
      s.tied_embeddings = false;
      s.linear_biases = false;
      s.dropout = false;
      s.vocab_size = 32000;
      s.seq_length = 4096;
      if (*f == ModelFamily::kMoe) {
        s.num_experts = 8;
        s.top_k = 2;
      }
      break;
    case ModelFamily::kBert:
      // Devlin et al. 2019: WordPiece V = 30522, s = 512, two segment types.
      s.vocab_size = 30522;
      s.seq_length = 512;
      s.type_vocab_size = 2;
      break;
    case ModelFamily::kResnet:
    case ModelFamily::kVgg:
    case ModelFamily::kInception:
      // ImageNet classification (Russakovsky et al. 2015): 1000 classes, 224 px crops
      // (299 px for Inception-v3, Szegedy et al. 2016).
      s.activation = Activation::kRelu;
      s.seq_length = 1;
      s.num_classes = 1000;
      s.image_size = *f == ModelFamily::kInception ? 299 : 224;
      s.num_layers = *f == ModelFamily::kResnet ? 50 : (*f == ModelFamily::kVgg ? 16 : 0);
      break;
    case ModelFamily::kMlp:
      s.activation = Activation::kRelu;
      s.seq_length = 1;
      break;
  }
  return s;
}

ModelSpec resolve_spec(ModelSpec s) {
  if (!is_transformer(s.family)) return s;
  if (s.num_query_groups == 0) s.num_query_groups = s.num_attention_heads;
  if (s.ffn_hidden_size == 0 && s.hidden_size > 0) {
    if (s.activation == Activation::kSwiglu) {
      // Touvron et al. 2023 reference code: int(2·4h/3) rounded up to a multiple of 256,
      // which keeps the three SwiGLU matrices near the parameter count of a 4h GELU MLP.
      const long long two_thirds = 2LL * 4 * s.hidden_size / 3;
      const long long rounded = (two_thirds + 255) / 256 * 256;
      s.ffn_hidden_size = rounded > kMaxFfn ? kMaxFfn + 1 : static_cast<int>(rounded);
    } else {
      const long long four_h = 4LL * s.hidden_size;
      s.ffn_hidden_size = four_h > kMaxFfn ? kMaxFfn + 1 : static_cast<int>(four_h);
    }
  }
  if (s.top_k == 0) s.top_k = s.num_experts >= 2 ? 2 : 1;
  return s;
}

std::vector<SpecProblem> check_spec(const ModelSpec& spec) {
  const ModelSpec s = resolve_spec(spec);
  ProblemList out;
  if (is_transformer(s.family)) {
    check_transformer(s, spec, out);
  } else if (s.family == ModelFamily::kMlp) {
    check_mlp(s, out);
  } else {
    check_cnn(s, out);
  }
  return out.take();
}

}  // namespace dtsim::models
