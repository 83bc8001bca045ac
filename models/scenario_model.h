// Resolves a scenario's model section (preset + overrides, or family + fields) into a
// ModelSpec and a layer graph, and runs the checks that need both the model and the
// parallel configuration (tensor size divides the heads, pipeline size divides the layers).
//
// Contract: every problem becomes a Diagnostic at the line of the key at fault; all are thrown
// together as one InputError (exit 2).
#pragma once

#include "core/ir/model_graph.h"
#include "core/scenario/scenario.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::models {

// The spec the scenario asks for (preset fields overridden by explicit keys), resolved.
ModelSpec spec_from_scenario(const Scenario& scenario);

// The model checks as a core::CrossCheck for load_scenario: the model section, and the parallel
// sizes against the architecture (TP divides the heads and the node, PP divides the layers).
void check_scenario(const Scenario& scenario, DiagnosticSink& sink);

// spec_from_scenario + feasibility checks + build_model for the scenario's micro-batch: the
// whole model on one replica (for parameter and FLOP counts).
ModelGraph model_from_scenario(const Scenario& scenario);

// The graph of one tensor-parallel rank (parallelism.tensor, sequence_parallel), which the
// strategies consume; equal to model_from_scenario() when tensor is 1.
ModelGraph shard_from_scenario(const Scenario& scenario);

// The options shard_from_scenario() builds the spec with: two scenarios of one model section with
// equal options have equal shard graphs (a search builds each distinct one once).
BuildOptions shard_options(const Scenario& scenario);

// Both graphs from one resolution of the spec: the whole model (counts, FLOPs) and the graph one
// rank runs (`shard`: one tensor-, context- and expert-parallel shard). When the scenario splits
// no layer (tensor, context and expert all 1) the shard is the whole graph, built once.
struct ScenarioGraphs {
  ModelSpec spec;
  ModelGraph whole;
  ModelGraph shard;
};
ScenarioGraphs graphs_from_scenario(const Scenario& scenario);

}  // namespace dtsim::models
