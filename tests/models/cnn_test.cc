// CNN graphs against torchvision's published counts. Sources: the torchvision.models
// documentation tables ("Table of all available classification weights": Params and GFLOPS,
// where GFLOPS are multiply-accumulates per 224x224 image, 299x299 for Inception-v3), He et al.
// 2016 (ResNet, Table 1: 3.8/7.6/11.3 x 10^9 FLOPs, counted as multiply-adds), Simonyan and
// Zisserman 2015 (VGG, Table 2: 138M parameters) and Szegedy et al. 2016 (Inception-v3).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

using testing::backward_model_flops;
using testing::build_preset;
using testing::find_layer;
using testing::forward_macs_per_sample;
using testing::forward_model_flops;

struct TorchvisionFigure {
  const char* preset;
  double parameters;  // torchvision "Params"
  double gmacs;       // torchvision "GFLOPS" (multiply-accumulates, 10^9)
};

// torchvision.models documentation: resnet50 25,557,032 / 4.09; resnet101 44,549,160 / 7.80;
// resnet152 60,192,808 / 11.51; vgg16 138,357,544 / 15.47; inception_v3 27,161,264 / 5.71
// (the parameter figure includes the auxiliary classifier; 23,834,568 without it).
const TorchvisionFigure kFigures[] = {
    {"resnet-50", 25'557'032, 4.09},    {"resnet-101", 44'549'160, 7.80},
    {"resnet-152", 60'192'808, 11.51},  {"vgg-16", 138'357'544, 15.47},
    {"inception-v3", 23'834'568, 5.71},
};

TEST(CnnTest, ParametersAndMacsWithinTwoPercentOfTorchvision) {
  for (const TorchvisionFigure& fig : kFigures) {
    SCOPED_TRACE(fig.preset);
    const ModelGraph g = build_preset(fig.preset, 2);
    ASSERT_FALSE(g.layers.empty());
    EXPECT_NEAR(g.parameters() / fig.parameters, 1.0, 0.02);
    EXPECT_NEAR(forward_macs_per_sample(g) / (fig.gmacs * 1e9), 1.0, 0.02);
  }
}

TEST(CnnTest, ParameterCountsAreExactlyTorchvisions) {
  // Convolutions without bias (batch norm follows), BN gain and bias, fc weights and bias.
  for (const TorchvisionFigure& fig : kFigures) {
    SCOPED_TRACE(fig.preset);
    EXPECT_EQ(build_preset(fig.preset).parameters(), fig.parameters);
  }
}

TEST(CnnTest, InceptionAuxClassifierAddsItsParameters) {
  ModelSpec spec = *find_preset("inception-v3");
  spec.aux_logits = true;
  const ModelGraph g = build_model(spec, BuildOptions{1});
  EXPECT_EQ(g.parameters(), 27'161'264.0);  // torchvision inception_v3, aux_logits=True
}

TEST(CnnTest, Resnet50MacsPerImage) {
  // 4,089,184,256 multiply-accumulates for a 224x224 image (convolutions and fc), which
  // torchvision rounds to 4.09 GFLOPS and He et al. 2016 give as 3.8 x 10^9.
  const ModelGraph g = build_preset("resnet-50", 1);
  EXPECT_NEAR(forward_macs_per_sample(g), 4.09e9, 0.01e9);
}

TEST(CnnTest, BackwardIsTwiceForwardAndElementwiseHasNoFlops) {
  for (const char* name : {"resnet-50", "vgg-16", "inception-v3"}) {
    SCOPED_TRACE(name);
    const ModelGraph g = build_preset(name, 3);
    EXPECT_EQ(backward_model_flops(g), 2 * forward_model_flops(g));
    for (const Layer& l : g.layers) {
      for (const Kernel& k : l.forward) {
        if (k.kind == KernelKind::kElementwise) {
          EXPECT_EQ(k.flops.value(), 0);
        }
      }
    }
  }
}

