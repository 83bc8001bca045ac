// The per-family graph builders behind build_model(). Private to models/.
//
// Contract: each takes a spec that passed check_spec() and was resolved by resolve_spec(), and
// a micro-batch size >= 1; build_model() guarantees both, so these never see bad input.
#pragma once

#include "core/ir/model_graph.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::models::internal {

// gpt, llama, moe, bert (transformer.cc).
std::vector<Layer> build_transformer_layers(const ModelSpec& spec, const BuildOptions& options);
// resnet, vgg, inception (cnn.cc).
std::vector<Layer> build_cnn_layers(const ModelSpec& spec, const BuildOptions& options);
// mlp (mlp.cc).
std::vector<Layer> build_mlp_layers(const ModelSpec& spec, const BuildOptions& options);

}  // namespace dtsim::models::internal
