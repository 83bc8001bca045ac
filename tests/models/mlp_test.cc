// MLP graphs: parameters and FLOPs of fully connected layers, 2bkn FLOPs per k->n layer.
#include <gtest/gtest.h>

#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

using testing::build_preset;
using testing::forward_model_flops;

TEST(MlpTest, MnistPresetParametersAndFlops) {
  // Ciresan et al. 2010, Table 1: 784-2500-2000-1500-1000-500-10.
  const ModelGraph g = build_preset("mlp-mnist", 8);
  ASSERT_EQ(g.layers.size(), 6u);
  const double widths[] = {784, 2500, 2000, 1500, 1000, 500, 10};
  double params = 0, macs = 0;
  for (int i = 0; i < 6; ++i) {
    params += widths[i] * widths[i + 1] + widths[i + 1];
    macs += widths[i] * widths[i + 1];
  }
  EXPECT_EQ(params, 11'972'510.0);
  EXPECT_EQ(g.parameters(), params);
  EXPECT_EQ(forward_model_flops(g), 2 * 8 * macs);
  EXPECT_EQ(g.model_flops_per_micro_batch().value(), 3 * 2 * 8 * macs);
  EXPECT_EQ(g.layers.front().name, "fc.0");
  EXPECT_EQ(g.layers.back().name, "fc.5");
  EXPECT_EQ(g.layers.back().kind, "head");
}

TEST(MlpTest, ActivationBytesKeepEachLayersInput) {
  ModelSpec spec = *family_defaults("mlp");
  spec.mlp_widths = {1024, 4096};
  spec.num_classes = 100;
  const double b = 16, e = 2;
  const ModelGraph relu = build_model(spec, BuildOptions{16, e});
  ASSERT_EQ(relu.layers.size(), 2u);
  EXPECT_EQ(relu.layers[0].activation_bytes.value(), e * b * 1024);
  // The head keeps its input and the fp32 loss probabilities.
  EXPECT_EQ(relu.layers[1].activation_bytes.value(), e * b * 4096 + 4 * b * 100);
  spec.activation = Activation::kGelu;
  const ModelGraph gelu = build_model(spec, BuildOptions{16, e});
  EXPECT_EQ(gelu.layers[0].activation_bytes.value(), e * b * (1024 + 4096));
}

}  // namespace
}  // namespace dtsim::models
