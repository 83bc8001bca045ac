// dtsim: the command-line interface (docs/design.md section 6).
// Exit codes (docs/user-guide.md's table is the contract): 0 success; 2 bad input (scenario,
// flags, infeasible configuration, one that does not fit); 1 runtime failure; 128 + N for a
// signal. Errors go to stderr as "error: FILE:LINE:COL: key.path: message".
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/analyze_command.h"
#include "cli/commands.h"
#include "cli/plan_command.h"
#include "cli/sweep_command.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/text.h"
#include "core/config/engine_choices.h"
#include "core/ir/program.h"
#include "core/scenario/schema.h"
#include "real/launch.h"

namespace {

using namespace dtsim::cli;

// A floating-point flag's value must be a finite number: CLI::Range lets NaN through (every
// comparison with NaN is false), which would turn a gate or a scale off without a word.
const CLI::Validator kFiniteNumber(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
        return "expected a finite number, found '" + text + "'";
      return "";
    },
    "NUMBER");

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitBadInput = 2;

// "a | b | c": a flag's words, from the enum's name table.
std::string alternatives(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : " | ") + n;
  return text;
}

// "--engine" help: every registered engine, one line each.
std::string engine_help() {
  std::string help = "engine to run (default: the scenario's simulate.engine):";
  for (const auto& e : dtsim::engine_choice_list()) help += "\n  " + e.name + ": " + e.description;
  return help;
}

// A process other than rank 0 of a launched job (real mode).
bool secondary_rank() {
  try {
    return dtsim::real::detect_launch().rank != 0;
  } catch (const std::exception&) {
    return false;
  }
}

// One command: its CLI11 subcommand, with its flags bound to options the closure holds, and
// what runs it once parsed.
struct Verb {
  CLI::App* command;
  std::function<int(std::ostream&)> run;
};

Verb add_simulate(CLI::App& app, const std::vector<std::string>& engines) {
  auto o = std::make_shared<SimulateOptions>();
  auto* simulate = app.add_subcommand(
      "simulate",
      "Predict one training step of a scenario: step time, throughput, MFU, where the time goes "
      "and memory per GPU.\n"
      "  dtsim simulate scenarios/default.yaml --json -o result.json --trace trace.json");
  simulate
      ->add_option("scenario", o->scenario, "scenario YAML file (see docs/scenario-reference.md)")
      ->required();
  simulate
      ->add_option("--set", o->overrides,
                   "override a scenario key, e.g. --set training.micro_batch_size=2 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  simulate->add_option("--engine", o->engine, engine_help())->check(CLI::IsMember(engines));
  simulate->add_flag("--json", o->json, "print the result object as JSON instead of the summary");
  simulate->add_option("-o,--output", o->output, "also write the JSON result object to this file");
  simulate->add_option("--trace", o->trace,
                       "write a Chrome trace-event file (open it in Perfetto)");
  simulate->add_option("--max-memory", o->max_memory,
                       "refuse a run whose estimated memory exceeds this size (default 8GiB); "
                       "the estimate counts the simulated ops, iterations and --trace");

  return {simulate, [o](std::ostream& out) { return run_simulate(*o, out); }};
}

Verb add_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  auto* validate = app.add_subcommand(
      "validate",
      "Check a scenario without simulating: keys, units, divisibility, rank placement and memory "
      "fit. Exit 0 when it can run, 2 with every problem listed when it cannot.");
  validate->add_option("scenario", o->scenario, "scenario YAML file")->required();
  validate->add_option("--set", o->overrides, "override a scenario key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  validate->add_option("--max-memory", o->max_memory,
                       "refuse a plan whose simulation would need more memory than this (default "
                       "8GiB), as simulate does");

  return {validate, [o](std::ostream& out) { return run_validate(*o, out); }};
}

