#include "core/scenario/scenario.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_set>

#include "core/base/input_file.h"
#include "core/base/text.h"
#include "core/scenario/internal/binders.h"
#include "core/scenario/scenario_file.h"

namespace dtsim {

namespace scenario_binding {

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

void Reader::require_declared(const std::string& path) {
  // Binders read the same few hundred paths on every load (a plan loads thousands of
  // candidates), so each is looked up in the schema once per process.
  static std::mutex mutex;
  static std::unordered_set<std::string> declared;
  const std::lock_guard<std::mutex> lock(mutex);
  if (declared.contains(path)) return;
  if (!find_schema_node(scenario_schema(), path))
    throw std::logic_error("a scenario binder reads '" + path +
                           "', which the scenario schema does not declare");
  declared.insert(path);
}

}  // namespace scenario_binding

namespace {

using scenario_binding::Reader;

// The largest scenario file dtsim reads: a scenario is a few kilobytes, and the largest of
// scenarios/ is under 4 KiB, so 16 MiB is generous and still bounds the loader's memory.
constexpr std::uintmax_t kMaxScenarioBytes = 16u << 20;

void check_text(const std::string& bytes, const std::string& file) {
  check_yaml_text(bytes, file, "YAML scenario", "scenario");
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

void apply_override(const Override& ov, int index, EntryMap& entries, DiagnosticSink& sink,
                    const std::string& flag = "--set") {
  const SourceLocation loc{flag, index, 0};
  // A command-line value is text like a file's: UTF-8, so that every output can echo it.
  if (const auto bad = first_invalid_utf8(ov.text)) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(ov.text[*bad]));
    sink.add(loc, "",
             "the override is not UTF-8 text (byte " + std::string(byte) + " at offset " +
                 std::to_string(*bad) + "); give keys and values as UTF-8");
    return;
  }
  auto eq = ov.text.find('=');
  if (eq == std::string::npos || eq == 0) {
    sink.add(loc, "",
             "expected " + flag + " key.path=value (e.g. " + flag + " cluster.nodes=16), found '" +
                 ov.text + "'");
    return;
  }
  std::string path = ov.text.substr(0, eq);
  std::string value_text = ov.text.substr(eq + 1);
  const SchemaNode* node = find_schema_node(scenario_schema(), path);
  path = canonical_path(scenario_schema(), path);  // parallelism.tp -> parallelism.tensor
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
  validate(value, *node, path, flag, loc, entries, sink);
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
  if (model.preset || model.family) return;
  const bool cluster_only = std::none_of(entries.begin(), entries.end(), [](const auto& e) {
    return e.first.starts_with("model.") || e.first.starts_with("parallelism.") ||
           e.first.starts_with("training.");
  });
  sink.add(SourceLocation{file, 0, 0}, "model",
           cluster_only
               ? "this file describes only a cluster; simulating training needs a model section "
                 "(e.g. model: {preset: gpt3-1.3b}, see dtsim catalog models). dtsim collective "
                 "runs on a cluster alone"
               : "expected model.preset (see dtsim catalog models) or model.family with its "
                 "fields");
}

// The bind stage: one binder per section (core/scenario/internal/binders.h), in the order whose
// diagnostics the bad-input corpus expects.
Scenario build(const std::string& file, EntryMap entries, LoadScope scope, DiagnosticSink& sink) {
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
  if (scope == LoadScope::kCluster) {
    scenario_binding::bind_simulate(r, s.simulate);
    // Slow GPUs and links belong to the cluster: bound here too, so that a cluster-only command
    // (dtsim collective) sees them and can refuse them rather than ignore them.
    scenario_binding::bind_stragglers(r, s.cluster, s.stragglers, sink);
    s.entries = std::move(entries);
    return s;
  }
  bind_model(r, file, entries, s.model, sink);
  if (scope == LoadScope::kSearch) {
    // Pure data parallelism over the world (what the batch's default assumes); the checks between
    // the batch and that shape are left to the candidates.
    s.parallelism = ParallelismConfig{};
    s.parallelism.data = {static_cast<int>(s.cluster.nodes * s.cluster.gpus_per_node)};
    DiagnosticSink shape_dependent;  // the candidates' own loads report these
    scenario_binding::bind_training(r, s.parallelism, s.training, shape_dependent);
    for (const auto& d : shape_dependent.diagnostics())
      if (d.key_path != "training.global_batch_size" && d.key_path != "training.micro_batch_size" &&
          d.key_path.rfind("parallelism.", 0) != 0)
        sink.add(d);
    scenario_binding::check_precision(r, s.cluster, s.training, sink);
    scenario_binding::bind_simulate(r, s.simulate);
    scenario_binding::bind_reliability(r, s.cluster, s.reliability, sink);
  } else if (scenario_binding::bind_parallelism(r, s.cluster, s.parallelism, sink)) {
    scenario_binding::bind_training(r, s.parallelism, s.training, sink);
    scenario_binding::check_pipeline_schedule(r, s, sink);
    scenario_binding::check_training_modes(r, s, sink);
    scenario_binding::check_precision(r, s.cluster, s.training, sink);
    scenario_binding::bind_simulate(r, s.simulate);
    scenario_binding::bind_reliability(r, s.cluster, s.reliability, sink);
  }
  scenario_binding::bind_stragglers(r, s.cluster, s.stragglers, sink);
  s.entries = std::move(entries);
  return s;
}

// Counts what one YAML document holds, so a second document can be found without building it.
class DocumentProbe : public YAML::EventHandler {
 public:
  bool has_content() const { return content_; }
  const YAML::Mark& first_mark() const { return first_; }
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { saw(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    saw(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    saw(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    saw(m);
  }
  void OnMapEnd() override {}

 private:
  void saw(const YAML::Mark& m) {
    if (!content_) first_ = m;
    content_ = true;
  }
  bool content_ = false;
  YAML::Mark first_;
};

// The first line that is neither blank nor a comment (1-based), or 0 when there is none.
int first_content_line(const std::string& bytes) {
  int line = 1;
  for (size_t at = 0; at < bytes.size(); ++line) {
    size_t end = bytes.find('\n', at);
    if (end == std::string::npos) end = bytes.size();
    const size_t first = bytes.find_first_not_of(" \t\r", at);
    if (first < end && bytes[first] != '#') return line;
    at = end + 1;
  }
  return 0;
}

// One scenario is one YAML document: a second one (after ---) would be ignored silently, so it
// is an error. The documents are walked one at a time, never all at once: on some malformed
// text yaml-cpp 0.7 yields empty documents without advancing, and a loop over all of them
// would never end.
// The YAML parser holds about 700 bytes and spends about 9 us per node (measured: 7 million list
// items took over 60 s and 5 GB), so a file of more items than any scenario needs is refused
// before it is parsed: items are counted as lines and commas, an upper bound on the nodes.
constexpr size_t kMaxYamlItems = 100000;

void refuse_too_many_items(const std::string& bytes, const std::string& file) {
  size_t items = 0;
  int line = 1;
  for (char c : bytes) {
    if (c == '\n') ++line;
    if ((c == '\n' || c == ',') && ++items > kMaxYamlItems)
      throw InputError(Diagnostic{
          SourceLocation{file, line, 0}, "",
          "more than " + std::to_string(kMaxYamlItems) +
              " lines and list items by here; a scenario is short (a straggler entry takes "
              "nodes: or all: rather than a list of every rank), so this is not a scenario dtsim "
              "can read"});
  }
}

YAML::Node parse_one_document(const std::string& bytes, const std::string& file) {
  refuse_too_many_items(bytes, file);
  YAML::Node root;
  try {
    root = YAML::Load(bytes);
    std::istringstream in(bytes);
    YAML::Parser parser(in);
    DocumentProbe first, second;
    if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second) &&
        second.has_content())
      throw InputError(Diagnostic{
          SourceLocation{file, second.first_mark().line + 1, second.first_mark().column + 1}, "",
          "a second YAML document (after ---); a scenario file holds one document, so merge "
          "the two or keep each in its own file"});
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{SourceLocation{file, e.mark.line + 1, e.mark.column + 1}, "",
                                "YAML syntax error: " + e.msg});
  }
  if (root.IsNull() || !root.IsDefined()) {
    // Text that YAML reads as nothing is a syntax error at its first line, not an empty file.
    if (const int line = first_content_line(bytes))
      throw InputError(Diagnostic{SourceLocation{file, line, 1}, "",
                                  "YAML syntax error: no scenario could be read from this line "
                                  "on (a plain value cannot start with , [ ] { } or similar)"});
    throw InputError(Diagnostic{SourceLocation{file, 0, 0}, "",
                                "the scenario is empty; it needs at least a model section "
                                "(see scenarios/default.yaml)"});
  }
  return root;
}

Scenario load_from_bytes(const std::string& bytes, const std::string& file,
                         const std::vector<Override>& overrides, const CrossCheck& check,
                         LoadScope scope) {
  DiagnosticSink sink;
  const SourceLocation whole{file, 0, 0};
  check_text(bytes, file);
  const YAML::Node root = parse_one_document(bytes, file);
  if (!root.IsMap())
    throw InputError(
        Diagnostic{SourceLocation{file, root.Mark().line + 1, root.Mark().column + 1}, "",
                   "expected a map of scenario sections (cluster, model, ...) at the top level"});
  EntryMap entries;
  validate(root, scenario_schema(), "", file, SourceLocation{}, entries, sink);
  for (size_t i = 0; i < overrides.size(); ++i)
    apply_override(overrides[i], static_cast<int>(i + 1), entries, sink);
  Scenario s = build(file, std::move(entries), scope, sink);
  // Checks that need more than the scenario (the model's shape) report in the same pass, so a
  // TP size that does not divide the heads is named even when TP itself is not built yet. Without
  // a model there is nothing to check against (bind_model said so).
  if (check && scope != LoadScope::kCluster && (s.model.preset || s.model.family)) {
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
  for (const auto& n : sink.notes())
    s.notes.push_back((n.key_path.empty() ? "" : n.key_path + ": ") + n.message);
  return s;
}

}  // namespace

std::string read_scenario_file(const std::string& path) {
  return read_input_file(
      path, InputFileRules{"scenario file",
                           " (try " + path + (path.ends_with("/") ? "" : "/") + "default.yaml)",
                           "a scenario file", "a scenario is a few kilobytes of YAML",
                           kMaxScenarioBytes});
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides,
                       const CrossCheck& check, LoadScope scope) {
  return load_from_bytes(read_scenario_file(path), path, overrides, check, scope);
}

Scenario load_scenario_text(const std::string& yaml_text, const std::string& name,
                            const std::vector<Override>& overrides, const CrossCheck& check,
                            LoadScope scope) {
  return load_from_bytes(yaml_text, name, overrides, check, scope);
}

void check_override(const Override& override_text, const std::string& flag, int index,
                    DiagnosticSink& sink) {
  EntryMap scratch;
  apply_override(override_text, index, scratch, sink, flag);
}

}  // namespace dtsim
