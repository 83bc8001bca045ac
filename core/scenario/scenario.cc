#include "core/scenario/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/scenario/internal/binders.h"

namespace dtsim {

std::string to_string(const std::array<ParallelDim, 4>& order) {
  std::string text;
  for (ParallelDim d : order)
    text += (text.empty() ? "" : "-") + std::string(kParallelDimNames.to_string(d));
  return text;
}

bool parse_placement_order(const std::string& text, std::array<ParallelDim, 4>* order) {
  std::stringstream in(text);
  std::string part;
  std::vector<ParallelDim> dims;
  while (std::getline(in, part, '-')) {
    const std::optional<ParallelDim> dim = kParallelDimNames.parse(part);
    if (!dim) return false;
    dims.push_back(*dim);
  }
  if (dims.size() != 4) return false;
  auto sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  std::copy(dims.begin(), dims.end(), order->begin());
  return true;
}

int64_t Scenario::micro_batches() const {
  int64_t per_step = training.micro_batch_size.value * parallelism.data.value;
  return per_step > 0 ? training.global_batch_size.value / per_step : 0;
}

namespace scenario_binding {

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace scenario_binding

namespace {

using scenario_binding::Reader;

bool looks_binary(const std::string& bytes) {
  if (bytes.find('\0') != std::string::npos) return true;
  // YAML is Unicode text: invalid UTF-8 means a binary (or mis-encoded) file.
  for (size_t i = 0; i < bytes.size();) {
    auto c = static_cast<unsigned char>(bytes[i]);
    size_t extra = c < 0x80           ? 0
                   : (c >> 5) == 0x6  ? 1
                   : (c >> 4) == 0xE  ? 2
                   : (c >> 3) == 0x1E ? 3
                                      : 9;
    if (extra == 9 || i + extra >= bytes.size() + (extra == 0 ? 1 : 0)) return extra != 0;
    for (size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return true;
    i += extra + 1;
  }
  return false;
}

std::vector<std::string> leaf_paths(const SchemaNode& node, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& c : node.children) {
    std::string p = prefix.empty() ? c.key : prefix + "." + c.key;
    out.push_back(p);
    for (auto& sub : leaf_paths(c, p)) out.push_back(std::move(sub));
  }
  return out;
}

void apply_override(const Override& ov, int index, EntryMap& entries, DiagnosticSink& sink) {
  const SourceLocation loc{"--set", index, 0};
  auto eq = ov.text.find('=');
  if (eq == std::string::npos || eq == 0) {
    sink.add(
        loc, "",
        "expected --set key.path=value (e.g. --set cluster.nodes=16), found '" + ov.text + "'");
    return;
  }
  std::string path = ov.text.substr(0, eq);
  std::string value_text = ov.text.substr(eq + 1);
  const SchemaNode* node = find_schema_node(scenario_schema(), path);
  if (!node) {
    std::string msg = "unknown key path '" + path + "'";
    if (auto dym = did_you_mean(path, leaf_paths(scenario_schema(), "")); !dym.empty())
      msg += "; did you mean '" + dym + "'?";
    sink.add(loc, path, msg);
    return;
  }
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    sink.add(loc, path, "cannot parse the value '" + value_text + "': " + e.msg);
    return;
  }
  // The override replaces the key and anything under it.
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->first == path || it->first.rfind(path + ".", 0) == 0)
      it = entries.erase(it);
    else
      ++it;
  }
  validate(value, *node, path, "--set", loc, entries, sink);
}

// The model section is kept as located raw values: models/ resolves it (core does not know the
// architectures).
void bind_model(const Reader& r, const std::string& file, const EntryMap& entries,
                ModelSection& model, DiagnosticSink& sink) {
  for (const auto& [path, entry] : entries)
    if (path.rfind("model.", 0) == 0) model.entries.emplace(path, entry);
  if (auto p = r.get<std::string>("model.preset"))
    model.preset = Located<std::string>{*p, r.where("model.preset")};
  if (auto f = r.get<std::string>("model.family"))
    model.family = Located<std::string>{*f, r.where("model.family")};
  if (!model.preset && !model.family)
    sink.add(SourceLocation{file, 0, 0}, "model",
             "expected model.preset (see dtsim catalog models) or model.family with its fields");
}