Verb add_collective(CLI::App& app, const std::vector<std::string>& engines) {
  auto o = std::make_shared<CollectiveOptions>();
  auto* collective = app.add_subcommand(
      "collective",
      "Simulate one collective on the scenario's cluster, like nccl-tests: time, algbw and busbw "
      "(nccl-tests definitions). One size with --bytes, or a sweep with --min-bytes, --max-bytes "
      "and --factor.\n"
      "  dtsim collective scenarios/default.yaml --op all-reduce --min-bytes 1MiB --max-bytes "
      "1GiB");
  collective->add_option("scenario", o->scenario, "scenario YAML file (its cluster is used)")
      ->required();
  collective->add_option("--set", o->overrides, "override a scenario key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  collective->add_option("--op", o->request.op, alternatives(dtsim::kCollectiveKindNames.names()))
      ->check(CLI::IsMember(dtsim::kCollectiveKindNames.names()));
  collective->add_option("--bytes", o->request.bytes,
                         "operation size with a unit, e.g. 1GiB (nccl-tests size)");
  collective->add_option("--min-bytes", o->request.min_bytes, "sweep start with a unit, e.g. 8B");
  collective->add_option("--max-bytes", o->request.max_bytes, "sweep end with a unit, e.g. 4GiB");
  collective->add_option("-b", o->request.min_bytes_nccl,
                         "sweep start as nccl-tests reads it: bytes, or with a K, M or G suffix "
                         "(x 1024^1..3), e.g. -b 8 or -b 1M");
  collective->add_option("-e", o->request.max_bytes_nccl,
                         "sweep end as nccl-tests reads it, e.g. -e 128M");
  collective->add_option("-f,--factor", o->request.factor,
                         "sweep multiplier, a finite number above 1 (default 2); sizes round to "
                         "whole elements and the sweep ends at the maximum");
  collective->add_option(
      "--algorithm", o->request.algorithm,
      "ring | tree | halving-doubling | hierarchical | nvls | nvls-tree | "
      "collnet (switches that reduce: cluster.network.in_network_reduction) | pat "
      "(all-gather, reduce-scatter; one GPU a node) | "
      "auto (the fastest "
      "way NCCL could run it, under dtsim's timing; NCCL's own pick is shown "
      "beside it)");
  collective
      ->add_option("--protocol", o->request.protocol,
                   "NCCL protocol for the ring: LL | LL128 | Simple; auto (default): the "
                   "algorithm as NCCL would run it, under its fastest protocol with NCCL's "
                   "per-call costs; none: the textbook alpha-beta ring, without them")
      ->check(CLI::IsMember(std::vector<std::string>{"auto", "LL", "LL128", "Simple", "none"}));
  collective->add_option("-d,--dtype", o->request.dtype,
                         "element type: " + alternatives(dtsim::kDTypeNames.names()) +
                             ", or nccl-tests' float | half | bfloat16 | f8e4m3; default fp32, "
                             "nccl-tests' float");
  auto* ranks_flag = collective
                         ->add_option("--ranks", o->request.ranks,
                                      "ranks taking part (the first N GPUs; default all)")
                         ->check(CLI::Range(1, 100000000));
  collective
      ->add_option("-g", o->request.ranks,
                   "nccl-tests' GPUs per thread; dtsim simulates one process with one thread "
                   "driving them, so -g N is --ranks N (under mpirun, nccl-tests' ranks are "
                   "processes x N: give that total; 1 rank is refused)")
      ->check(CLI::Range(1, 100000000))
      ->excludes(ranks_flag);
  collective
      ->add_option("-t", o->threads,
                   "nccl-tests' threads per process: each drives -g GPUs, so the ranks are "
                   "-t x -g (default 1)")
      ->check(CLI::Range(1, 100000000));
  collective->add_option("-o", o->request.redop,
                         "nccl-tests' reduction: sum (default) | prod | max | min | avg; the "
                         "redop column (NCCL's time does not depend on it)");
  collective->add_option("-n", o->iterations,
                         "nccl-tests' timed iterations; accepted, with a note: a simulation is "
                         "deterministic, each row is one iteration's time");
  collective->add_option("-w", o->warmup,
                         "nccl-tests' warm-up iterations; accepted, with a note: a simulation "
                         "has no warm-up");
  collective->add_option("-c", o->check,
                         "nccl-tests' result check (0 or 1); accepted, with a note: dtsim moves "
                         "no data, so #wrong stays 0");
  collective->add_option("--engine", o->engine, engine_help())->check(CLI::IsMember(engines));
  collective->add_flag("--json", o->json, "print JSON");

  return {collective, [o](std::ostream& out) { return run_collective(*o, out); }};
}

Verb add_catalog(CLI::App& app) {
  auto o = std::make_shared<CatalogOptions>();
  auto* catalog = app.add_subcommand(
      "catalog",
      "List built-in presets: gpus, fabrics, networks, models, hardware (all three hardware "
      "tables), engines (the registered engines) or keys (every scenario key).\n"
      "  dtsim catalog gpus --json");
  catalog
      ->add_option("what", o->what,
                   "gpus | fabrics | networks | models | hardware | engines | keys")
      ->check(
          CLI::IsMember({"gpus", "fabrics", "networks", "models", "hardware", "engines", "keys"}));
  auto* markdown_flag =
      catalog->add_flag("--markdown", o->markdown, "print Markdown (as in docs/)");
  catalog
      ->add_flag("--json", o->json,
                 "print JSON for scripts: every quantity's key names its unit "
                 "(memory_bytes, latency_s), hardware entries keep their source; keys prints "
                 "the schema tree")
      ->excludes(markdown_flag);

  return {catalog, [o](std::ostream& out) { return run_catalog(*o, out); }};
}

Verb add_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* compare = app.add_subcommand(
      "compare",
      "Compare two results of dtsim simulate --json (a prediction against a measurement, or two "
      "engines): step time, compute, exposed communication, bubble, straggler wait, peak memory "
      "and busy time per op kind, each with its signed error (predicted - measured) / measured.\n"
      "  dtsim compare predicted.json measured.json --max-error 10");
  compare->add_option("predicted", o->predicted, "the prediction (dtsim simulate --json -o)")
      ->required();
  compare->add_option("measured", o->measured, "the measurement, or the result compared against")
      ->required();
  compare
      ->add_option("--max-error", o->max_error_percent,
                   "exit 1 when a metric's |error| exceeds this many percent (op kinds are "
                   "shown, not gated)")
      ->check(kFiniteNumber & CLI::Range(0.0, 1e6));
  compare->add_flag("--json", o->json, "print the comparison as JSON");

  return {compare, [o](std::ostream& out) { return run_compare(*o, out); }};
}

