// CNN graphs: ResNet (He et al. 2016, torchvision's v1.5 variant with the stride on the 3x3
// convolution), VGG (Simonyan and Zisserman 2015, torchvision's layout without batch norm) and
// Inception-v3 (Szegedy et al. 2016, torchvision's Inception3).
//
// Kernels: a convolution is one gemm-kind kernel of 2·MACs FLOPs (implicit GEMM, as cuDNN runs
// it) with traffic input + weights + output; backward has its data-gradient and
// weight-gradient convolutions of the same FLOPs. Fully connected layers are gemm kernels.
// Batch norm, ReLU, pooling, residual adds, concatenation, dropout and the loss are
// elementwise kernels of 0 FLOPs. Convolutions have no bias where batch norm follows (torchvision),
// so the parameters are weights plus batch-norm gain and bias (2 per channel); running
// statistics are buffers, not parameters.
//
// Elementwise traffic in elements N of the tensor (× e bytes):
//   batch norm fwd 3N (a statistics pass reads x, a normalising pass reads x and writes y),
//   bwd 5N (a reduction pass reads x and dy, a second pass reads both and writes dx);
//   ReLU fwd 2N, bwd 3N (reads y and dy, writes dx); max pool fwd N_in + N_out, bwd
//   2·N_in + 2·N_out (reads x, y, dy, writes dx, as cuDNN's pooling backward does); average
//   pool N_in + N_out both ways; residual add fwd 3N, bwd free (the gradient passes through);
//   concatenation fwd 2·N_out (copies each branch in), bwd free (the gradient slices are
//   views); where one tensor feeds c consumers, backward sums c gradients in c − 1 adds of 3N;
//   dropout fwd and bwd 2N + a 1-byte mask; softmax cross-entropy fwd reads the logits and
//   writes fp32 probabilities, bwd reads them and writes the logit gradient.
//
// Activation bytes per layer: each layer keeps its input (read by its first convolution's
// weight gradient, or by the previous layer's ReLU or pooling backward) and every tensor its
// kernels read in backward — convolution inputs, batch-norm inputs, ReLU outputs (in place,
// as torchvision's ReLU(inplace=True)), pooling inputs and outputs, dropout masks, fp32 loss
// probabilities — each once. Its output is the next layer's input and is counted there.
// Full recompute keeps the layer input only.
//
// Layers: ResNet "stem" (conv1, bn1, relu, maxpool), "layer1.0".."layer4.{n}" (one per
// residual block), "head" (global average pool, fc, loss). VGG "conv1_1".., "pool1".. (one
// layer per convolution and per pooling), "avgpool" (adaptive 7x7), "fc6", "fc7", "fc8" (fc8
// holds the loss). Inception-v3 "Conv2d_1a_3x3".."Conv2d_4a_3x3" (the stem; 2b and 4a include
// the max pool that follows them), "Mixed_5b".."Mixed_7c", "head" (average pool, dropout, fc,
// loss); with aux_logits the auxiliary classifier's kernels are part of "Mixed_6e", whose
// output feeds it. The first layer and the head are not recomputable; the rest are.
// Kinds, which the report counts by (core/report/metrics.h, count_layers): ResNet "stem",
// "residual" (the blocks users count: 16 in ResNet-50), "head"; VGG "conv", "pool", "fc",
// "head"; Inception-v3 "stem" (the five stem convolutions), "inception" (the 11 Mixed blocks),
// "head".
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/internal/builders.h"
#include "models/internal/layer_builder.h"

namespace dtsim::models::internal {
namespace {

// One activation tensor per sample: channels × height × width, with a name unique in the net
// so that a tensor read by several kernels is stashed once.
struct FeatureMap {
  int channels = 0;
  int height = 0;
  int width = 0;
  std::string id;
  double elements() const { return static_cast<double>(channels) * height * width; }
};

// Spatial output size of a convolution or pooling window (floor mode, as PyTorch).
int window_output(int input, int kernel, int stride, int padding) {
  return (input + 2 * padding - kernel) / stride + 1;
}

class Net {
 public:
  Net(double micro_batch, double element_bytes) : b_(micro_batch), e_(element_bytes) {}

