// ModelSpec: presets, family defaults, derived fields and check_spec's field names.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace dtsim::models {
namespace {

std::vector<std::string> fields(const std::vector<SpecProblem>& problems) {
  std::vector<std::string> out;
  for (const SpecProblem& p : problems) out.push_back(p.field);
  return out;
}

bool has_field(const std::vector<SpecProblem>& problems, const std::string& field) {
  const auto f = fields(problems);
  return std::find(f.begin(), f.end(), field) != f.end();
}

ModelSpec gpt_small() {
  ModelSpec s = *family_defaults("gpt");
  s.num_layers = 2;
  s.hidden_size = 256;
  s.num_attention_heads = 8;
  return s;
}

TEST(ModelSpecTest, EveryRequiredPresetExistsAndIsValid) {
  const std::vector<std::string> required = {
      "gpt3-125m",   "gpt3-350m",    "gpt3-1.3b",  "gpt3-2.7b",  "gpt3-6.7b",  "gpt3-13b",
      "gpt3-175b",   "llama2-7b",    "llama2-13b", "llama2-70b", "llama3-8b",  "llama3-70b",
      "llama3-405b", "mixtral-8x7b", "bert-large", "resnet-50",  "resnet-101", "resnet-152",
      "vgg-16",      "inception-v3", "mlp-mnist"};
  const std::vector<std::string> names = preset_names();
  for (const std::string& name : required) {
    SCOPED_TRACE(name);
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end());
    const ModelSpec* spec = find_preset(name);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->name, name);
    EXPECT_FALSE(spec->source.empty());
    EXPECT_TRUE(check_spec(*spec).empty()) << check_spec(*spec).front().message;
  }
  EXPECT_EQ(names.size(), required.size());
}

TEST(ModelSpecTest, PresetShapesFromTheirSources) {
  const ModelSpec& g = *find_preset("gpt3-175b");
  EXPECT_EQ(g.num_layers, 96);
  EXPECT_EQ(g.hidden_size, 12288);
  EXPECT_EQ(g.num_attention_heads, 96);
  EXPECT_EQ(g.vocab_size, 51200);
  EXPECT_EQ(g.seq_length, 2048);
  EXPECT_EQ(g.ffn_hidden_size, 4 * 12288);
  const ModelSpec& l = *find_preset("llama3-405b");
  EXPECT_EQ(l.num_layers, 126);
  EXPECT_EQ(l.hidden_size, 16384);
  EXPECT_EQ(l.num_attention_heads, 128);
  EXPECT_EQ(l.num_query_groups, 8);
  EXPECT_EQ(l.ffn_hidden_size, 53248);
  EXPECT_EQ(l.vocab_size, 128256);
  EXPECT_EQ(l.activation, Activation::kSwiglu);
  EXPECT_EQ(l.norm, Norm::kRmsNorm);
  EXPECT_EQ(l.positions, Positions::kRope);
  EXPECT_FALSE(l.tied_embeddings);
  EXPECT_EQ(find_preset("llama3-8b")->seq_length, 8192);
  EXPECT_EQ(find_preset("inception-v3")->image_size, 299);
  EXPECT_EQ(find_preset("resnet-50")->image_size, 224);
  EXPECT_EQ(find_preset("vgg-16")->num_classes, 1000);
}

TEST(ModelSpecTest, UnknownNamesGiveNothing) {
  EXPECT_EQ(find_preset("gpt3-175B-typo"), nullptr);
  EXPECT_FALSE(family_defaults("transformer").has_value());
  EXPECT_TRUE(family_defaults("moe").has_value());
  EXPECT_EQ(kModelFamilyNames.parse("vgg"), ModelFamily::kVgg);
  EXPECT_FALSE(kActivationNames.parse("tanh").has_value());
}

TEST(ModelSpecTest, FamilyDefaultsLeaveSizesToTheUser) {
  const ModelSpec s = *family_defaults("gpt");
  EXPECT_EQ(fields(check_spec(s)),
            (std::vector<std::string>{"num_layers", "hidden_size", "num_attention_heads"}));
  EXPECT_TRUE(check_spec(gpt_small()).empty());
  const ModelSpec r = resolve_spec(gpt_small());
  EXPECT_EQ(r.ffn_hidden_size, 1024);
  EXPECT_EQ(r.num_query_groups, 8);
  EXPECT_EQ(r.top_k, 1);
  const ModelSpec moe = resolve_spec(*family_defaults("moe"));
  EXPECT_EQ(moe.top_k, 2);
  EXPECT_TRUE(check_spec(*family_defaults("resnet")).empty());
  EXPECT_TRUE(check_spec(*family_defaults("inception")).empty());
}

