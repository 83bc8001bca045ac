// The prediction pipeline shared by the dtsim command and the tests:
// scenario -> model graph -> Job -> executor -> Trace -> Results (design.md section 1).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "core/model_graph.h"
#include "core/program.h"
#include "core/scenario.h"
#include "core/trace.h"

namespace dtsim::cli {

struct Prediction {
  Scenario scenario;
  ModelGraph model;
  Job job;
  Trace trace;
  Results results;
};

// Loads, checks and builds everything short of executing. Throws InputError.
struct Plan {
  Scenario scenario;
  ModelGraph model;
  Job job;
};
Plan plan_scenario(Scenario scenario);

// The executor the scenario's simulate section asks for.
std::unique_ptr<Executor> make_executor(const Scenario& scenario);

Prediction predict(Scenario scenario);

}  // namespace dtsim::cli