  FeatureMap image(int channels, int size) { return {channels, size, size, "image"}; }

  void begin_layer(const std::string& name, const std::string& kind, const FeatureMap& input,
                   bool recomputable) {
    layer_.emplace(name, kind, e_);
    layer_->set_recomputable(recomputable);
    layer_->set_input_bytes(bytes(input));
    layer_->stash(input.id, bytes(input));
  }

  // Closes the layer; its output (if any) is the next layer's input, counted there.
  void end_layer(const FeatureMap* output) {
    if (output) layer_->forget(output->id);
    layers_.push_back(layer_->finish());
    layer_.reset();
  }

  FeatureMap conv(const std::string& name, const FeatureMap& in, int out_channels, int kernel_h,
                  int kernel_w, int stride, int pad_h, int pad_w, bool bias) {
    FeatureMap out{out_channels, window_output(in.height, kernel_h, stride, pad_h),
                   window_output(in.width, kernel_w, stride, pad_w), fresh_id(name)};
    const double weights = static_cast<double>(out_channels) * in.channels * kernel_h * kernel_w;
    const double macs = out.elements() * in.channels * kernel_h * kernel_w;  // per sample
    layer_->matmul(name, KernelKind::kGemm, 2 * b_ * macs, b_ * in.elements(), weights,
                   b_ * out.elements());
    layer_->add_parameters(weights + (bias ? out_channels : 0));
    layer_->stash(in.id, bytes(in));
    return out;
  }

  FeatureMap batch_norm(const std::string& name, const FeatureMap& in) {
    layer_->elementwise(name, 3 * bytes(in), 5 * bytes(in));
    layer_->add_parameters(2.0 * in.channels);
    layer_->stash(in.id, bytes(in));
    return renamed(in, name);
  }

  FeatureMap relu(const std::string& name, const FeatureMap& in) {
    layer_->elementwise(name, 2 * bytes(in), 3 * bytes(in));
    FeatureMap out = renamed(in, name);
    layer_->stash(out.id, bytes(out));
    return out;
  }

  // torchvision's BasicConv2d (Inception) and the conv-bn-relu triple of ResNet.
  FeatureMap conv_bn_relu(const std::string& name, const FeatureMap& in, int out_channels,
                          int kernel_h, int kernel_w, int stride, int pad_h, int pad_w) {
    FeatureMap x =
        conv(name + ".conv", in, out_channels, kernel_h, kernel_w, stride, pad_h, pad_w, false);
    x = batch_norm(name + ".bn", x);
    return relu(name + ".relu", x);
  }

  FeatureMap max_pool(const std::string& name, const FeatureMap& in, int kernel, int stride,
                      int padding) {
    FeatureMap out = pooled(name, in, kernel, stride, padding);
    layer_->elementwise(name, bytes(in) + bytes(out), 2 * bytes(in) + 2 * bytes(out));
    layer_->stash(in.id, bytes(in));
    layer_->stash(out.id, bytes(out));
    return out;
  }

  FeatureMap avg_pool(const std::string& name, const FeatureMap& in, int kernel, int stride,
                      int padding) {
    return average(name, in, pooled(name, in, kernel, stride, padding));
  }

  // AdaptiveAvgPool2d to a fixed output side (1 for global pooling, 7 in VGG).
  FeatureMap adaptive_avg_pool(const std::string& name, const FeatureMap& in, int side) {
    return average(name, in, FeatureMap{in.channels, side, side, fresh_id(name)});
  }

  FeatureMap add(const std::string& name, const FeatureMap& x, const FeatureMap&) {
    layer_->elementwise(name, 3 * bytes(x), 0);
    return renamed(x, name);
  }

  FeatureMap concat(const std::string& name, const std::vector<FeatureMap>& parts) {
    FeatureMap out = parts.front();
    out.channels = 0;
    for (const FeatureMap& p : parts) out.channels += p.channels;
    out.id = fresh_id(name);
    layer_->elementwise(name, 2 * bytes(out), 0);
    return out;
  }

  // Backward-only sum of the gradients of a tensor read by `consumers` kernels. Call it
  // before the consumers so that it runs after their backward kernels.
  void grad_accumulate(const std::string& name, const FeatureMap& x, int consumers) {
    if (consumers > 1) layer_->backward_only(name, 3 * (consumers - 1) * bytes(x));
  }