Verb add_real(CLI::App& app) {
  auto o = std::make_shared<RealOptions>();
  auto* real = app.add_subcommand(
      "real",
      "Run the scenario's Programs on real hardware and measure them: one process per rank, "
      "launched by mpirun, srun or torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, "
      "MASTER_PORT). The result has the same JSON and trace formats as simulate, with source "
      "\"measured\" (docs/real-mode.md).\n"
      "  mpirun -np 2 dtsim real scenarios/real/cpu-data-parallel.yaml -o measured.json\n"
      "  dtsim compare predicted.json measured.json");
  real->add_option("scenario", o->scenario, "scenario YAML file")->required();
  real->add_option("--set", o->overrides, "override a scenario key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* real_cpu = real->add_flag_callback(
      "--cpu", [o] { o->backend = "cpu"; },
      "the CPU back end (MPI + Eigen; default for cluster.gpu: CPU-core)");
  real->add_flag_callback(
          "--gpu", [o] { o->backend = "gpu"; },
          "the GPU back end (CUDA + NCCL; default for every other GPU)")
      ->excludes(real_cpu);
  real->add_option("--warmup", o->warmup, "untimed steps before the timed ones (default 1)")
      ->check(CLI::Range(0, 1000));
  real->add_option("--iterations", o->iterations, "timed steps (default 3)")
      ->check(CLI::Range(1, 100000));
  real->add_option("--timeout", o->timeout,
                   "an op running longer than this ends the job on every rank with exit 1 and "
                   "a message naming the rank that stopped (default 300s)");
  real->add_option("--compute-scale", o->compute_scale,
                   "CPU back end: run GEMMs at this fraction of their size, then wait out the "
                   "rest of their full-size time, so that large layers need a fraction of the "
                   "CPU work (default 1; stated in the result's notes)")
      ->check(kFiniteNumber & CLI::Range(1e-6, 1.0));
  real->add_option("--inject-fault", o->inject_fault,
                   "testing: exit:RANK or hang:RANK makes that rank exit or hang mid-way "
                   "through its first timed step");
  real->add_flag("--json", o->json, "print the result object as JSON instead of the summary");
  real->add_option("-o,--output", o->output, "also write the JSON result object to this file");
  real->add_option("--trace", o->trace, "write the measured Chrome trace-event file");

  return {real, [o](std::ostream& out) { return run_real(*o, out); }};
}

