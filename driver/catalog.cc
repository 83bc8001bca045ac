#include "driver/catalog.h"

#include <cmath>
#include <stdexcept>

#include "core/config/engine_choices.h"
#include "core/report/json_numbers.h"
#include "core/scenario/scenario.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::driver {
namespace {

using nlohmann::json;

// One field of a hardware entry: its JSON key (with the unit), the key an inline spec writes it
// under (nullptr when an inline spec cannot set it), the unit an inline value carries, and how to
// read it from the spec.
template <class Spec>
struct Field {
  const char* json_key;
  const char* inline_key;
  const char* inline_unit;  // appended to the number: "B", "Bps", "s", "FLOPS"; "" for none
  json (*get)(const Spec&);
};

const std::vector<Field<GpuSpec>>& gpu_fields() {
  static const std::vector<Field<GpuSpec>> fields{
      {"name", "name", "", [](const GpuSpec& g) { return json(g.name); }},
      {"vendor", nullptr, "", [](const GpuSpec& g) { return json(g.vendor); }},
      {"peak_flops_per_s", "peak", "FLOPS",
       [](const GpuSpec& g) {
         json peak = json::object();
         for (const auto& [dtype, name] : kDTypeNames)
           if (g.supports(dtype)) peak[std::string(name)] = g.peak.at(dtype).value();
         return peak;
       }},
      {"memory_bytes", "memory", "B", [](const GpuSpec& g) { return json(g.memory.value()); }},
      {"memory_bandwidth_Bps", "memory_bandwidth", "Bps",
       [](const GpuSpec& g) { return json(g.memory_bandwidth.value()); }},
      {"default_intra_node", nullptr, "",
       [](const GpuSpec& g) { return json(g.default_intra_node); }},
      {"gemm_efficiency", "gemm_efficiency", "",
       [](const GpuSpec& g) { return json(g.gemm_efficiency); }},
      {"attention_efficiency", "attention_efficiency", "",
       [](const GpuSpec& g) { return json(g.attention_efficiency); }},
      {"memory_efficiency", "memory_efficiency", "",
       [](const GpuSpec& g) { return json(g.memory_efficiency); }},
      {"kernel_launch_overhead_s", "kernel_launch_overhead", "s",
       [](const GpuSpec& g) { return json(g.kernel_launch_overhead.value()); }},
      {"sm_count", "sm_count", "", [](const GpuSpec& g) { return json(g.sm_count); }},
      {"source", nullptr, "", [](const GpuSpec& g) { return json(g.source); }},
      {"efficiency_source", nullptr, "",
       [](const GpuSpec& g) { return json(g.efficiency_source); }},
      {"max_power_w", "max_power", "W", [](const GpuSpec& g) { return json(g.max_power.value()); }},
      {"idle_power_w", "idle_power", "W",
       [](const GpuSpec& g) { return json(g.idle_power.value()); }},
      {"host_power_w", nullptr, "", [](const GpuSpec& g) { return json(g.host_power.value()); }},
      {"power_source", nullptr, "", [](const GpuSpec& g) { return json(g.power_source); }},
  };
  return fields;
}

const std::vector<Field<IntraNodeFabricSpec>>& fabric_fields() {
  using F = IntraNodeFabricSpec;
  static const std::vector<Field<F>> fields{
      {"name", "name", "", [](const F& f) { return json(f.name); }},
      {"kind", "kind", "", [](const F& f) { return json(to_string(f.kind)); }},
      {"per_gpu_bandwidth_Bps", "bandwidth", "Bps",
       [](const F& f) { return json(f.per_gpu_bandwidth.value()); }},
      {"latency_s", "latency", "s", [](const F& f) { return json(f.latency.value()); }},
      {"protocol_efficiency", "protocol_efficiency", "",
       [](const F& f) { return json(f.protocol_efficiency); }},
      {"source", nullptr, "", [](const F& f) { return json(f.source); }},
  };
  return fields;
}

const std::vector<Field<NetworkSpec>>& network_fields() {
  using N = NetworkSpec;
  static const std::vector<Field<N>> fields{
      // A scenario names a catalog network with `preset`; inline, it gives the figures.
      {"name", nullptr, "", [](const N& n) { return json(n.name); }},
      {"kind", "kind", "", [](const N& n) { return json(to_string(n.kind)); }},
      {"port_bandwidth_Bps", "nic_bandwidth", "Bps",
       [](const N& n) { return json(n.port_bandwidth.value()); }},
      {"latency_s", "latency", "s", [](const N& n) { return json(n.latency.value()); }},
      {"protocol_efficiency", "protocol_efficiency", "",
       [](const N& n) { return json(n.protocol_efficiency); }},
      {"source", nullptr, "", [](const N& n) { return json(n.source); }},
      {"switch_port_power_w", "switch_port_power", "W",
       [](const N& n) { return json(n.switch_port_power.value()); }},
      {"power_source", nullptr, "", [](const N& n) { return json(n.power_source); }},
  };
  return fields;
}

template <class Spec>
json render(const std::vector<Field<Spec>>& fields, const Spec& spec) {
  json entry = json::object();
  for (const auto& f : fields) entry[f.json_key] = f.get(spec);
  whole_numbers_as_integers(entry);
  return entry;
}

template <class Spec>
json render_all(const std::vector<Field<Spec>>& fields, const std::vector<Spec>& catalog) {
  json entries = json::array();
  for (const auto& spec : catalog) entries.push_back(render(fields, spec));
  return entries;
}

// A JSON value as an inline YAML value: strings quoted (JSON strings are YAML scalars), numbers
// in their shortest exact form followed by the unit, objects as flow maps.
std::string inline_value(const json& value, const std::string& unit) {
  if (value.is_object()) {
    std::string out = "{";
    for (const auto& [key, member] : value.items())
      out += (out.size() > 1 ? ", " : "") + key + ": " + inline_value(member, unit);
    return out + "}";
  }
  if (value.is_number()) return value.dump() + unit;
  return value.dump();
}

template <class Spec>
std::string inline_yaml(const std::vector<Field<Spec>>& fields, const json& entry) {
  std::string out = "{";
  for (const auto& f : fields) {
    if (!f.inline_key || !entry.contains(f.json_key)) continue;
    out += (out.size() > 1 ? ", " : "") + std::string(f.inline_key) + ": " +
           inline_value(entry.at(f.json_key), f.inline_unit);
  }
  return out + "}";
}

template <class Spec>
std::vector<std::string> inline_keys(const std::vector<Field<Spec>>& fields) {
  std::vector<std::string> keys;
  for (const auto& f : fields)
    if (f.inline_key) keys.push_back(f.json_key);
  return keys;
}

// The base unit a quantity's bounds are in.
const char* unit_of(ValueType type) {
  switch (type) {
    case ValueType::kBytes:
      return "bytes";
    case ValueType::kBandwidth:
      return "bytes_per_s";
    case ValueType::kDuration:
      return "s";
    case ValueType::kFlopRate:
      return "flops_per_s";
    case ValueType::kPower:
      return "w";
    default:
      return nullptr;
  }
}

json schema_node_json(const SchemaNode& node, const std::string& path) {
  json out = {{"key", path}, {"type", kValueTypeNames.to_string(node.type)}, {"doc", node.doc}};
  if (node.type != ValueType::kMap) out["description"] = describe(node);
  if (!node.default_text.empty()) out["default"] = node.default_text;
  if (auto choices = node.all_choices(); !choices.empty()) out["choices"] = choices;
  const bool bounded = node.type == ValueType::kCount || node.type == ValueType::kCountOrAuto ||
                       node.type == ValueType::kNumber || node.type == ValueType::kNumberOrAuto ||
                       node.type == ValueType::kCountList;
  if (bounded || node.positive || unit_of(node.type)) {
    if (bounded || node.min > 0) out["min"] = node.min;
    if (node.max < 1e17) out["max"] = node.max;
  }
  if (node.positive) out["positive"] = true;
  if (const char* unit = unit_of(node.type)) out["unit"] = unit;
  if (node.unsupported) out["some_values_refused"] = true;
  if (!node.aliases.empty()) out["aliases"] = node.aliases;
  if (!node.children.empty()) {
    json children = json::array();
    for (const auto& c : node.children)
      children.push_back(schema_node_json(c, path.empty() ? c.key : path + "." + c.key));
    out["children"] = children;
  }
  return out;
}

}  // namespace

