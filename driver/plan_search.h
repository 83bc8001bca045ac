// `dtsim plan`: search the parallel configurations of a scenario's model, cluster and global
// batch for the fastest one that fits in memory (docs/design.md section 6). The GUI calls the same
// function.
//
// Contract:
// - Enumeration: tensor (divisors of the GPUs per node), context and pipeline (divisors of what is
//   left of the GPU count), data (the rest), expert (divisors of the experts, MoE models only),
//   micro-batch size (powers of two up to 16), the schedule (1f1b; with a pipeline also gpipe and
//   interleaved with 2, 3, 4, 6 or 8 chunks per GPU), the ZeRO stage (0-3) and recompute (none,
//   selective, full). Every other key keeps the scenario's value. Constraints pin or bound
//   dimensions.
// - Validity is the loader's: each candidate is loaded with its --set overrides through
//   driver::load(), and one the loader refuses is invalid; the report counts them by the key the
//   loader named. No divisibility rule is repeated here.
// - Memory and time come from the analytic engine (core/exec/analytic_executor.h): the peak
//   memory per GPU and the step time of the Job that build_job() makes, as `dtsim simulate
//   --engine analytic` gives them. The search builds each Job with segments and times it without
//   a Trace (StepEvaluator below), which changes the number of graph nodes, not the answer
//   (tests/driver/plan_search_test.cc checks both against the engine's run()). ZeRO-3
//   configurations, whose Jobs do not form segments, come last, within a budget of ops.
// - Configurations whose peak exceeds the GPU's memory are dropped, counted by the memory
//   category largest at the peak, and the closest misses are kept for the report.
// - The fastest `top` by analytic step time are simulated again with SimGrid, each in its own
//   child process (`DTSIM simulate SCENARIO --set k=v ... --engine simgrid --json`; SimGrid allows
//   one engine per process), and ranked by the simulated step time.
// - Bad input (a malformed or unknown constraint, top < 1, nothing that fits) is an InputError
//   (exit 2) that says what to change; a child that fails is reported in its row, not thrown.
// - Not thread-safe; progress goes through PlanProgress (stderr in the CLI).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware/cluster.h"
#include "core/ir/model_graph.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"
#include "driver/plan_objective.h"

namespace dtsim::driver {

// --constraint key=value, key<=value, key>=value on an integer or named dimension.
struct PlanConstraint {
  enum class Op { kEq, kLe, kGe };
  std::string key;  // a scenario key path, e.g. parallelism.tensor
  Op op = Op::kEq;
  std::string value;  // as written: "8", "interleaved", "full"
  std::string text;   // the whole constraint, for messages
};
// The keys a constraint may name.
const std::vector<std::string>& plan_constraint_keys();
// Parses one --constraint; InputError naming it when it is malformed or its key unknown.
PlanConstraint parse_plan_constraint(const std::string& text);

// One parallel configuration.
struct PlanConfig {
  int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1;
  int zero_stage = 0;
  int64_t micro_batch_size = 1;
  Schedule schedule = Schedule::k1F1B;
  int virtual_stages = 1;
  Recompute recompute = Recompute::kNone;

  // The --set texts that select it on top of the scenario.
  std::vector<std::string> overrides() const;
  // "TP 8 x PP 8 (interleaved, v 2) x DP 16, ZeRO-1, mb 1, recompute full".
  std::string describe() const;
};

// The analytic engine's answer for one configuration.
struct AnalyticEstimate {
  double step_time_s = 0;
  double peak_bytes = 0;  // per GPU, the worst simulated rank
  std::array<double, kMemoryCategories> at_peak{};
  double ops = 0;  // ops of the Job's Programs as built (a segment counts as its ops once)
  double energy_per_step_j = -1;  // the facility's energy of one step; -1: not asked for
};

// The analytic engine's step time and peak memory for the configurations of one search: the
// Job built with segments (core/strategy/strategy.h, JobOptions::segments) and timed without a
// Trace (core/exec/analytic_executor.h, estimate_step), each distinct shard graph built once.
// The same step builder, lowering and longest path as `dtsim simulate --engine analytic`; the
// segments only change how many nodes the graph has (tests/driver/plan_search_test.cc).
class StepEvaluator {
 public:
  StepEvaluator();
  ~StepEvaluator();
  StepEvaluator(const StepEvaluator&) = delete;
  StepEvaluator& operator=(const StepEvaluator&) = delete;

