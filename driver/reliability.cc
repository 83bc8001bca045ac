#include "driver/reliability.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/scenario/scenario.h"
#include "core/scenario/schema.h"
#include "core/strategy/model_state.h"

namespace dtsim::driver {
namespace {

using reliability::ComponentClass;

std::array<int64_t, reliability::kComponentClasses> component_counts(const Cluster& c) {
  std::array<int64_t, reliability::kComponentClasses> n{};
  auto set = [&](ComponentClass k, int64_t v) { n[static_cast<size_t>(k)] = v; };
  const int64_t nics = c.nodes > 1 ? static_cast<int64_t>(c.nodes) * c.nics() : 0;
  set(ComponentClass::kGpu, c.world_size());
  set(ComponentClass::kHbm, c.world_size());
  set(ComponentClass::kNode, c.nodes);
  set(ComponentClass::kNic, nics);
  set(ComponentClass::kLink, nics);
  set(ComponentClass::kSwitch,
      c.nodes > 1 && (c.has_leaves() || c.has_rails()) ? c.network_groups() : 0);
  set(ComponentClass::kSoftware, 1);
  return n;
}

}  // namespace

int64_t run_steps(const Scenario& scenario, int64_t global_batch_size, int64_t seq_length) {
  const ReliabilityConfig& rel = scenario.reliability;
  if (!rel.tokens) return rel.steps.value;
  const double per_step = static_cast<double>(global_batch_size) *
                          static_cast<double>(std::max<int64_t>(1, seq_length));
  const double steps = std::ceil(rel.tokens->value / per_step);
  // The bound training.steps has in the schema.
  const double max_steps = find_schema_node(scenario_schema(), "training.steps")->max;
  if (steps > max_steps)
    throw InputError(Diagnostic{
        rel.tokens->where, "training.tokens",
        format_number("%g tokens", rel.tokens->value) + " at " + format_number("%.0f", per_step) +
            " a step (global_batch_size x seq_length) make " + format_number("%g", steps) +
            " steps, more than the " + format_number("%g", max_steps) +
            " a run may have (training.steps' bound); check the "
            "tokens' suffix (300B, 15T)"});
  return std::max<int64_t>(1, static_cast<int64_t>(steps));
}

reliability::RunReport run_whole(const Scenario& scenario, const Cluster& cluster,
                                 const Results& results, const Trace& trace) {
  const ReliabilityConfig& rel = scenario.reliability;
  reliability::RunReport rep;
  rep.step_time = Seconds(results.step_time_s);
  if (!(rep.step_time.value() > 0))
    throw RuntimeError("the step simulation gave no step time, so the whole run cannot be timed");
  rep.steps = run_steps(scenario, results.global_batch_size, results.seq_length);

  // The failure processes, one per *_mtbf given, over the cluster's parts.
  rep.components = component_counts(cluster);
  std::vector<reliability::FailureProcess> processes;
  for (const auto& [component, mtbf] : rel.mtbf) {
    const int64_t parts = rep.components[static_cast<size_t>(component)];
    if (parts > 0) processes.push_back({component, parts, mtbf.value, rel.distribution, rel.shape});
  }
  rep.job_mtbf = reliability::job_mtbf(processes);

  // The checkpoint: the whole model's weights and optimizer states, one copy.
  const ModelStateBytes whole = model_state_bytes(
      results.parameters, scenario.training.precision, scenario.training.grad_dtype,
      scenario.training.optimizer, /*zero_stage=*/0, /*data_parallel=*/1);
  rep.checkpoint_size = whole.weights + whole.optimizer;
  rep.checkpoint_write = rep.checkpoint_size / rel.write_bandwidth;
  rep.mode = rel.mode;
  const Bytes per_gpu(results.per_category_bytes[static_cast<size_t>(MemoryCategory::kWeights)] +
                      results.per_category_bytes[static_cast<size_t>(MemoryCategory::kOptimizer)]);
  const Seconds snapshot = per_gpu / rel.snapshot_bandwidth;
  rep.checkpoint_stall =
      rel.mode == reliability::CheckpointMode::kSync ? rep.checkpoint_write : snapshot;

  const bool random_failures = std::isfinite(rep.job_mtbf.value());
  if (random_failures) {
    rep.young_daly_interval = reliability::young_interval(rep.checkpoint_stall, rep.job_mtbf);
    rep.daly_interval = reliability::daly_interval(rep.checkpoint_stall, rep.job_mtbf);
  }
  // The interval: the scenario's, else Young's optimum (no checkpoints without random failures:
  // the optimum is then infinite). An async write must end before the next checkpoint starts.
  Seconds interval(0);
  if (rel.interval) {
    interval = rel.interval->value;
    if (interval < rep.checkpoint_write)
      throw InputError(Diagnostic{
          rel.interval->where, "checkpoint.interval",
          "the interval " + format_duration(interval) + " is shorter than one checkpoint write, " +
              format_duration(rep.checkpoint_write) + " (" + format_bytes(rep.checkpoint_size) +
              " of weights and optimizer states at " + format_bandwidth(rel.write_bandwidth) +
              "): raise the interval or checkpoint.write_bandwidth"});
  } else if (random_failures) {
    rep.interval_is_young_daly = true;
    interval = std::max(rep.young_daly_interval, rep.checkpoint_write);
  }
  if (interval.value() > 0) {
    rep.interval_steps = std::max<int64_t>(1, std::llround(interval / rep.step_time));
    rep.checkpoint_interval = rep.step_time * static_cast<double>(rep.interval_steps);
  }
  const int64_t checkpoints = rep.interval_steps > 0 ? (rep.steps - 1) / rep.interval_steps : 0;
  rep.failure_free_time = rep.step_time * static_cast<double>(rep.steps) +
                          rep.checkpoint_stall * static_cast<double>(checkpoints);

  std::vector<reliability::ScriptedFailure> scripted;
  for (size_t i = 0; i < rel.events.size(); ++i) {
    const auto& e = rel.events[i];
    if (e.value.at > rep.failure_free_time)
      throw InputError(Diagnostic{
          e.where, "failures.events[" + std::to_string(i) + "].at",
          "the event at " + format_duration(e.value.at) + " comes after the end of the run, " +
              format_duration(rep.failure_free_time) + " without failures (" +
              std::to_string(rep.steps) + " steps of " + format_duration(rep.step_time) +
              " plus the checkpoints)"});
    scripted.push_back(e.value);
  }

  reliability::RunPolicy policy;
  policy.steps = rep.steps;
  policy.step_time = rep.step_time;
  // Per-step times from the simulated iterations, when there are several.
  if (trace.iteration_end.size() > 1) {
    std::vector<Seconds> times;
    Seconds previous(0);
    for (const Seconds end : trace.iteration_end) {
      times.push_back(end - previous);
      previous = end;
    }
    policy.step_time_sampler = [times](std::mt19937_64& rng) {
      return times[std::uniform_int_distribution<size_t>(0, times.size() - 1)(rng)];
    };
  }
  policy.interval_steps = rep.interval_steps;
  policy.mode = rel.mode;
  policy.write_time = rep.checkpoint_write;
  policy.snapshot_time = snapshot;
  policy.detection_timeout = rel.detection_timeout;
  policy.restart_overhead = rel.restart_overhead;
  policy.spare_nodes = rel.spare_nodes;
  policy.repair_time = rel.repair_time;
  policy.elastic = rel.elastic;
  policy.data_parallel = results.data_parallel;
  const int model_parallel = std::max(1, results.tp * results.pp * results.cp);
  policy.replicas_per_node =
      model_parallel >= cluster.gpus_per_node ? 1 : cluster.gpus_per_node / model_parallel;
  if (policy.replicas_per_node >= policy.data_parallel) policy.elastic = false;

  try {
    rep.outcome = reliability::simulate_run(policy, processes, scripted, scenario.simulate.seed);
  } catch (const reliability::RunNeverEnds& e) {
    // The input's doing: name the component that fails most often (the largest rate).
    const std::pair<ComponentClass, Located<Seconds>>* worst = nullptr;
    double worst_rate = 0;
    for (const auto& m : rel.mtbf) {
      const double rate = static_cast<double>(rep.components[static_cast<size_t>(m.first)]) /
                          m.second.value.value();
      if (rate > worst_rate) worst_rate = rate, worst = &m;
    }
    const std::string key =
        worst ? "failures." + std::string(reliability::to_string(worst->first)) + "_mtbf"
              : "failures";
    throw InputError(Diagnostic{
        worst ? worst->second.where : SourceLocation{scenario.file, 0, 0}, key,
        std::string(e.what()) + ": the job fails every " + format_duration(rep.job_mtbf) +
            ", against a restart of " +
            format_duration(rel.detection_timeout + rel.restart_overhead) +
            " (detection and relaunch); raise the MTBFs, or lower failures.detection_timeout "
            "and checkpoint.restart_overhead"});
  }
  rep.expected_interruptions = (random_failures ? rep.outcome.time_to_train / rep.job_mtbf : 0.0) +
                               static_cast<double>(scripted.size());
  return rep;
}

}  // namespace dtsim::driver
