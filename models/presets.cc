// The built-in model presets (dtsim catalog models). Each entry cites where its numbers come
// from; tests/models/ checks the resulting parameter and FLOP counts against those sources.
#include <vector>

#include "models/model_spec.h"

namespace dtsim::models {
namespace {

// GPT-3 shapes from Brown et al. 2020, Table 2.1, with V = 51200 (GPT-2's 50257 BPE vocabulary
// padded to a multiple of 1024 as Megatron-LM pads it) and s = 2048 (Table 2.1, n_ctx).
ModelSpec gpt3(const char* name, int layers, int hidden, int heads, const char* source) {
  ModelSpec s = *family_defaults("gpt");
  s.name = name;
  s.source = source;
  s.num_layers = layers;
  s.hidden_size = hidden;
  s.num_attention_heads = heads;
  s.num_query_groups = heads;
  s.ffn_hidden_size = 4 * hidden;
  return s;
}

ModelSpec llama(const char* name, int layers, int hidden, int heads, int groups, int ffn, int vocab,
                int seq, const char* source) {
  ModelSpec s = *family_defaults("llama");
  s.name = name;
  s.source = source;
  s.num_layers = layers;
  s.hidden_size = hidden;
  s.num_attention_heads = heads;
  s.num_query_groups = groups;
  s.ffn_hidden_size = ffn;
  s.vocab_size = vocab;
  s.seq_length = seq;
  return s;
}

ModelSpec cnn(const char* family, const char* name, int depth, const char* source) {
  ModelSpec s = *family_defaults(family);
  s.name = name;
  s.source = source;
  s.num_layers = depth;
  return s;
}

std::vector<ModelSpec> make_presets() {
  constexpr const char* kGpt3 = "Brown et al. 2020, Table 2.1";
  std::vector<ModelSpec> p;
  p.push_back(gpt3("gpt3-125m", 12, 768, 12, kGpt3));
  p.push_back(gpt3("gpt3-350m", 24, 1024, 16, kGpt3));
  // Table 2.1 lists 24 heads of 128 for d_model 2048, which do not multiply out; Megatron-
  // DeepSpeed's GPT-3 size table (examples_deepspeed, "GPT-3 XL 1.3B") uses 16 heads of 128.
  p.push_back(gpt3("gpt3-1.3b", 24, 2048, 16,
                   "Brown et al. 2020, Table 2.1; 16 heads as Megatron-DeepSpeed's GPT-3 XL"));
  p.push_back(gpt3("gpt3-2.7b", 32, 2560, 32, kGpt3));
  p.push_back(gpt3("gpt3-6.7b", 32, 4096, 32, kGpt3));
  // Table 2.1 lists d_model 5140 with 40 heads of 128 (= 5120); Megatron-DeepSpeed's GPT-3
  // 13B uses hidden 5120.
  p.push_back(gpt3("gpt3-13b", 40, 5120, 40,
                   "Brown et al. 2020, Table 2.1; h = 5120 as Megatron-DeepSpeed's GPT-3 13B"));
  p.push_back(gpt3("gpt3-175b", 96, 12288, 96, kGpt3));

  // Llama 2: Touvron et al. 2023, Table 1 and the released params.json (GQA with 8 groups for
  // 70B only; ffn from the multiple-of-256 rule, 28672 for 70B with ffn_dim_multiplier 1.3).
  constexpr const char* kLlama2 = "Touvron et al. 2023 (Llama 2), Table 1 and params.json";
  p.push_back(llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, kLlama2));
  p.push_back(llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, kLlama2));
  p.push_back(llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, kLlama2));

  // Llama 3: Dubey et al. 2024 (The Llama 3 Herd of Models), Table 3, and the Meta model cards:
  // 8 key/value groups, V = 128256, pre-training at s = 8192.
  constexpr const char* kLlama3 = "Dubey et al. 2024 (Llama 3), Table 3; Meta model cards";
  p.push_back(llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, kLlama3));
  p.push_back(llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, kLlama3));
  p.push_back(llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, kLlama3));

  // Mixtral 8x7B: Jiang et al. 2024, Table 1 (Mistral-7B shapes with 8 experts, top-2).
  // s = 4096 is a training length chosen here (the model's window is 32k; set seq_length to
  // use it), because without FlashAttention the a·s² score tensors would dominate memory.
  {
    ModelSpec s = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096,
                        "Jiang et al. 2024 (Mixtral of Experts), Table 1");
    s.family = ModelFamily::kMoe;
    s.num_experts = 8;
    s.top_k = 2;
    p.push_back(s);
  }

  // BERT-large: Devlin et al. 2019, section 3 (L = 24, H = 1024, A = 16, 4H feed-forward,
  // WordPiece V = 30522, 512 positions, 2 segment types).
  {
    ModelSpec s = *family_defaults("bert");
    s.name = "bert-large";
    s.source = "Devlin et al. 2019, section 3";
    s.num_layers = 24;
    s.hidden_size = 1024;
    s.num_attention_heads = 16;
    s.num_query_groups = 16;
    s.ffn_hidden_size = 4096;
    p.push_back(s);
  }

  // CNNs as torchvision defines them (torchvision.models docs list the parameter and GFLOPS
  // figures tests/models checks against).
  p.push_back(cnn("resnet", "resnet-50", 50, "He et al. 2016, Table 1; torchvision resnet50"));
  p.push_back(cnn("resnet", "resnet-101", 101, "He et al. 2016, Table 1; torchvision resnet101"));
  p.push_back(cnn("resnet", "resnet-152", 152, "He et al. 2016, Table 1; torchvision resnet152"));
  p.push_back(cnn("vgg", "vgg-16", 16,
                  "Simonyan and Zisserman 2015, Table 1 (config D); torchvision vgg16"));
  p.push_back(cnn("inception", "inception-v3", 0,
                  "Szegedy et al. 2016, Table 1; torchvision inception_v3 (no aux classifier)"));

  // The largest MNIST MLP of Ciresan et al. 2010 (Table 1: 784-2500-2000-1500-1000-500-10).
  // The paper uses scaled tanh; dtsim models an elementwise ReLU, which moves the same bytes.
  {
    ModelSpec s = *family_defaults("mlp");
    s.name = "mlp-mnist";
    s.source = "Ciresan et al. 2010, Table 1";
    s.mlp_widths = {784, 2500, 2000, 1500, 1000, 500};
    s.num_classes = 10;
    p.push_back(s);
  }
  return p;
}

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> kPresets = make_presets();
  return kPresets;
}

}  // namespace

const ModelSpec* find_preset(std::string_view name) {
  for (const ModelSpec& s : presets())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const ModelSpec& s : presets()) names.push_back(s.name);
  return names;
}

}  // namespace dtsim::models