// The bind stage: one binder per section (core/scenario/internal/binders.h), in the order whose
// diagnostics the bad-input corpus expects.
Scenario build(const std::string& file, EntryMap entries, DiagnosticSink& sink) {
  Scenario s;
  s.file = file;
  const Reader r(entries);
  s.name = r.get_or<std::string>("name", "");
  if (s.name.empty()) {  // the schema's default: the file name
    auto slash = file.find_last_of('/');
    s.name = file.substr(slash == std::string::npos ? 0 : slash + 1);
    if (auto dot = s.name.rfind(".yaml"); dot != std::string::npos) s.name.erase(dot);
  }
  s.description = r.get_or<std::string>("description", "");

  scenario_binding::bind_cluster(r, file, s.cluster, sink);
  bind_model(r, file, entries, s.model, sink);
  if (scenario_binding::bind_parallelism(r, s.cluster, s.parallelism, sink)) {
    scenario_binding::bind_training(r, s.parallelism, s.training, sink);
    scenario_binding::check_pipeline_schedule(r, s, sink);
    scenario_binding::check_precision(r, s.cluster, s.training, sink);
    scenario_binding::bind_simulate(r, s.simulate);
  }
  s.entries = std::move(entries);
  return s;
}

Scenario load_from_bytes(const std::string& bytes, const std::string& file,
                         const std::vector<Override>& overrides, const CrossCheck& check) {
  DiagnosticSink sink;
  const SourceLocation whole{file, 0, 0};
  if (looks_binary(bytes))
    throw InputError(Diagnostic{whole, "", "this is a binary file, not a YAML scenario"});
  YAML::Node root;
  try {
    root = YAML::Load(bytes);
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{SourceLocation{file, e.mark.line + 1, e.mark.column + 1}, "",
                                "YAML syntax error: " + e.msg});
  }
  if (root.IsNull() || !root.IsDefined())
    throw InputError(Diagnostic{whole, "",
                                "the scenario is empty; it needs at least a model section "
                                "(see scenarios/default.yaml)"});
  if (!root.IsMap())
    throw InputError(
        Diagnostic{SourceLocation{file, root.Mark().line + 1, root.Mark().column + 1}, "",
                   "expected a map of scenario sections (cluster, model, ...) at the top level"});
  EntryMap entries;
  validate(root, scenario_schema(), "", file, SourceLocation{}, entries, sink);
  for (size_t i = 0; i < overrides.size(); ++i)
    apply_override(overrides[i], static_cast<int>(i + 1), entries, sink);
  Scenario s = build(file, std::move(entries), sink);
  // Checks that need more than the scenario (the model's shape) report in the same pass, so a
  // TP size that does not divide the heads is named even when TP itself is not built yet.
  if (check) {
    try {
      check(s, sink);
    } catch (const InputError& e) {
      for (const auto& d : e.diagnostics()) {
        bool seen = false;
        for (const auto& known : sink.diagnostics())
          seen = seen || (known.key_path == d.key_path && known.message == d.message);
        if (!seen) sink.add(d);
      }
    }
  }
  sink.throw_if_any();
  return s;
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides,
                       const CrossCheck& check) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "",
                                "is a directory, not a scenario file (try " + path +
                                    (path.ends_with("/") ? "" : "/") + "default.yaml)"});
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "", "cannot open the scenario file"});
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "", "cannot read the scenario file"});
  return load_from_bytes(buf.str(), path, overrides, check);
}

Scenario load_scenario_text(const std::string& yaml_text, const std::string& name,
                            const std::vector<Override>& overrides, const CrossCheck& check) {
  return load_from_bytes(yaml_text, name, overrides, check);
}

}  // namespace dtsim