  FeatureMap dropout(const std::string& name, const FeatureMap& in) {
    const double n = b_ * in.elements();
    layer_->elementwise(name, (2 * e_ + 1) * n, (2 * e_ + 1) * n);
    layer_->stash(name + ".mask", n);
    return renamed(in, name);
  }

  // A fully connected layer on the flattened map; returns a 1x1 map of `out_features`.
  FeatureMap fc(const std::string& name, const FeatureMap& in, int out_features, bool bias) {
    layer_->linear(name, b_, in.elements(), out_features, bias);
    layer_->stash(in.id, bytes(in));
    return {out_features, 1, 1, fresh_id(name)};
  }

  void loss(const std::string& name, const FeatureMap& logits) {
    const double n = b_ * logits.elements();
    layer_->elementwise(name, (e_ + 4) * n, (4 + e_) * n);
    layer_->stash(name + ".probabilities", 4 * n);
  }

  std::vector<Layer> take() { return std::move(layers_); }

 private:
  double bytes(const FeatureMap& x) const { return e_ * b_ * x.elements(); }

  std::string fresh_id(const std::string& name) {
    return layer_name() + "/" + name + "#" + std::to_string(next_id_++);
  }
  std::string layer_name() const { return layer_ ? std::to_string(layers_.size()) : "-"; }

  FeatureMap renamed(const FeatureMap& x, const std::string& name) {
    FeatureMap out = x;
    out.id = fresh_id(name);
    return out;
  }

  FeatureMap pooled(const std::string& name, const FeatureMap& in, int kernel, int stride,
                    int padding) {
    return {in.channels, window_output(in.height, kernel, stride, padding),
            window_output(in.width, kernel, stride, padding), fresh_id(name)};
  }

  FeatureMap average(const std::string& name, const FeatureMap& in, const FeatureMap& out) {
    layer_->elementwise(name, bytes(in) + bytes(out), bytes(in) + bytes(out));
    return out;
  }

