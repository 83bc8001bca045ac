#include "models/model_builder.h"

#include <string>
#include <vector>

#include "core/base/error.h"
#include "models/internal/builders.h"

namespace dtsim::models {

ModelShape shape_of(const ModelSpec& spec) {
  const ModelSpec s = resolve_spec(spec);
  ModelShape shape;
  shape.family = std::string(to_string(s.family));
  shape.seq_length = 1;
  if (is_transformer(s.family)) {
    shape.num_layers = s.num_layers;
    shape.hidden_size = s.hidden_size;
    shape.num_attention_heads = s.num_attention_heads;
    shape.num_query_groups = s.num_query_groups;
    shape.ffn_hidden_size = s.ffn_hidden_size;
    shape.seq_length = s.seq_length;
    shape.vocab_size = s.vocab_size;
    if (s.num_experts >= 2) {
      shape.num_experts = s.num_experts;
      shape.top_k = s.top_k;
    }
  } else if (s.family == ModelFamily::kMlp) {
    shape.num_layers = static_cast<int>(s.mlp_widths.size());  // hidden layers + output layer
  } else if (s.family == ModelFamily::kInception) {
    shape.num_layers = 42;  // "42 layers deep", Szegedy et al. 2016, section 6
  } else {
    shape.num_layers = s.num_layers;  // the depth variant
  }
  return shape;
}

ModelGraph build_model(const ModelSpec& spec, const BuildOptions& options) {
  std::vector<Diagnostic> problems;
  if (options.micro_batch_size < 1) {
    problems.push_back({{},
                        "training.micro_batch_size",
                        "must be at least 1, found " + std::to_string(options.micro_batch_size)});
  }
  if (!(options.activation_bytes_per_element > 0)) {
    problems.push_back({{}, "training.precision", "activation bytes per element must be positive"});
  }
  for (const SpecProblem& p : check_spec(spec)) {
    problems.push_back({{}, "model." + p.field, p.message});
  }
  if (!problems.empty()) throw InputError(std::move(problems));

  const ModelSpec s = resolve_spec(spec);
  ModelGraph graph;
  graph.name = s.name;
  graph.shape = shape_of(s);
  graph.micro_batch_size = options.micro_batch_size;
  if (is_transformer(s.family)) {
    graph.layers = internal::build_transformer_layers(s, options);
  } else if (s.family == ModelFamily::kMlp) {
    graph.layers = internal::build_mlp_layers(s, options);
  } else {
    graph.layers = internal::build_cnn_layers(s, options);
  }
  return graph;
}

}  // namespace dtsim::models