TEST(CnnTest, ResnetLayersAndStemActivations) {
  const double b = 2, e = 2;
  const ModelGraph g = build_preset("resnet-50", static_cast<int>(b));
  // stem, 3 + 4 + 6 + 3 bottlenecks, head.
  ASSERT_EQ(g.layers.size(), 18u);
  EXPECT_EQ(g.layers[0].name, "stem");
  EXPECT_EQ(g.layers[1].name, "layer1.0");
  EXPECT_EQ(g.layers[16].name, "layer4.2");
  EXPECT_EQ(g.layers[17].name, "head");
  EXPECT_EQ(g.shape.num_layers, 50);
  // The stem keeps the image (conv1's weight gradient), conv1's output (batch norm's input)
  // and the ReLU output (ReLU and max-pool backward); the pooled output is layer1.0's input.
  const Layer& stem = g.layers[0];
  EXPECT_EQ(stem.activation_bytes.value(), e * b * (3 * 224 * 224 + 2 * 64 * 112 * 112));
  EXPECT_FALSE(stem.recomputable);
  // A recomputable block keeps only its input under full recompute: 256 x 56 x 56.
  const Layer* block = find_layer(g, "layer1.1");
  ASSERT_NE(block, nullptr);
  EXPECT_TRUE(block->recomputable);
  EXPECT_EQ(block->activation_bytes_full.value(), e * b * 256 * 56 * 56);
  // Its stash: input, conv1/conv2/conv3 outputs (BN inputs), relu1/relu2 outputs.
  EXPECT_EQ(block->activation_bytes.value(),
            e * b * (256 * 56 * 56 + 2 * 64 * 56 * 56 * 2 + 256 * 56 * 56));
  EXPECT_EQ(block->activation_bytes_selective, block->activation_bytes);
}

TEST(CnnTest, VggSixteenHasThirteenConvolutionsAndThreeFcs) {
  const ModelGraph g = build_preset("vgg-16", 1);
  int convs = 0, fcs = 0;
  for (const Layer& l : g.layers) {
    if (l.kind == "conv") ++convs;
    if (l.kind == "fc" || l.kind == "head") ++fcs;
  }
  EXPECT_EQ(convs, 13);
  EXPECT_EQ(fcs, 3);
  const Layer* fc6 = find_layer(g, "fc6");
  ASSERT_NE(fc6, nullptr);
  EXPECT_EQ(fc6->parameters, 512.0 * 7 * 7 * 4096 + 4096);
}

// The layer kinds the report counts blocks by (core/report count_layers): ResNet-50 has 16
// bottleneck blocks (3 + 4 + 6 + 3, He et al. 2016, Table 1) between its stem and head;
// Inception-v3 has 11 Mixed blocks (Szegedy et al. 2016, Table 1) after five stem convolutions.
TEST(CnnTest, LayerKindsSeparateBlocksFromStemAndHead) {
  const auto kinds = [](const ModelGraph& g) {
    std::map<std::string, int> k;
    for (const Layer& l : g.layers) ++k[l.kind];
    return k;
  };
  EXPECT_EQ(kinds(build_preset("resnet-50", 1)),
            (std::map<std::string, int>{{"stem", 1}, {"residual", 16}, {"head", 1}}));
  EXPECT_EQ(kinds(build_preset("inception-v3", 1)),
            (std::map<std::string, int>{{"stem", 5}, {"inception", 11}, {"head", 1}}));
}

TEST(CnnTest, SmallerImagesCostFewerMacs) {
  ModelSpec spec = *find_preset("resnet-50");
  spec.image_size = 112;
  const ModelGraph small = build_model(spec, BuildOptions{1});
  const ModelGraph full = build_preset("resnet-50", 1);
  // Convolution work scales with pixels (a quarter, plus padding effects on the 4x4 final
  // map instead of 7x7); the fc does not.
  const double ratio = forward_macs_per_sample(small) / forward_macs_per_sample(full);
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.28);
  EXPECT_EQ(small.parameters(), full.parameters());
}

TEST(CnnTest, ResnetDepthVariants) {
  ModelSpec spec = *family_defaults("resnet");
  spec.num_layers = 18;
  // torchvision resnet18: 11,689,512 parameters, 1.81 GFLOPS.
  const ModelGraph g = build_model(spec, BuildOptions{1});
  EXPECT_EQ(g.parameters(), 11'689'512.0);
  EXPECT_NEAR(forward_macs_per_sample(g) / 1.81e9, 1.0, 0.02);
}

}  // namespace
}  // namespace dtsim::models