  double b_;
  double e_;
  int next_id_ = 0;
  std::optional<LayerBuilder> layer_;
  std::vector<Layer> layers_;
};

// ---------------------------------------------------------------- ResNet (He et al. 2016)

// Blocks per stage, He et al. 2016, Table 1.
std::vector<int> resnet_stages(int depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
      return {3, 4, 6, 3};
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    default:
      return {3, 8, 36, 3};  // 152
  }
}

FeatureMap resnet_block(Net& net, const std::string& name, const FeatureMap& x, int width,
                        int stride, bool bottleneck) {
  const int expansion = bottleneck ? 4 : 1;
  const int out_channels = width * expansion;
  const bool downsample = stride != 1 || x.channels != out_channels;
  net.begin_layer(name, "residual", x, true);
  // x feeds the residual branch and the shortcut.
  net.grad_accumulate("input_grad_add", x, 2);
  FeatureMap y;
  if (bottleneck) {
    y = net.conv("conv1", x, width, 1, 1, 1, 0, 0, false);
    y = net.relu("relu1", net.batch_norm("bn1", y));
    y = net.conv("conv2", y, width, 3, 3, stride, 1, 1, false);
    y = net.relu("relu2", net.batch_norm("bn2", y));
    y = net.conv("conv3", y, out_channels, 1, 1, 1, 0, 0, false);
    y = net.batch_norm("bn3", y);
  } else {
    y = net.conv("conv1", x, width, 3, 3, stride, 1, 1, false);
    y = net.relu("relu1", net.batch_norm("bn1", y));
    y = net.conv("conv2", y, width, 3, 3, 1, 1, 1, false);
    y = net.batch_norm("bn2", y);
  }
  FeatureMap shortcut = x;
  if (downsample) {
    shortcut = net.conv("downsample.conv", x, out_channels, 1, 1, stride, 0, 0, false);
    shortcut = net.batch_norm("downsample.bn", shortcut);
  }
  FeatureMap out = net.relu("relu_out", net.add("add", y, shortcut));
  net.end_layer(&out);
  return out;
}

void build_resnet(Net& net, const ModelSpec& spec) {
  FeatureMap x = net.image(spec.image_channels, spec.image_size);
  net.begin_layer("stem", "stem", x, false);
  x = net.conv("conv1", x, 64, 7, 7, 2, 3, 3, false);
  x = net.relu("relu", net.batch_norm("bn1", x));
  x = net.max_pool("maxpool", x, 3, 2, 1);
  net.end_layer(&x);

  const bool bottleneck = spec.num_layers >= 50;
  const std::vector<int> stages = resnet_stages(spec.num_layers);
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const int width = 64 << stage;  // 64, 128, 256, 512 (Table 1)
    for (int i = 0; i < stages[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      x = resnet_block(net, name, x, width, stride, bottleneck);
    }
  }

  net.begin_layer("head", "head", x, false);
  x = net.adaptive_avg_pool("avgpool", x, 1);
  x = net.fc("fc", x, spec.num_classes, true);
  net.loss("cross_entropy", x);
  net.end_layer(nullptr);
}

// ------------------------------------------------- VGG (Simonyan and Zisserman 2015)

// Convolutions per stage for configurations A, B, D, E (Table 1); each stage ends in a max pool.
std::vector<int> vgg_stages(int depth) {
  switch (depth) {
    case 11:
      return {1, 1, 2, 2, 2};
    case 13:
      return {2, 2, 2, 2, 2};
    case 16:
      return {2, 2, 3, 3, 3};
    default:
      return {2, 2, 4, 4, 4};  // 19
  }
}

void build_vgg(Net& net, const ModelSpec& spec) {
  FeatureMap x = net.image(spec.image_channels, spec.image_size);
  const std::vector<int> stages = vgg_stages(spec.num_layers);
  const int widths[] = {64, 128, 256, 512, 512};
  bool first = true;
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    for (int i = 0; i < stages[stage]; ++i) {
      const std::string name = "conv" + std::to_string(stage + 1) + "_" + std::to_string(i + 1);
      net.begin_layer(name, "conv", x, !first);
      first = false;
      // 3x3, stride 1, padding 1, with bias (no batch norm in configuration D).
      x = net.conv("conv", x, widths[stage], 3, 3, 1, 1, 1, true);
      x = net.relu("relu", x);
      net.end_layer(&x);
    }
    const std::string pool = "pool" + std::to_string(stage + 1);
    net.begin_layer(pool, "pool", x, true);
    x = net.max_pool("maxpool", x, 2, 2, 0);
    net.end_layer(&x);
  }
  net.begin_layer("avgpool", "pool", x, true);
  x = net.adaptive_avg_pool("avgpool", x, 7);
  net.end_layer(&x);
  // Classifier: 25088 -> 4096 -> 4096 -> classes, ReLU and dropout after the first two.
  for (const char* name : {"fc6", "fc7"}) {
    net.begin_layer(name, "fc", x, true);
    x = net.fc("fc", x, 4096, true);
    x = net.relu("relu", x);
    x = net.dropout("dropout", x);
    net.end_layer(&x);
  }
  net.begin_layer("fc8", "head", x, false);
  x = net.fc("fc", x, spec.num_classes, true);
  net.loss("cross_entropy", x);
  net.end_layer(nullptr);
}

// --------------------------------------------------- Inception-v3 (Szegedy et al. 2016)
// Branch widths follow torchvision's Inception3 (InceptionA..E, Figures 5-7 of the paper).