json to_json(const GpuSpec& gpu) {
  return render(gpu_fields(), gpu);
}
json to_json(const IntraNodeFabricSpec& fabric) {
  return render(fabric_fields(), fabric);
}
json to_json(const NetworkSpec& network) {
  return render(network_fields(), network);
}

json gpu_catalog_json() {
  return render_all(gpu_fields(), gpu_catalog());
}
json fabric_catalog_json() {
  return render_all(fabric_fields(), fabric_catalog());
}
json network_catalog_json() {
  return render_all(network_fields(), network_catalog());
}

json hardware_catalog_json() {
  return {{"gpus", gpu_catalog_json()},
          {"fabrics", fabric_catalog_json()},
          {"networks", network_catalog_json()}};
}

std::vector<std::string> inline_fields(HardwareKind kind) {
  switch (kind) {
    case HardwareKind::kGpu:
      return inline_keys(gpu_fields());
    case HardwareKind::kFabric:
      return inline_keys(fabric_fields());
    case HardwareKind::kNetwork:
      return inline_keys(network_fields());
  }
  throw std::logic_error("inline_fields: unknown hardware kind");
}

std::string inline_spec_yaml(HardwareKind kind, const json& entry) {
  switch (kind) {
    case HardwareKind::kGpu:
      return inline_yaml(gpu_fields(), entry);
    case HardwareKind::kFabric:
      return inline_yaml(fabric_fields(), entry);
    case HardwareKind::kNetwork:
      return inline_yaml(network_fields(), entry);
  }
  throw std::logic_error("inline_spec_yaml: unknown hardware kind");
}

