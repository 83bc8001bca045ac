#include "models/scenario_model.h"

#include "core/base/checked.h"

#include "models/model_builder.h"

namespace dtsim::models {
namespace {

SourceLocation where(const Scenario& sc, const std::string& path) {
  auto it = sc.model.entries.find(path);
  if (it != sc.model.entries.end()) return it->second.where;
  return SourceLocation{sc.file, 0, 0};
}

// The location to blame for a model field: the key itself if written, else the preset line.
SourceLocation blame(const Scenario& sc, const std::string& field) {
  const std::string path = "model." + field;
  if (sc.model.entries.count(path)) return where(sc, path);
  if (sc.model.preset) return sc.model.preset->where;
  if (sc.model.family) return sc.model.family->where;
  return SourceLocation{sc.file, 0, 0};
}

std::string divisors(int n) {
  std::string out;
  for (int d = 1; d <= n && out.size() < 60; ++d)
    if (n % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

}  // namespace

ModelSpec spec_from_scenario(const Scenario& sc) {
  DiagnosticSink sink;
  ModelSpec spec;
  if (sc.model.preset) {
    const ModelSpec* p = find_preset(sc.model.preset->value);
    if (!p) {
      std::string msg = "unknown model preset '" + sc.model.preset->value + "'";
      if (auto dym = did_you_mean(sc.model.preset->value, preset_names()); !dym.empty())
        msg += "; did you mean '" + dym + "'?";
      msg += " (dtsim catalog models lists them)";
      sink.add(sc.model.preset->where, "model.preset", msg);
      sink.throw_if_any();
    }
    spec = *p;
    if (sc.model.family && kModelFamilyNames.parse(sc.model.family->value) != spec.family)
      sink.add(sc.model.family->where, "model.family",
               "family '" + sc.model.family->value + "' contradicts preset '" + p->name +
                   "', which is " + std::string(to_string(p->family)) +
                   "; remove one of the two keys");
  } else if (sc.model.family) {
    auto d = family_defaults(sc.model.family->value);
    if (!d) {
      sink.add(sc.model.family->where, "model.family",
               "unknown family '" + sc.model.family->value + "'");
      sink.throw_if_any();
    }
    spec = *d;
    spec.name = "custom-" + sc.model.family->value;
  } else {
    sink.add(SourceLocation{sc.file, 0, 0}, "model",
             "expected model.preset (dtsim catalog models) or model.family with its fields");
    sink.throw_if_any();
  }
  auto set_int = [&](const char* field, int& target) {
    auto it = sc.model.entries.find(std::string("model.") + field);
    if (it == sc.model.entries.end()) return;
    if (const auto* v = std::get_if<int64_t>(&it->second.value))
      target = narrow<int>(*v, it->first.c_str());
  };
  set_int("num_layers", spec.num_layers);
  set_int("hidden_size", spec.hidden_size);
  set_int("num_attention_heads", spec.num_attention_heads);
  set_int("num_query_groups", spec.num_query_groups);
  set_int("ffn_hidden_size", spec.ffn_hidden_size);
  set_int("seq_length", spec.seq_length);
  set_int("vocab_size", spec.vocab_size);
  set_int("num_experts", spec.num_experts);
  set_int("top_k", spec.top_k);
  set_int("image_size", spec.image_size);
  set_int("num_classes", spec.num_classes);
  if (auto it = sc.model.entries.find("model.activation"); it != sc.model.entries.end())
    if (const auto* v = std::get_if<std::string>(&it->second.value))
      spec.activation = kActivationNames.from_valid(*v);
  if (auto it = sc.model.entries.find("model.mlp_widths"); it != sc.model.entries.end())
    if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second.value)) {
      spec.mlp_widths.clear();
      for (size_t i = 0; i < v->size(); ++i) {
        const int64_t w = (*v)[i];
        // Refused here, before the int it is held in: 2^31 would not fit it.
        if (w < 1 || w > kMaxMlpWidth) {
          sink.add(where(sc, "model.mlp_widths"), "model.mlp_widths",
                   "entry " + std::to_string(i) + " must be between 1 and " +
                       std::to_string(kMaxMlpWidth) + ", found " + std::to_string(w));
          continue;
        }
        spec.mlp_widths.push_back(static_cast<int>(w));
      }
      sink.throw_if_any();
    }
  spec = resolve_spec(spec);
  for (const auto& problem : check_spec(spec))
    sink.add(blame(sc, problem.field), "model." + problem.field, problem.message);
  sink.throw_if_any();
  return spec;
}

namespace {
void check_parallel_sizes(const Scenario& sc, const ModelSpec& spec, DiagnosticSink& sink);
}  // namespace

void check_scenario(const Scenario& sc, DiagnosticSink& sink) {
  const ModelSpec spec = spec_from_scenario(sc);  // throws InputError with the model's problems
  check_parallel_sizes(sc, spec, sink);
}

namespace {
ModelSpec checked_spec(const Scenario& sc) {
  ModelSpec spec = spec_from_scenario(sc);
  DiagnosticSink sink;
  check_parallel_sizes(sc, spec, sink);
  sink.throw_if_any();
  return spec;
}

BuildOptions build_options(const Scenario& sc, bool shard) {
  BuildOptions options;
  options.micro_batch_size =
      narrow<int>(sc.training.micro_batch_size.value, "training.micro_batch_size");
  options.activation_bytes_per_element = training_bytes_per_element(sc.training.precision);
  options.flash_attention = sc.training.flash_attention;
  options.moe_permute_fusion = sc.training.moe_permute_fusion;
  options.moe_router_fusion = sc.training.moe_router_fusion;
  options.moe_load_imbalance = sc.training.moe_load_imbalance;
  options.fp8 = sc.training.precision == DType::kFp8;
  if (shard) {
    options.tensor_parallel = sc.parallelism.tensor.value;
    options.sequence_parallel = sc.parallelism.sequence_parallel;
    options.context_parallel = sc.parallelism.context.value;
    options.expert_parallel = sc.parallelism.expert.value;
  }
  return options;
}

ModelGraph build_graph(const Scenario& sc, const ModelSpec& spec, bool shard) {
  return build_model(spec, build_options(sc, shard));
}
}  // namespace

ModelGraph model_from_scenario(const Scenario& sc) {
  return build_graph(sc, checked_spec(sc), false);
}

BuildOptions shard_options(const Scenario& sc) {
  return build_options(sc, true);
}

ModelGraph shard_from_scenario(const Scenario& sc) {
  return build_graph(sc, checked_spec(sc), true);
}

ScenarioGraphs graphs_from_scenario(const Scenario& sc) {
  ScenarioGraphs g{checked_spec(sc), {}, {}};
  g.whole = build_graph(sc, g.spec, false);
  const auto& par = sc.parallelism;
  const bool split = par.tensor.value > 1 || par.context.value > 1 || par.expert.value > 1;
  g.shard = split ? build_graph(sc, g.spec, true) : g.whole;
  return g;
}

namespace {
void check_parallel_sizes(const Scenario& sc, const ModelSpec& spec, DiagnosticSink& sink) {
  const auto& par = sc.parallelism;
  // The mixture-of-experts keys shape the MoE layer only: on a dense model they would do nothing.
  if (spec.num_experts < 2)
    for (const char* key : {"training.moe_permute_fusion", "training.moe_router_fusion",
                            "training.moe_load_imbalance"})
      if (auto it = sc.entries.find(key); it != sc.entries.end())
        sink.add(it->second.where, key,
                 spec.name + " is dense (model.num_experts < 2), so " + key +
                     " would change nothing; remove it or choose a mixture-of-experts model");
  if (spec.num_experts >= 2 && par.expert.value < 2)
    if (auto it = sc.entries.find("training.moe_load_imbalance"); it != sc.entries.end())
      sink.add(it->second.where, "training.moe_load_imbalance",
               "the load imbalance between expert-parallel ranks needs expert parallelism "
               "(parallelism.expert > 1); with one rank holding every expert it changes nothing, "
               "so remove it or set parallelism.expert");
  if (is_transformer(spec.family)) {
    const int t = par.tensor.value;
    if (t > 1 && spec.num_attention_heads % t != 0)
      sink.add(par.tensor.where, "parallelism.tensor",
               "tensor-parallel size " + std::to_string(t) + " does not divide the " +
                   std::to_string(spec.num_attention_heads) +
                   " attention heads (model.num_attention_heads); choose one of " +
                   divisors(spec.num_attention_heads));
    else if (t > 1 && spec.num_query_groups % t != 0)
      sink.add(par.tensor.where, "parallelism.tensor",
               "tensor-parallel size " + std::to_string(t) + " does not divide the " +
                   std::to_string(spec.num_query_groups) +
                   " key/value groups (model.num_query_groups); choose one of " +
                   divisors(spec.num_query_groups));
    const int p = par.pipeline.value;
    const int64_t chunks =
        static_cast<int64_t>(p) * (par.schedule == Schedule::kInterleaved ? par.virtual_stages : 1);
    if (p > 1 && par.layers_per_stage.empty() && spec.num_layers % chunks != 0)
      sink.add(par.pipeline.where, "parallelism.pipeline",
               chunks == p
                   ? "pipeline size " + std::to_string(p) + " does not divide the " +
                         std::to_string(spec.num_layers) + " layers; choose one of " +
                         divisors(spec.num_layers) + " or give parallelism.layers_per_stage"
                   : "pipeline x virtual_stages = " + std::to_string(chunks) +
                         " model chunks do not divide the " + std::to_string(spec.num_layers) +
                         " layers; choose sizes whose product is one of " +
                         divisors(spec.num_layers) + " or give parallelism.layers_per_stage");
    if (par.tp_comm_overlap && (par.tensor.value < 2 || !par.sequence_parallel))
      sink.add(sc.entries.count("parallelism.tp_comm_overlap")
                   ? sc.entries.at("parallelism.tp_comm_overlap").where
                   : par.tensor.where,
               "parallelism.tp_comm_overlap",
               "TP communication overlap needs tensor > 1 and sequence_parallel: true (Megatron-LM "
               "overlaps the sequence-parallel all-gathers and reduce-scatters)");
    const int cp = par.context.value;
    if (cp > 1 && spec.seq_length % cp != 0)
      sink.add(par.context.where, "parallelism.context",
               "context-parallel size " + std::to_string(cp) + " does not divide the " +
                   std::to_string(spec.seq_length) + "-token sequence (model.seq_length)");
    const int ep = par.expert.value;
    if (ep > 1 && spec.num_experts < 2)
      sink.add(par.expert.where, "parallelism.expert",
               "expert parallelism needs a mixture-of-experts model (model.num_experts >= 2); " +
                   spec.name + " is dense, so use expert: 1");
    else if (ep > 1 && spec.num_experts % ep != 0)
      sink.add(par.expert.where, "parallelism.expert",
               "expert-parallel size " + std::to_string(ep) + " does not divide the " +
                   std::to_string(spec.num_experts) + " experts; choose one of " +
                   divisors(spec.num_experts));
    else if (ep > 1 && par.data.value % ep != 0)
      sink.add(par.expert.where, "parallelism.expert",
               "expert-parallel size " + std::to_string(ep) +
                   " does not divide the data-parallel size " + std::to_string(par.data.value) +
                   "; the expert-parallel group is carved out of the data-parallel ranks");
    else if (ep > 1 && par.tensor.value > 1 && !par.sequence_parallel)
      sink.add(par.expert.where, "parallelism.expert",
               "expert parallelism with tensor parallelism needs sequence_parallel: true (as in "
               "Megatron-LM), so that each rank routes only its own tokens");
    if (!par.layers_per_stage.empty()) {
      int64_t sum = 0;
      bool empty_stage = false;
      for (auto k : par.layers_per_stage) {
        sum += k;
        empty_stage = empty_stage || k < 1;
      }
      if (sum != spec.num_layers || empty_stage)
        sink.add(sc.entries.count("parallelism.layers_per_stage")
                     ? sc.entries.at("parallelism.layers_per_stage").where
                     : par.pipeline.where,
                 "parallelism.layers_per_stage",
                 "the stages hold " + std::to_string(sum) + " blocks in all, but the model has " +
                     std::to_string(spec.num_layers) +
                     "; every stage needs at least one and they must add up");
    }
  } else {
    if (par.tensor.value > 1)
      sink.add(par.tensor.where, "parallelism.tensor",
               "tensor parallelism applies to transformer models; " +
                   std::string(to_string(spec.family)) + " needs tensor: 1");
    if (par.pipeline.value > 1)
      sink.add(par.pipeline.where, "parallelism.pipeline",
               "pipeline parallelism applies to transformer models here; " +
                   std::string(to_string(spec.family)) + " needs pipeline: 1");
    if (par.context.value > 1)
      sink.add(par.context.where, "parallelism.context",
               "context parallelism splits a sequence; " + std::string(to_string(spec.family)) +
                   " has none, so use context: 1");
    if (par.expert.value > 1)
      sink.add(par.expert.where, "parallelism.expert",
               "expert parallelism needs a mixture-of-experts model; " +
                   std::string(to_string(spec.family)) + " needs expert: 1");
  }
  if (par.tensor.value > 1 && sc.cluster.gpus_per_node % par.tensor.value != 0)
    sink.add(par.tensor.where, "parallelism.tensor",
             "tensor-parallel size " + std::to_string(par.tensor.value) + " does not divide the " +
                 std::to_string(sc.cluster.gpus_per_node) +
                 " GPUs of a node (cluster.gpus_per_node); TP groups must stay inside a node");
}
}  // namespace

}  // namespace dtsim::models
