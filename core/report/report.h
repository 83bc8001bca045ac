// Reports: the summary table, the JSON result object (design.md section 5) and Chrome
// trace-event files that Perfetto and chrome://tracing open.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/hardware/cluster.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"

namespace dtsim {

// The result object with every key of design.md section 5, nested by its dotted path.
nlohmann::json results_to_json(const Results& r);

// A readable summary with units on every line.
std::string render_summary(const Results& r);

// Chrome trace-event JSON: one process per node, one thread per rank and stream; complete
// events ("ph": "X") with ts and dur in microseconds; args carry the op's label, FLOPs, bytes.
nlohmann::json chrome_trace(const Trace& trace, const Job& job, const Cluster& cluster);

}  // namespace dtsim
