// The driver: the one path from a scenario to a prediction that every front end calls (the dtsim
// command today; sweeps, plan, real mode and the GUI as they come). docs/design.md section 1:
//   scenario -> (models) layer graph -> (strategy) Job -> (engine) Trace -> (report) Results
//
// Contract:
// - load() reads a scenario file with every check the loader and the models know; InputError
//   (exit 2) lists every problem.
// - plan_scenario() resolves everything once: the model spec and its graphs, the Cluster, the
//   Job. Nothing downstream resolves them again.
// - predict() runs the plan on the engine the scenario names (core/exec/engine_registry.h) and
//   computes the results. Before it runs, it estimates the run's memory (estimate_run) and
//   refuses, with an InputError naming the key that drives it, a run whose estimate exceeds
//   PredictOptions::max_memory.
// - A Progress, when given, is told each phase (driver/progress.h).
#pragma once

#include <string>
#include <vector>

#include "core/exec/executor.h"
#include "core/hardware/cluster.h"
#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"
#include "driver/progress.h"

namespace dtsim::driver {

inline constexpr double kDefaultMaxMemoryBytes = 8.0 * 1024 * 1024 * 1024;  // --max-memory

// load_scenario with the models' cross-checks; `overrides` are --set texts.
Scenario load(const std::string& path, const std::vector<std::string>& overrides = {});
// load() on YAML text that is not (or not yet) a file, such as the GUI editor's buffer: the same
// checks and messages, located at `name` (the file the text will be saved as, so that a relative
// cluster.profile resolves from its directory).
Scenario load_text(const std::string& yaml_text, const std::string& name,
                   const std::vector<std::string>& overrides = {});
// load() for a search that replaces the parallel shape, the micro-batch and the recompute
// (LoadScope::kSearch): a scenario whose own parallelism section is invalid, or absent, loads.
Scenario load_for_search(const std::string& path, const std::vector<std::string>& overrides = {});
// The cluster and simulate sections alone, for front ends that need no training run (dtsim
// collective); a file with only `cluster:` is enough.
Scenario load_cluster(const std::string& path, const std::vector<std::string>& overrides = {});

// Everything short of executing.
struct Plan {
  Scenario scenario;
  ModelGraph model;  // the whole model (parameter and FLOP counts)
  Cluster cluster;
  Job job;
};
// `max_memory_bytes` bounds the Job's ops as it is built (JobOptions::max_ops, at
// kBytesPerOpIteration each), so a plan too large to hold is refused before it takes the memory.
// `segments`: the Job's pipeline units as segments (JobOptions::segments), for estimate_step().
Plan plan_scenario(Scenario scenario, double max_memory_bytes = kDefaultMaxMemoryBytes,
                   bool segments = false);
// The Cluster and Job plan_scenario() builds, on the scenario's shard graph
// (models::shard_from_scenario) that the caller holds.
struct Step {
  Cluster cluster;
  Job job;
};
Step build_step(const Scenario& scenario, const ModelGraph& shard, double max_memory_bytes,
                bool segments);

// The run options the scenario's simulate section asks for.
RunOptions run_options(const Scenario& scenario);

struct Prediction {
  Scenario scenario;
  ModelGraph model;
  Cluster cluster;
  Job job;
  Trace trace;
  Results results;
};
// What a run will hold in memory, from the Job's op count before anything is lowered. The bytes
// per op are measured (bench/results/run-memory.md): the activity graph, the Trace and the
// results for one op of one iteration, and the Chrome trace's JSON objects when one is written.
struct RunEstimate {
  double ops_per_iteration = 0;                 // over the simulated ranks
  double collective_members_per_iteration = 0;  // sum of group sizes over the collectives
  int iterations = 1;
  double bytes = 0;
};
inline constexpr double kBaseRunBytes = 64.0 * 1024 * 1024;  // the process, catalogs and model
inline constexpr double kBytesPerOpIteration = 768;
inline constexpr double kTraceBytesPerOpIteration = 3072;
// `engine` adds its own cost per collective member (Executor::bytes_per_collective_member).
RunEstimate estimate_run(const Plan& plan, const Executor& engine, bool with_chrome_trace);

struct PredictOptions {
  double max_memory_bytes = kDefaultMaxMemoryBytes;  // --max-memory
  bool with_chrome_trace = false;                    // counted in the memory estimate
  Progress* progress = nullptr;
};
Prediction predict(Scenario scenario, const PredictOptions& options = {});
Prediction predict(Plan plan, const PredictOptions& options = {});

}  // namespace dtsim::driver