// `command`: the command line, recorded in the profile it writes.
Verb add_calibrate(CLI::App& app, const std::string& command) {
  auto o = std::make_shared<CalibrateOptions>();
  o->command = command;
  auto* calibrate = app.add_subcommand(
      "calibrate",
      "Measure this machine with microbenchmarks of what dtsim real runs (GEMM throughput over a "
      "grid of shapes, memory bandwidth, per-op overhead, point-to-point and collectives) and "
      "write a hardware profile that scenarios use with cluster.profile: FILE.\n"
      "  mpirun -np 2 dtsim calibrate --cpu -o cpu-profile.yaml\n"
      "  dtsim calibrate --gpu -o h200.yaml");
  auto* cal_cpu = calibrate->add_flag_callback(
      "--cpu", [o] { o->backend = "cpu"; }, "calibrate the CPU back end (default)");
  calibrate
      ->add_flag_callback(
          "--gpu", [o] { o->backend = "gpu"; }, "calibrate the GPU back end (CUDA + NCCL)")
      ->excludes(cal_cpu);
  calibrate->add_option("-o,--output", o->output, "profile YAML to write (default: stdout)");
  calibrate->add_option("--gpu-model", o->gpu_model,
                        "catalog GPU name to record (default: CPU-core, or from the device name)");
  calibrate->add_flag("--quick", o->quick, "a smaller grid and sweep (seconds, for tests)");
  calibrate->add_option("--timeout", o->timeout,
                        "a rank that does not reach a benchmark within this ends it (default "
                        "300s)");

  return {calibrate, [o](std::ostream& out) { return run_calibrate(*o, out); }};
}