FeatureMap inception_a(Net& net, const FeatureMap& x, int pool_features) {
  net.grad_accumulate("input_grad_add", x, 4);
  FeatureMap b1 = net.conv_bn_relu("branch1x1", x, 64, 1, 1, 1, 0, 0);
  FeatureMap b5 = net.conv_bn_relu("branch5x5_1", x, 48, 1, 1, 1, 0, 0);
  b5 = net.conv_bn_relu("branch5x5_2", b5, 64, 5, 5, 1, 2, 2);
  FeatureMap b3 = net.conv_bn_relu("branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
  b3 = net.conv_bn_relu("branch3x3dbl_2", b3, 96, 3, 3, 1, 1, 1);
  b3 = net.conv_bn_relu("branch3x3dbl_3", b3, 96, 3, 3, 1, 1, 1);
  FeatureMap bp = net.avg_pool("branch_pool.avgpool", x, 3, 1, 1);
  bp = net.conv_bn_relu("branch_pool", bp, pool_features, 1, 1, 1, 0, 0);
  return net.concat("concat", {b1, b5, b3, bp});
}

FeatureMap inception_b(Net& net, const FeatureMap& x) {
  net.grad_accumulate("input_grad_add", x, 3);
  FeatureMap b3 = net.conv_bn_relu("branch3x3", x, 384, 3, 3, 2, 0, 0);
  FeatureMap bd = net.conv_bn_relu("branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
  bd = net.conv_bn_relu("branch3x3dbl_2", bd, 96, 3, 3, 1, 1, 1);
  bd = net.conv_bn_relu("branch3x3dbl_3", bd, 96, 3, 3, 2, 0, 0);
  FeatureMap bp = net.max_pool("branch_pool", x, 3, 2, 0);
  return net.concat("concat", {b3, bd, bp});
}

FeatureMap inception_c(Net& net, const FeatureMap& x, int c7) {
  net.grad_accumulate("input_grad_add", x, 4);
  FeatureMap b1 = net.conv_bn_relu("branch1x1", x, 192, 1, 1, 1, 0, 0);
  FeatureMap b7 = net.conv_bn_relu("branch7x7_1", x, c7, 1, 1, 1, 0, 0);
  b7 = net.conv_bn_relu("branch7x7_2", b7, c7, 1, 7, 1, 0, 3);
  b7 = net.conv_bn_relu("branch7x7_3", b7, 192, 7, 1, 1, 3, 0);
  FeatureMap bd = net.conv_bn_relu("branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0);
  bd = net.conv_bn_relu("branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0);
  bd = net.conv_bn_relu("branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3);
  bd = net.conv_bn_relu("branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0);
  bd = net.conv_bn_relu("branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3);
  FeatureMap bp = net.avg_pool("branch_pool.avgpool", x, 3, 1, 1);
  bp = net.conv_bn_relu("branch_pool", bp, 192, 1, 1, 1, 0, 0);
  return net.concat("concat", {b1, b7, bd, bp});
}

FeatureMap inception_d(Net& net, const FeatureMap& x) {
  net.grad_accumulate("input_grad_add", x, 3);
  FeatureMap b3 = net.conv_bn_relu("branch3x3_1", x, 192, 1, 1, 1, 0, 0);
  b3 = net.conv_bn_relu("branch3x3_2", b3, 320, 3, 3, 2, 0, 0);
  FeatureMap b7 = net.conv_bn_relu("branch7x7x3_1", x, 192, 1, 1, 1, 0, 0);
  b7 = net.conv_bn_relu("branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3);
  b7 = net.conv_bn_relu("branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0);
  b7 = net.conv_bn_relu("branch7x7x3_4", b7, 192, 3, 3, 2, 0, 0);
  FeatureMap bp = net.max_pool("branch_pool", x, 3, 2, 0);
  return net.concat("concat", {b3, b7, bp});
}

FeatureMap inception_e(Net& net, const FeatureMap& x) {
  net.grad_accumulate("input_grad_add", x, 4);
  FeatureMap b1 = net.conv_bn_relu("branch1x1", x, 320, 1, 1, 1, 0, 0);
  FeatureMap b3 = net.conv_bn_relu("branch3x3_1", x, 384, 1, 1, 1, 0, 0);
  net.grad_accumulate("branch3x3_1.grad_add", b3, 2);
  FeatureMap b3a = net.conv_bn_relu("branch3x3_2a", b3, 384, 1, 3, 1, 0, 1);
  FeatureMap b3b = net.conv_bn_relu("branch3x3_2b", b3, 384, 3, 1, 1, 1, 0);
  FeatureMap bd = net.conv_bn_relu("branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0);
  bd = net.conv_bn_relu("branch3x3dbl_2", bd, 384, 3, 3, 1, 1, 1);
  net.grad_accumulate("branch3x3dbl_2.grad_add", bd, 2);
  FeatureMap bda = net.conv_bn_relu("branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1);
  FeatureMap bdb = net.conv_bn_relu("branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0);
  FeatureMap bp = net.avg_pool("branch_pool.avgpool", x, 3, 1, 1);
  bp = net.conv_bn_relu("branch_pool", bp, 192, 1, 1, 1, 0, 0);
  return net.concat("concat", {b1, b3a, b3b, bda, bdb, bp});
}

// torchvision's InceptionAux on the 17x17x768 Mixed_6e output (paper section 4).
void inception_aux(Net& net, const FeatureMap& x, int num_classes) {
  FeatureMap y = net.avg_pool("aux.avgpool", x, 5, 3, 0);
  y = net.conv_bn_relu("aux.conv0", y, 128, 1, 1, 1, 0, 0);
  y = net.conv_bn_relu("aux.conv1", y, 768, 5, 5, 1, 0, 0);
  y = net.adaptive_avg_pool("aux.global_avgpool", y, 1);
  y = net.fc("aux.fc", y, num_classes, true);
  net.loss("aux.cross_entropy", y);
}

void build_inception(Net& net, const ModelSpec& spec) {
  FeatureMap x = net.image(spec.image_channels, spec.image_size);
  struct StemConv {
    const char* name;
    int out, kernel, stride, pad;
    bool pool_after;
  };
  const StemConv stem[] = {{"Conv2d_1a_3x3", 32, 3, 2, 0, false},
                           {"Conv2d_2a_3x3", 32, 3, 1, 0, false},
                           {"Conv2d_2b_3x3", 64, 3, 1, 1, true},
                           {"Conv2d_3b_1x1", 80, 1, 1, 0, false},
                           {"Conv2d_4a_3x3", 192, 3, 1, 0, true}};
  bool first = true;
  for (const StemConv& c : stem) {
    net.begin_layer(c.name, "stem", x, !first);
    first = false;
    x = net.conv_bn_relu("basic", x, c.out, c.kernel, c.kernel, c.stride, c.pad, c.pad);
    if (c.pool_after) x = net.max_pool("maxpool", x, 3, 2, 0);
    net.end_layer(&x);
  }
  auto mixed = [&](const char* name, auto&& body) {
    net.begin_layer(name, "inception", x, true);
    x = body();
    net.end_layer(&x);
  };
  mixed("Mixed_5b", [&] { return inception_a(net, x, 32); });
  mixed("Mixed_5c", [&] { return inception_a(net, x, 64); });
  mixed("Mixed_5d", [&] { return inception_a(net, x, 64); });
  mixed("Mixed_6a", [&] { return inception_b(net, x); });
  mixed("Mixed_6b", [&] { return inception_c(net, x, 128); });
  mixed("Mixed_6c", [&] { return inception_c(net, x, 160); });
  mixed("Mixed_6d", [&] { return inception_c(net, x, 160); });
  mixed("Mixed_6e", [&] {
    FeatureMap out = inception_c(net, x, 192);
    if (spec.aux_logits) {
      inception_aux(net, out, spec.num_classes);
      // Recorded last so that it runs first in backward: Mixed_6e's output gradient is the
      // sum of Mixed_7a's and the auxiliary head's.
      net.grad_accumulate("aux.output_grad_add", out, 2);
    }
    return out;
  });
  mixed("Mixed_7a", [&] { return inception_d(net, x); });
  mixed("Mixed_7b", [&] { return inception_e(net, x); });
  mixed("Mixed_7c", [&] { return inception_e(net, x); });

  net.begin_layer("head", "head", x, false);
  x = net.adaptive_avg_pool("avgpool", x, 1);
  x = net.dropout("dropout", x);
  x = net.fc("fc", x, spec.num_classes, true);
  net.loss("cross_entropy", x);
  net.end_layer(nullptr);
}

}  // namespace

std::vector<Layer> build_cnn_layers(const ModelSpec& spec, const BuildOptions& options) {
  Net net(options.micro_batch_size, options.activation_bytes_per_element);
  switch (spec.family) {
    case ModelFamily::kResnet:
      build_resnet(net, spec);
      break;
    case ModelFamily::kVgg:
      build_vgg(net, spec);
      break;
    default:
      build_inception(net, spec);
      break;
  }
  return net.take();
}

}  // namespace dtsim::models::internal