json model_catalog_json() {
  json entries = json::array();
  for (const auto& name : models::preset_names()) {
    const models::ModelSpec spec = models::resolve_spec(*models::find_preset(name));
    json m = {{"name", name}, {"family", models::to_string(spec.family)}};
    if (models::is_transformer(spec.family)) {
      m["num_layers"] = spec.num_layers;
      m["hidden_size"] = spec.hidden_size;
      m["num_attention_heads"] = spec.num_attention_heads;
      m["num_query_groups"] = spec.num_query_groups;
      m["ffn_hidden_size"] = spec.ffn_hidden_size;
      m["seq_length"] = spec.seq_length;
      m["vocab_size"] = spec.vocab_size;
      m["num_experts"] = spec.num_experts;
      m["top_k"] = spec.top_k;
    } else if (spec.family == models::ModelFamily::kMlp) {
      m["mlp_widths"] = spec.mlp_widths;
      m["num_classes"] = spec.num_classes;
    } else {
      m["num_layers"] = spec.num_layers;
      m["image_size"] = spec.image_size;
      m["num_classes"] = spec.num_classes;
    }
    m["activation"] = models::to_string(spec.activation);
    m["parameters"] = models::build_model(spec, models::BuildOptions{}).parameters();
    m["source"] = spec.source;
    whole_numbers_as_integers(m);
    entries.push_back(m);
  }
  return entries;
}

json engine_catalog_json() {
  json entries = json::array();
  for (const auto& e : engine_choice_list())
    entries.push_back({{"name", e.name}, {"description", e.description}});
  return entries;
}

json scenario_keys_json() {
  json keys = json::array();
  for (const auto& c : scenario_schema().children) keys.push_back(schema_node_json(c, c.key));
  whole_numbers_as_integers(keys);  // bounds: min 1000000000, not 1000000000.0
  return {{"keys", keys}};
}

std::string render_engine_catalog() {
  std::string out = "name       description\n";
  for (const auto& e : engine_choice_list()) {
    std::string name = e.name;
    name.resize(std::max<size_t>(name.size() + 1, 11), ' ');
    out += name + e.description + "\n";
  }
  return out;
}

}  // namespace dtsim::driver
