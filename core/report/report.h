// Reports: the summary table, the JSON result object (docs/design.md section 5) and Chrome
// trace-event files that Perfetto and chrome://tracing open.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/config/config.h"
#include "core/hardware/cluster.h"
#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/report/metrics.h"

namespace dtsim {

// The result object with every key of docs/design.md section 5, nested by its dotted path.
nlohmann::json results_to_json(const Results& r);

// A prediction's interval (Results::step_time_interval) as the JSON's step_time_interval_s:
// {low, high, coverage, runs, basis}, without low and high where no comparable runs exist; and in
// words for the summary, sweep and plan: "80% interval 1.50 s to 1.71 s, from 12 comparable
// published runs", or the basis that says why there is none.
nlohmann::json interval_json(const StepTimeInterval& interval);
std::string describe_interval(const StepTimeInterval& interval);

// Float noise: 0 when |value| <= 1e-9 x scale (the step time for times), else value. The one
// rule the JSON and the summary apply (report.cc, kNoiseTolerance).
double without_noise(double value, double scale);

// A count with a scale that fits it: "25.6 M", "1.32 B", "512".
std::string format_count(double n);
// "24 transformer blocks (+ embedding, final_norm, lm_head)".
std::string describe_layers(const LayerCounts& counts);

// A readable summary with units on every line. Fractions (MFU, HFU) are shown as percentages
// with a "%" sign; the JSON holds them as fractions.
std::string render_summary(const Results& r);

// Chrome trace-event JSON: one process per node, one thread per rank and stream; complete
// events ("ph": "X") with ts and dur in microseconds; args carry the op's label, FLOPs, bytes.
// args.layer is the block index (block 0 is layer 0: the embedding and head are not counted,
// count_layers); args.layer_name names the model layer ("embedding", "block.0", "lm_head").
nlohmann::json chrome_trace(const Trace& trace, const Job& job, const Cluster& cluster,
                            const ModelGraph& model);

// A whole run with failures (Results::reliability): one more process in the trace, "whole run",
// on the run's own clock (wall time since it began): one complete event per interruption, from
// the failure to when training runs again (detection, restart, any wait for a spare), named by
// its cause, with the rework it cost in args. Interruptions during a restart extend it and have
// no event of their own; the log keeps the first reliability::kMaxLoggedInterruptions.
void add_whole_run(nlohmann::json& trace, const reliability::RunReport& run);

}  // namespace dtsim