  // Scenarios of one model section (a search's candidates). One whose peak memory per GPU is over
  // `capacity_bytes` is not timed (step_time_s NaN): a search drops it, and its peak comes from
  // the Programs alone (core/exec/analytic_executor.h, peak_in_program_order).
  // With `energy`, also the step's energy (core/report/energy.h) when the GPU has power figures.
  AnalyticEstimate evaluate(const Scenario& scenario,
                            double capacity_bytes = std::numeric_limits<double>::infinity(),
                            bool energy = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The analytic engine itself (load, build_job, run, results): the reference.
AnalyticEstimate analytic_estimate(const Scenario& scenario);

// Where a search reports to (the CLI draws a bar on stderr).
class PlanProgress {
 public:
  virtual ~PlanProgress() = default;
  virtual void phase(const std::string& what, std::size_t total) = 0;  // total: 0 when unknown
  virtual void advance(std::size_t done) = 0;
};

// What ranks the configurations: the predicted step time, or the upper end of its 80 %
// interval (driver/prediction_interval.h), which charges a parallelism family dtsim has been
// too fast on in published runs.
enum class RankBy { kStep, kHigh };
inline constexpr auto kRankByNames =
    make_enum_table<RankBy>({{RankBy::kStep, "step"}, {RankBy::kHigh, "high"}});

struct PlanRequest {
  std::string scenario;                // path
  std::vector<std::string> overrides;  // --set, applied before the search's own
  std::vector<PlanConstraint> constraints;
  int top = 5;  // simulated with SimGrid
  RankBy rank_by = RankBy::kStep;
  // What the ranking optimises (time to train, cost or energy) and the deadline and budget every
  // returned configuration meets (driver/plan_objective.h).
  RunGoal goal;
  // false: `ranked` is the best `top` by the analytic engine, none simulated (rows with no error).
  bool simulate = true;
  std::string dtsim;           // the dtsim binary the children run
  int jobs = 2;                // children at once
  double child_timeout_s = 0;  // 0: none
  // Ops (summed over the Jobs' Programs) for the ZeRO-3 configurations, whose Jobs are built and
  // lowered op by op; those left when it runs out are counted, not ranked. A count of work, not
  // a wall time, so that a search ranks the same configurations on every run and machine: 8e6
  // ops are about 5 s on the 2-core development VM (2e7 took 12.4 s of CPU, 287 ZeRO-3
  // configurations of GPT-3 1.3B on 16 H100; bench/results/plan-speed.md).
  double engine_budget_ops = 8e6;
  // A search whose estimated evaluation time (plan_search_estimate_s) exceeds this is refused
  // before it starts, with what narrows it (--max-search-time; 0: no limit).
  double max_search_s = 2 * 3600;
  PlanProgress* progress = nullptr;
};

// A lower bound on the time a search's evaluations take on the development VM, in seconds:
// every configuration builds the groups of the whole world and resolves collectives over them,
// about kSearchSecondsPerGpu per GPU per configuration (bench/results/plan-speed.md, "Searches
// over large clusters": 2.3 us at 16,384 GPUs, 5.0 us at 131,072), whatever the checks refuse.
inline constexpr double kSearchSecondsPerGpu = 2e-6;
inline double plan_search_estimate_s(double configurations, double gpus) {
  return configurations * gpus * kSearchSecondsPerGpu;
}

// One ranked configuration.
struct PlanRow {
  PlanConfig config;
  AnalyticEstimate analytic;
  // SimGrid's result (dtsim simulate --json) when the child succeeded.
  bool simulated = false;
  double step_time_s = 0;  // SimGrid's when simulated, else the analytic one
  // The interval of the step time the row shows (SimGrid's when simulated, else the analytic).
  StepTimeInterval interval;
  double mfu = 0;
  double tokens_per_s = 0;
  double compute_s = 0, exposed_communication_s = 0, pipeline_bubble_s = 0;
  double peak_bytes = 0, capacity_bytes = 0;
  std::string limiter;  // communication | bubble | memory | compute
  std::string error;    // why the child failed, or why the row is not ranked
  // SimGrid ran it, but its peak is over the GPU's memory: not ranked as simulated (the search's
  // estimate said it fits).
  bool over_memory = false;
  // The whole run (driver/plan_objective.h): SimGrid's when simulated, else the analytic step's.
  RunFigures run;
  bool run_from_simulation = false;  // run is the SimGrid child's `run` section
  bool misses_goal = false;          // simulated, it misses the deadline or the budget: not ranked
  bool pareto = false;               // no other ranked row is both as fast and as cheap
};

struct PlanReport {
  std::string scenario_name;
  std::string model;  // the model searched (its preset's name, or "custom"), after --set
  int gpus = 0;
  int64_t global_batch_size = 0;
  std::string gpu;
  double capacity_bytes = 0;
  std::size_t enumerated = 0;  // candidates generated (after constraints)
  std::size_t invalid = 0;     // refused by the loader
  std::map<std::string, std::size_t> invalid_by_key;
  std::size_t do_not_fit = 0;
  std::map<std::string, std::size_t> do_not_fit_by_category;  // largest category at the peak
  std::vector<PlanRow> closest_misses;                        // smallest peaks that do not fit
  std::size_t fits = 0;
  // Evaluated in the first pass, and the ZeRO-3 ones within PlanRequest::engine_budget_ops.
  std::size_t step_level_evaluations = 0, engine_evaluations = 0;
  std::size_t not_evaluated = 0;                   // beyond PlanRequest::engine_budget_ops
  double engine_budget_ops = 0;                    // the request's, for the report
  double engine_ops = 0;                           // spent of it
  double analytic_wall_s = 0, analytic_cpu_s = 0;  // load + analytic evaluation of every candidate
  double step_level_cpu_s = 0;                     // of which in the first pass's evaluations
  std::vector<PlanRow> ranked;                     // the simulated top, best first
  std::vector<PlanRow> analytic_top;               // the best by analytic step time, best first
  std::vector<std::string> warnings;               // about the pick (mfu_warning)
  RankBy rank_by = RankBy::kStep;                  // what ranked them (PlanRequest::rank_by)
  RunGoal goal;                                    // the request's
  int64_t steps = 1;                               // the run's (1 when the scenario gives none)
  bool run_sized = false;                          // training.steps or training.tokens given
  std::optional<Money> price;                      // cluster.price_per_gpu_hour
  std::size_t miss_goal = 0;                       // fitting, but past the deadline or budget
};

PlanReport plan_search(const PlanRequest& request);

// Marks the rows no other row (without an error) beats on both time to train and cost, on time
// alone without a price: the offers worth weighing against each other (driver/plan_objective.cc).
void mark_pareto(std::vector<PlanRow>& rows);

// A warning when `mfu` is above the best model-FLOPs utilisation published for this GPU's
// generation in 16-bit training (A100; H100 and H200), with that figure and its source; none for
// other GPUs and precisions, for which no published figure is on file.
std::optional<std::string> mfu_warning(const std::string& gpu, DType precision, double mfu);

// What limits a configuration, from its breakdown and memory headroom.
std::string plan_limiter(double compute_s, double exposed_communication_s, double pipeline_bubble_s,
                         double peak_bytes, double capacity_bytes);

}  // namespace dtsim::driver