Verb add_sweep(CLI::App& app, const std::vector<std::string>& engines) {
  auto o = std::make_shared<SweepOptions>();
  auto* sweep = app.add_subcommand(
      "sweep",
      "Run many predictions of one scenario, one child dtsim per run (-j at once), and stream a "
      "row per configuration to a CSV or JSON Lines file as each finishes: its overrides, every "
      "result key, the wall time and the status. A failed or timed-out run is a row with its "
      "error; the others go on. Ctrl-C, a kill or a crash loses no finished row: rerun with "
      "--resume to finish.\n"
      "  dtsim sweep scenarios/default.yaml --vary cluster.nodes=1,2,4,8 -j 2 -o scaling.csv\n"
      "  dtsim sweep S.yaml --vary parallelism.tensor=1,2,4,8 --vary "
      "training.micro_batch_size=range(1,4,1) -o grid.jsonl\n"
      "  dtsim sweep S.yaml --vary cluster.nodes=range(8,64,8) --shard 0/3 -o part0.csv   "
      "(Slurm arrays)\n"
      "  mpirun -np 4 dtsim sweep S.yaml --vary cluster.nodes=1,2,4,8 -o scaling.csv\n"
      "  dtsim sweep --merge part0.csv part1.csv part2.csv -o all.csv\n"
      "  dtsim analyze scaling.csv");
  sweep->add_option("scenario", o->request.scenario, "scenario YAML file");
  sweep
      ->add_option("--vary", o->request.vary,
                   "key.path=v1,v2,... or key.path=range(a,b,step) (a, a+step, ... up to and "
                   "including b); repeat for a cartesian product, the first --vary outermost")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--grid", o->request.grid,
                    "YAML file: a list of override sets, each one configuration, e.g. "
                    "'- {parallelism.tensor: 8, parallelism.pipeline: 2}'");
  sweep
      ->add_option("--set", o->request.overrides,
                   "override a scenario key in every run (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--engine", o->request.engine, engine_help())->check(CLI::IsMember(engines));
  sweep->add_option("-j,--jobs", o->request.jobs, "runs at once (default 1)")
      ->check(CLI::Range(1, 4096));
  sweep->add_option("-o,--output", o->request.output,
                    "results file: .csv or .jsonl (JSON Lines keeps every result key nested)");
  sweep->add_flag("--resume", o->request.resume,
                  "continue a sweep into the same file, skipping the configurations it holds");
  sweep->add_option("--timeout", o->timeout,
                    "stop a run after this long (e.g. 10min) and record it as status timeout");
  sweep->add_option("--shard", o->shard,
                    "i/n: run configuration k only when k mod n = i, e.g. --shard "
                    "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT; merge the shards with --merge");
  sweep->add_option("--max-memory", o->request.max_memory,
                    "each run's memory limit, as for simulate (default 8GiB)");
  sweep
      ->add_option("--merge", o->merge,
                   "join the results files of the shards of one sweep into -o (one row per "
                   "configuration); runs nothing")
      ->expected(1, 100000);

  return {sweep, [o](std::ostream& out) { return run_sweep(std::move(*o), out); }};
}

