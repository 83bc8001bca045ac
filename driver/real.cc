#include "driver/real.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/exec/analytic_executor.h"
#include "core/report/memory_parts.h"
#include "driver/measurement_conditions.h"
#include "driver/rank_program.h"

namespace dtsim::driver {
namespace {

// How to launch a scenario of `world` ranks.
std::string launch_hint(int world) {
  const std::string n = std::to_string(world);
  return "launch one process per rank: mpirun -np " + n + " dtsim real ..., srun -n " + n +
         " dtsim real ..., or torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, "
         "MASTER_PORT) on each of the " +
         n + " processes";
}

// The CPU-core device (the catalog's, or an inline GPU of that name) is what the CPU back end
// runs as.
bool is_cpu_device(const GpuSpec& gpu) {
  std::string name = gpu.name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return gpu.vendor == "CPU" || name == "cpu-core";
}

real::Backend default_backend(const Scenario& sc) {
  return is_cpu_device(sc.cluster.gpu) ? real::Backend::kCpu : real::Backend::kCuda;
}

}  // namespace

int start_receives_at_their_sends(const Job& job, Trace& trace) {
  using Key = std::tuple<Rank, Rank, int, int>;                  // sender, receiver, tag, iteration
  std::map<Key, std::vector<std::pair<size_t, Seconds>>> sends;  // (op index, posted)
  std::vector<std::pair<Key, Span*>> receives;
  for (Span& span : trace.spans) {
    if (span.kind != SpanKind::kSend && span.kind != SpanKind::kRecv) continue;
    const Program* p = job.program_for(span.rank);
    if (!p) continue;
    const Op& op = p->streams[static_cast<size_t>(span.stream)].ops[span.op_index];
    if (const auto* x = std::get_if<SendOp>(&op.body))
      sends[{span.rank, x->peer, x->tag, span.iteration}].emplace_back(span.op_index, span.start);
    else if (const auto* x = std::get_if<RecvOp>(&op.body))
      receives.emplace_back(Key{x->peer, span.rank, x->tag, span.iteration}, &span);
  }
  // Messages of one (sender, receiver, tag, step) match in the order they were posted, which is
  // program order on each side (MPI's and NCCL's point-to-point calls do not overtake).
  std::stable_sort(receives.begin(), receives.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->op_index) < std::tie(b.first, b.second->op_index);
  });
  for (auto& [key, posted] : sends) std::sort(posted.begin(), posted.end());
  std::map<Key, size_t> taken;
  int moved = 0;
  for (auto& [key, span] : receives) {
    const auto it = sends.find(key);
    size_t& n = taken[key];
    if (it == sends.end() || n >= it->second.size()) continue;
    const Seconds posted = it->second[n++].second;
    if (posted > span->start && posted < span->end) {
      span->start = posted;
      ++moved;
    }
  }
  return moved;
}