TEST(ModelSpecTest, RejectsNonPositiveAndAbsurdSizes) {
  ModelSpec s = gpt_small();
  s.num_layers = 0;
  s.seq_length = -5;
  s.vocab_size = 0;
  s.hidden_size = 20'000'000;  // above kMaxHidden
  s.num_attention_heads = 8;
  const auto problems = check_spec(s);
  EXPECT_TRUE(has_field(problems, "num_layers"));
  EXPECT_TRUE(has_field(problems, "seq_length"));
  EXPECT_TRUE(has_field(problems, "vocab_size"));
  EXPECT_TRUE(has_field(problems, "hidden_size"));
  for (const SpecProblem& p : problems) EXPECT_NE(p.message.find("found"), std::string::npos);
  ModelSpec big = gpt_small();
  big.num_layers = 10'000'000;
  EXPECT_EQ(fields(check_spec(big)), std::vector<std::string>{"num_layers"});
}

TEST(ModelSpecTest, RejectsHeadsThatDoNotDivide) {
  ModelSpec s = gpt_small();
  s.num_attention_heads = 12;  // 256 / 12 is not whole
  EXPECT_EQ(fields(check_spec(s)), std::vector<std::string>{"num_attention_heads"});
  s.num_attention_heads = 8;
  s.num_query_groups = 3;  // 8 / 3 is not whole
  EXPECT_EQ(fields(check_spec(s)), std::vector<std::string>{"num_query_groups"});
  s.num_query_groups = 16;  // more groups than heads
  EXPECT_EQ(fields(check_spec(s)), std::vector<std::string>{"num_query_groups"});
}

TEST(ModelSpecTest, RejectsBadExperts) {
  ModelSpec s = *find_preset("mixtral-8x7b");
  s.top_k = 9;
  EXPECT_EQ(fields(check_spec(s)), std::vector<std::string>{"top_k"});
  s.top_k = 2;
  s.num_experts = 1;
  const auto problems = check_spec(s);
  EXPECT_TRUE(has_field(problems, "num_experts"));
  EXPECT_TRUE(has_field(problems, "top_k"));
  ModelSpec dense = gpt_small();
  dense.top_k = 2;  // routing without experts
  EXPECT_EQ(fields(check_spec(dense)), std::vector<std::string>{"top_k"});
}

TEST(ModelSpecTest, RejectsActivationThatDoesNotFitTheFamily) {
  ModelSpec s = gpt_small();
  s.activation = Activation::kRelu;
  EXPECT_EQ(fields(check_spec(s)), std::vector<std::string>{"activation"});
  ModelSpec cnn = *find_preset("resnet-50");
  cnn.activation = Activation::kSwiglu;
  EXPECT_EQ(fields(check_spec(cnn)), std::vector<std::string>{"activation"});
}

TEST(ModelSpecTest, RejectsBadCnnAndMlpFields) {
  ModelSpec r = *find_preset("resnet-50");
  r.num_layers = 42;
  r.image_size = 16;
  r.num_classes = 0;
  EXPECT_EQ(fields(check_spec(r)),
            (std::vector<std::string>{"num_layers", "image_size", "num_classes"}));
  ModelSpec inc = *find_preset("inception-v3");
  inc.image_size = 74;
  EXPECT_EQ(fields(check_spec(inc)), std::vector<std::string>{"image_size"});
  ModelSpec m = *find_preset("mlp-mnist");
  m.mlp_widths = {};
  EXPECT_EQ(fields(check_spec(m)), std::vector<std::string>{"mlp_widths"});
  m.mlp_widths = {784, 0};
  m.num_classes = -1;
  EXPECT_EQ(fields(check_spec(m)), (std::vector<std::string>{"mlp_widths", "num_classes"}));
}

}  // namespace
}  // namespace dtsim::models