Verb add_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  auto* plan = app.add_subcommand(
      "plan",
      "Search the parallel configurations (tensor, context, pipeline, data and expert sizes, ZeRO "
      "stage, micro-batch, recompute, schedule and virtual stages) of the scenario's model, "
      "cluster and global batch: drop those the checks refuse or that do not fit in memory, rank "
      "the rest by the analytic engine's step time, simulate the best --top with SimGrid (one "
      "child process each) and print them ranked, with what limits each.\n"
      "  dtsim plan scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml --top 3\n"
      "  dtsim plan S.yaml --constraint 'parallelism.tensor<=4' --constraint "
      "training.recompute=none --json\n"
      "(quote a constraint with < or > so that the shell does not read it as a redirection)");
  plan->add_option("scenario", o->scenario, "scenario YAML file (its model, cluster and batch)")
      ->required();
  plan->add_option("--set", o->overrides, "override a scenario key before the search (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  plan->add_option("--constraint", o->constraints,
                   "pin or bound a searched key: KEY=V, KEY<=V or KEY>=V, e.g. "
                   "parallelism.tensor<=8, parallelism.zero_stage=1, training.recompute=full "
                   "(repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  plan->add_option("--top", o->top, "how many of the best to simulate with SimGrid (default 5)");
  plan->add_option("-j,--jobs", o->jobs, "simulations at once (default 2)")
      ->check(CLI::Range(1, 4096));
  plan->add_option("--timeout", o->timeout, "stop a simulation after this long, e.g. 10min");
  plan->add_option("--max-search-time", o->max_search_time,
                   "refuse a search estimated to take longer than this (default 2h; 0: no "
                   "limit): each configuration costs about 2 us per GPU of the cluster, so a "
                   "search over 100,000 GPUs needs --constraint to narrow it");
  plan->add_flag("--json", o->json, "print the search and the ranking as JSON");
  plan->add_flag("--analytic-only", o->analytic_only,
                 "list the best --top by the analytic engine's step time (what `dtsim simulate "
                 "--engine analytic` gives each) without simulating them with SimGrid");
  plan->add_option("--rank-by", o->rank_by,
                   "what ranks the configurations: step (the predicted step time, the default) "
                   "or high (the upper end of its 80 % interval from comparable published runs, "
                   "which charges a parallelism family dtsim has been too fast on)");
  plan->add_option("--objective", o->objective,
                   "what the ranking minimises over the whole run (training.tokens or "
                   "training.steps): time (to train, the default), cost (GPU-hours x "
                   "cluster.price_per_gpu_hour) or energy");
  plan->add_option("--deadline", o->deadline,
                   "keep only configurations that train within this time, e.g. 30d (needs the "
                   "run's size: training.tokens or training.steps)");
  plan->add_option("--budget", o->budget,
                   "keep only configurations whose run costs at most this, e.g. 2MUSD (needs "
                   "cluster.price_per_gpu_hour, in the same currency)");

  return {plan, [o](std::ostream& out) { return run_plan(*o, out); }};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dtsim::cli;
  // glibc hands freed memory at the top of its heap back to the system beyond 128 KiB, and
  // serves large blocks from mappings of their own that are unmapped when freed. dtsim builds
  // and frees schedules and graphs of hundreds of MB phase after phase, and every phase faulted
  // its pages in again: page faults were 27% of lowering a 64-GPU data-parallel step at chunk
  // fidelity (bench/results/tree-chunk-speed.md). Keep up to 1 GiB of freed memory for reuse, and
  // serve blocks up to 32 MiB (glibc's largest threshold) from the heap. Allocation only.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  const std::vector<std::string> engines = dtsim::engine_choices();
  CLI::App app{
      "dtsim predicts the step time, memory and scaling of distributed deep-learning training "
      "on a GPU cluster.\n\n"
      "Examples:\n"
      "  dtsim simulate scenarios/default.yaml\n"
      "  dtsim simulate scenarios/default.yaml --set cluster.nodes=4 --json\n"
      "  dtsim validate scenarios/default.yaml\n"
      "  dtsim catalog gpus\n"
      "  mpirun -np 2 dtsim real scenarios/real/cpu-data-parallel.yaml\n",
      "dtsim"};
  app.set_version_flag("--version", std::string("dtsim ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  AnalyzeOptions analyze_options;
  CLI::App* analyze = add_analyze_command(app, analyze_options);
  const std::vector<Verb> verbs = {
      add_simulate(app, engines),
      add_validate(app),
      add_collective(app, engines),
      add_catalog(app),
      add_compare(app),
      add_real(app),
      add_calibrate(app, command_line),
      add_sweep(app, engines),
      {analyze, [&](std::ostream& out) { return run_analyze(analyze_options, out); }},
      add_plan(app),
  };

  // An unknown command gets a suggestion rather than CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const Verb& v : verbs) names.push_back(v.command->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string hint = dtsim::did_you_mean(argv[1], names);
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "error: unknown command '" << argv[1] << "'"
                << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << " Commands: " << list
                << ". Run 'dtsim --help'.\n";
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "error: " << dtsim::printable(e.what()) << "\n"
              << "Run 'dtsim --help' or 'dtsim COMMAND --help' for usage.\n";
    return kExitBadInput;
  }

  const Verb* parsed = nullptr;
  for (const Verb& v : verbs)
    if (v.command->parsed()) parsed = &v;
  try {
    if (parsed) return parsed->run(std::cout);
  } catch (const dtsim::InputError& e) {
    // Every rank of a real-mode job reads the same input: rank 0 alone reports it.
    const bool launched = parsed && (parsed->command->get_name() == "real" ||
                                     parsed->command->get_name() == "calibrate");
    if (launched && secondary_rank()) return kExitBadInput;
    for (const auto& d : e.diagnostics()) std::cerr << d.render() << "\n";
    return kExitBadInput;
  } catch (const dtsim::Error& e) {
    std::cerr << "error: " << dtsim::printable(e.what()) << "\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "error: internal failure: " << dtsim::printable(e.what()) << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}