Measurement measure(const std::string& scenario_path, const std::vector<std::string>& overrides,
                    const MeasureOptions& options) {
  const real::LaunchInfo launch = real::detect_launch();
  Progress* progress = options.progress;
  if (progress) progress->phase("planning the scenario");
  Plan plan = plan_scenario(load(scenario_path, overrides));
  // Parameter servers and asynchronous SGD are predictions over the simulated step
  // (driver/relaxed_sync.h); real mode runs synchronous steps only.
  if (plan.scenario.training.sync != SyncMode::kSynchronous)
    throw InputError(Diagnostic{plan.scenario.training.sync_where.known()
                                    ? plan.scenario.training.sync_where
                                    : SourceLocation{scenario_path, 0, 0},
                                "training.sync",
                                "not supported yet: dtsim real measures synchronous training; "
                                "training.sync " +
                                    std::string(to_string(plan.scenario.training.sync)) +
                                    " is a prediction only (use sync: synchronous)"});
  const real::Backend backend = options.backend.value_or(default_backend(plan.scenario));
  const int world = plan.job.world_size;
  if (launch.world != world) {
    const std::string scenario_ranks =
        "the scenario has " + std::to_string(world) + " ranks (cluster.nodes x " +
        "cluster.gpus_per_node = " + std::to_string(plan.scenario.cluster.nodes) + " x " +
        std::to_string(plan.scenario.cluster.gpus_per_node) + ")";
    if (launch.launcher == "none")
      throw InputError(Diagnostic{{scenario_path, 0, 0},
                                  "cluster",
                                  scenario_ranks +
                                      ", but dtsim real was started as one process "
                                      "without a launcher; " +
                                      launch_hint(world)});
    throw InputError(Diagnostic{{scenario_path, 0, 0},
                                "cluster",
                                scenario_ranks + ", but " + launch.launcher + " started " +
                                    std::to_string(launch.world) + " processes; " +
                                    launch_hint(world)});
  }
  if (options.real.fault.kind != real::FaultInjection::Kind::kNone &&
      options.real.fault.rank >= world)
    throw InputError(Diagnostic{SourceLocation{}, "--inject-fault",
                                "rank " + std::to_string(options.real.fault.rank) +
                                    " is not in this run, whose ranks are 0 to " +
                                    std::to_string(world - 1) +
                                    "; name one of them, or the fault would be injected nowhere"});
  // Real mode measures the hardware as it is: an injected slowdown or a modelled failure would be
  // a prediction dressed as a measurement.
  const Scenario& sc = plan.scenario;
  if (!sc.stragglers.entries.empty())
    throw InputError(Diagnostic{sc.stragglers.entries.front().where, "stragglers",
                                "dtsim real measures the hardware as it runs and cannot slow it "
                                "down; remove stragglers (dtsim simulate models them), or use "
                                "--inject-fault for a failing rank"});
  if (sc.reliability.whole_run())
    throw InputError(Diagnostic{
        {scenario_path, 0, 0},
        "failures",
        "dtsim real measures training steps, not a whole run with failures and checkpoints; "
        "remove failures, checkpoint and training.steps / tokens (dtsim simulate models them)"});
  if (backend == real::Backend::kCpu && !is_cpu_device(plan.scenario.cluster.gpu))
    throw InputError(Diagnostic{
        plan.scenario.cluster.gpu_where, "cluster.gpu",
        "the CPU back end runs the CPU-core device, but the scenario's GPU is " +
            plan.scenario.cluster.gpu.name +
            "; set cluster.gpu: CPU-core (with cluster.profile from dtsim calibrate --cpu) to "
            "measure on CPUs, or run with --gpu on GPUs"});
  // A configuration that does not fit cannot run (exit 2, as simulate and validate say): refused
  // before any buffer is allocated, which on the host would otherwise end in an allocation
  // failure.
  if (const auto peak = peak_in_program_order(plan.job);
      peak && peak->bytes > plan.scenario.cluster.gpu.memory.value()) {
    throw InputError(Diagnostic{
        {scenario_path, 0, 0},
        "memory",
        "does not fit: the peak memory per device, " + format_bytes(Bytes(peak->bytes)) +
            ", exceeds the " + plan.scenario.cluster.gpu.name + "'s " +
            format_bytes(plan.scenario.cluster.gpu.memory) +
            " (largest at the peak: " + std::string(to_string(largest_category(peak->at_peak))) +
            "); dtsim validate shows where the memory goes and lists the fixes"});
  }
  if (progress) progress->phase("building every rank's Program");
  Job job = unfolded_job(plan);
  if (progress)
    progress->phase("connecting " + std::to_string(world) + " rank(s) (" +
                    real::to_string(backend) + " back end)");
  auto channel = real::make_channel(launch, backend, options.real.timeout);
  auto executor = real::make_executor(backend, *channel, launch, options.real);
  RunOptions run;
  run.iterations = options.iterations;
  if (progress)
    progress->phase("running " + std::to_string(options.real.warmup_iterations) + " warm-up and " +
                    std::to_string(options.iterations) + " timed step(s)");
  const HostSample before = sample_host();
  Trace trace = executor->run(job, plan.cluster, run);
  const HostSample after = sample_host();
  const bool root = channel->rank() == 0;
  Results results;
  if (root) {
    if (start_receives_at_their_sends(job, trace) > 0)
      trace.notes.push_back(
          "measured receives start when their send was posted (the wait for the sender before "
          "it is idle time, as in a simulated timeline), so a receive's time is its transfer");
    results = compute_results(plan.scenario, plan.model, job, trace);
    results.source = "measured";
    results.measurement_conditions = assess(before, after, trace);
  }
  return Measurement{root,
                     launch,
                     backend,
                     std::move(plan.scenario),
                     std::move(plan.model),
                     std::move(plan.cluster),
                     std::move(job),
                     std::move(trace),
                     std::move(results)};
}

HardwareProfile calibrate(const CalibrateRequest& request, bool* root) {
  const real::LaunchInfo launch = real::detect_launch();
  auto channel = real::make_channel(launch, request.backend, request.timeout);
  HardwareProfile p = real::calibrate(request.backend, *channel, launch, request.options);
  if (root) *root = channel->rank() == 0;
  return p;
}

}  // namespace dtsim::driver
