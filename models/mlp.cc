// MLP graphs: fully connected layers of the widths in ModelSpec::mlp_widths (input first),
// then an output layer of num_classes units with a softmax cross-entropy loss.
//
// Layers: "fc.0".."fc.{n-1}" (kind "fc": linear with bias, then the activation) and "fc.n"
// (kind "head": linear with bias, then the loss), where n = mlp_widths.size() - 1 hidden
// layers. A linear of k inputs and n outputs on b samples is one gemm of 2bkn FLOPs with k·n
// weights and n biases. ReLU/GELU are elementwise (fwd 2N, bwd 3N elements, as in cnn.cc);
// the loss reads the logits and keeps fp32 probabilities.
// Activation bytes: each layer keeps its input (the linear's weight gradient reads it) and
// its pre-activation (GELU's backward reads it; ReLU's output is the next layer's input and
// serves its backward, so ReLU adds nothing), each at e bytes per element.
#include <string>
#include <vector>

#include "models/internal/builders.h"
#include "models/internal/layer_builder.h"

namespace dtsim::models::internal {

std::vector<Layer> build_mlp_layers(const ModelSpec& spec, const BuildOptions& options) {
  const double b = options.micro_batch_size;
  const double e = options.activation_bytes_per_element;
  std::vector<int> widths = spec.mlp_widths;
  widths.push_back(spec.num_classes);
  std::vector<Layer> layers;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const bool last = i + 2 == widths.size();
    const double in = widths[i];
    const double out = widths[i + 1];
    LayerBuilder layer("fc." + std::to_string(i), last ? "head" : "fc", e);
    layer.set_recomputable(i > 0 && !last);
    layer.set_input_bytes(e * b * in);
    layer.linear("fc", b, in, out, true);
    layer.stash("input", e * b * in);
    if (last) {
      layer.elementwise("cross_entropy", (e + 4) * b * out, (4 + e) * b * out);
      layer.stash("probabilities", 4 * b * out);
    } else if (spec.activation == Activation::kGelu) {
      layer.elementwise("gelu", 2 * e * b * out, 3 * e * b * out);
      layer.stash("gelu_input", e * b * out);
    } else {
      layer.elementwise("relu", 2 * e * b * out, 3 * e * b * out);
    }
    layers.push_back(layer.finish());
  }
  return layers;
}

}  // namespace dtsim::models::internal
