// The driver: the one path from a scenario to a prediction that every front end calls (the dtsim
// command today; sweeps, plan, real mode and the GUI as they come). design.md section 1:
//   scenario -> (models) layer graph -> (strategy) Job -> (engine) Trace -> (report) Results
//
// Contract:
// - load() reads a scenario file with every check the loader and the models know; InputError
//   (exit 2) lists every problem.
// - plan_scenario() resolves everything once: the model spec and its graphs, the Cluster, the
//   Job. Nothing downstream resolves them again.
// - predict() runs the plan on the engine the scenario names (core/exec/engine_registry.h) and
//   computes the results. It refuses, with an InputError naming simulate.iterations, runs whose
//   op count is beyond what an engine can hold.
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

namespace dtsim::driver {

// load_scenario with the models' cross-checks; `overrides` are --set texts.
Scenario load(const std::string& path, const std::vector<std::string>& overrides = {});
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
Plan plan_scenario(Scenario scenario);

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
Prediction predict(Scenario scenario);
Prediction predict(Plan plan);

}  // namespace dtsim::driver
