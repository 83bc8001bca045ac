// The scenario's bind stage (DuckDB's binder): validated entries become the typed sections of a
// Scenario, one binder per section, each with the cross-checks that need only what it binds and
// the sections bound before it. load_scenario() (scenario.cc) calls them in a fixed order, which
// is also the order their diagnostics are reported in (the bad-input corpus compares it).
//
// Defaults: a key the user left out takes the default its schema node states (default_text),
// read through Reader::value(); only defaults the schema words as prose ("from preset",
// "gpus_per_node") are computed by the binders.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "core/scenario/scenario.h"

namespace dtsim::scenario_binding {

// Typed access to the validated entries, with the schema's defaults for absent keys.
class Reader {
 public:
  explicit Reader(const EntryMap& entries) : entries_(entries) {}

  // Every read names a key of the schema: a path the schema does not declare (a misspelling in
  // a binder) is a programmer error, never a silent "not given".
  const Entry* find(const std::string& path) const {
    require_declared(path);
    auto it = entries_.find(path);
    return it == entries_.end() ? nullptr : &it->second;
  }
  template <class T>
  std::optional<T> get(const std::string& path) const {
    if (const Entry* e = find(path))
      if (const T* v = std::get_if<T>(&e->value)) return *v;
    return std::nullopt;
  }
  // The given value, or a fallback the binder computes (for defaults the schema words as prose).
  template <class T>
  T get_or(const std::string& path, T fallback) const {
    return get<T>(path).value_or(std::move(fallback));
  }
  // The given value, or the schema's default for the key.
  template <class T>
  T value(const std::string& path) const {
    if (auto v = get<T>(path)) return *v;
    return schema_default<T>(path);
  }
  // The schema's default for a key; a default that is prose or of another type is a programmer
  // error.
  template <class T>
  static T schema_default(const std::string& path) {
    const SchemaNode* node = find_schema_node(scenario_schema(), path);
    const std::optional<Value> v = node ? default_value(*node) : std::nullopt;
    if (const T* typed = v ? std::get_if<T>(&*v) : nullptr) return *typed;
    throw std::logic_error("the scenario schema states no usable default for " + path);
  }
  SourceLocation where(const std::string& path) const {
    const Entry* e = find(path);
    return e ? e->where : SourceLocation{};
  }
  // A located int from a count key: the given value, else the schema's default.
  Located<int> count(const std::string& path) const {
    return {static_cast<int>(value<int64_t>(path)), where(path)};
  }
  // A located int from a count key whose default the binder computes.
  Located<int> count(const std::string& path, int fallback) const {
    return {static_cast<int>(get_or<int64_t>(path, fallback)), where(path)};
  }

  // Every validated key under `prefix` ("cluster.network."), in key order.
  std::vector<std::pair<std::string, const Entry*>> under(const std::string& prefix) const {
    require_declared(prefix.ends_with('.') ? prefix.substr(0, prefix.size() - 1) : prefix);
    std::vector<std::pair<std::string, const Entry*>> out;
    for (auto it = entries_.lower_bound(prefix);
         it != entries_.end() && it->first.starts_with(prefix); ++it)
      out.emplace_back(it->first, &it->second);
    return out;
  }

 private:
  // Throws std::logic_error for a path the scenario schema does not declare.
  static void require_declared(const std::string& path);
  const EntryMap& entries_;
};

// "12345" for a whole double, as diagnostics print counts.
std::string format_count(double v);

// bind_cluster.cc: the GPU, the fabric inside a node and the network (catalog names resolved,
// inline specs built), with their checks: unknown names, incomplete inline specs, a kind that
// contradicts its preset, torus dimensions against the node count, and --set overrides of
// hardware the cluster does not use (the network of a one-node cluster).
void bind_cluster(const Reader& r, const std::string& file, ClusterConfig& cluster,
                  DiagnosticSink& sink);

// bind_parallelism.cc: the parallel sizes and options, with their checks against the cluster's
// GPU count. Returns false when the sizes cannot fit the cluster at all (too many GPUs, or more
// model-parallel ranks than GPUs): the sections bound after it would only repeat that problem.
bool bind_parallelism(const Reader& r, const ClusterConfig& cluster, ParallelismConfig& par,
                      DiagnosticSink& sink);
// The pipeline schedule against the pipeline size and the micro-batches per pipeline, which the
// training section decides; run after bind_training.
void check_pipeline_schedule(const Reader& r, const Scenario& s, DiagnosticSink& sink);

// bind_training.cc: batch sizes, precision, recompute, optimizer and buckets, with the check that
// the global batch splits into micro-batches over the data-parallel ranks.
void bind_training(const Reader& r, const ParallelismConfig& par, TrainingConfig& training,
                   DiagnosticSink& sink);
// bind_training.cc: the pipeline schedules and gradient compression against ZeRO and each other.
void check_training_modes(const Reader& r, const Scenario& s, DiagnosticSink& sink);
// The precision against the GPU's tensor-core peaks; run after the schedule checks.
void check_precision(const Reader& r, const ClusterConfig& cluster, const TrainingConfig& training,
                     DiagnosticSink& sink);

// bind_simulate.cc: how to run the prediction (no checks beyond the schema's).
void bind_simulate(const Reader& r, SimulateConfig& simulate);

// bind_stragglers.cc: the `stragglers:` list, with its ranks, nodes and NICs checked against the
// cluster, probabilities in [0, 1], slowdowns of at least 1 and link fractions in (0, 1].
void bind_stragglers(const Reader& r, const ClusterConfig& cluster, StragglerConfig& stragglers,
                     DiagnosticSink& sink);

// bind_reliability.cc: training.steps and tokens, failures and checkpoint, with their checks
// (one of steps and tokens; scripted events: a known kind, a time, a node that exists).
void bind_reliability(const Reader& r, const ClusterConfig& cluster, ReliabilityConfig& rel,
                      DiagnosticSink& sink);

}  // namespace dtsim::scenario_binding
