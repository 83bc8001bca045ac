#include "driver/plan_search.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/exec/analytic_executor.h"
#include "core/report/memory_parts.h"
#include "driver/child_process.h"
#include "driver/predict.h"
#include "driver/prediction_interval.h"
#include "driver/progress.h"
#include "driver/reliability.h"
#include "driver/sweep_results.h"
#include "models/scenario_model.h"

namespace dtsim::driver {

// ---------------------------------------------------------------------------------------------
// Constraints

namespace {

// A constraint's key, the PlanConfig field it reads, and whether it takes a name or a number.
struct ConstraintKey {
  std::string key;
  bool named;  // schedule and recompute take names (= only)
};

const std::vector<ConstraintKey>& constraint_table() {
  static const std::vector<ConstraintKey> table = {
      {"parallelism.tensor", false},         {"parallelism.pipeline", false},
      {"parallelism.data", false},           {"parallelism.context", false},
      {"parallelism.expert", false},         {"parallelism.zero_stage", false},
      {"parallelism.virtual_stages", false}, {"parallelism.schedule", true},
      {"training.micro_batch_size", false},  {"training.recompute", true}};
  return table;
}

// The value of `key` in `c`: a number, or (schedule, recompute) a name.
std::string field_text(const PlanConfig& c, const std::string& key) {
  if (key == "parallelism.tensor") return std::to_string(c.tp);
  if (key == "parallelism.pipeline") return std::to_string(c.pp);
  if (key == "parallelism.data") return std::to_string(c.dp);
  if (key == "parallelism.context") return std::to_string(c.cp);
  if (key == "parallelism.expert") return std::to_string(c.ep);
  if (key == "parallelism.zero_stage") return std::to_string(c.zero_stage);
  if (key == "parallelism.virtual_stages") return std::to_string(c.virtual_stages);
  if (key == "parallelism.schedule") return std::string(to_string(c.schedule));
  if (key == "training.micro_batch_size") return std::to_string(c.micro_batch_size);
  if (key == "training.recompute") return std::string(to_string(c.recompute));
  return "";
}

bool satisfies(const PlanConfig& c, const PlanConstraint& k) {
  const std::string have = field_text(c, k.key);
  if (k.op == PlanConstraint::Op::kEq) return have == k.value;
  const double a = std::stod(have), b = std::stod(k.value);
  return k.op == PlanConstraint::Op::kLe ? a <= b : a >= b;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

InputError constraint_error(const std::string& text, const std::string& message) {
  return InputError(
      Diagnostic{SourceLocation{}, "--constraint", "'" + printable(text, 80) + "': " + message});
}

}  // namespace

const std::vector<std::string>& plan_constraint_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& c : constraint_table()) k.push_back(c.key);
    return k;
  }();
  return keys;
}

PlanConstraint parse_plan_constraint(const std::string& text) {
  PlanConstraint c;
  c.text = text;
  size_t at = std::string::npos, len = 0;
  for (const auto& [op, sym] : std::vector<std::pair<PlanConstraint::Op, std::string>>{
           {PlanConstraint::Op::kLe, "<="}, {PlanConstraint::Op::kGe, ">="}}) {
    if (auto p = text.find(sym); p != std::string::npos) {
      c.op = op;
      at = p;
      len = 2;
      break;
    }
  }
  if (at == std::string::npos) {
    at = text.find('=');
    len = 1;
    c.op = PlanConstraint::Op::kEq;
  }
  if (at == std::string::npos || at == 0 || at + len >= text.size())
    throw constraint_error(text,
                           "expected KEY=VALUE, KEY<=VALUE or KEY>=VALUE, for example "
                           "parallelism.tensor<=8 or training.recompute=full");
  c.key = trim(text.substr(0, at));
  c.value = trim(text.substr(at + len));
  const auto& table = constraint_table();
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const ConstraintKey& k) { return k.key == c.key; });
  if (it == table.end()) {
    const std::string hint = did_you_mean(c.key, plan_constraint_keys());
    std::string all;
    for (const auto& k : plan_constraint_keys()) all += (all.empty() ? "" : ", ") + k;
    throw constraint_error(text, "unknown key '" + printable(c.key, 60) + "'" +
                                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                     " The search varies: " + all);
  }
  if (it->named) {
    if (c.op != PlanConstraint::Op::kEq)
      throw constraint_error(text, c.key + " takes a name: use =, e.g. " + c.key + "=" +
                                       (c.key == "training.recompute" ? "full" : "interleaved"));
    const auto names =
        c.key == "training.recompute" ? kRecomputeNames.names() : kScheduleNames.names();
    if (std::find(names.begin(), names.end(), c.value) == names.end()) {
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : " | ") + n;
      throw constraint_error(text,
                             "expected one of " + all + ", found '" + printable(c.value, 40) + "'");
    }
    return c;
  }
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(c.value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != c.value.size() || v < 0)
    throw constraint_error(
        text, "expected a whole number after the operator, found '" + printable(c.value, 40) + "'");
  c.value = std::to_string(v);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Configurations

std::vector<std::string> PlanConfig::overrides() const {
  return {"parallelism.tensor=" + std::to_string(tp),
          "parallelism.context=" + std::to_string(cp),
          "parallelism.pipeline=" + std::to_string(pp),
          "parallelism.data=" + std::to_string(dp),
          "parallelism.expert=" + std::to_string(ep),
          "parallelism.zero_stage=" + std::to_string(zero_stage),
          "parallelism.schedule=" + std::string(to_string(schedule)),
          "parallelism.virtual_stages=" + std::to_string(virtual_stages),
          "training.micro_batch_size=" + std::to_string(micro_batch_size),
          "training.recompute=" + std::string(to_string(recompute))};
}

std::string PlanConfig::describe() const {
  std::string s = "TP " + std::to_string(tp);
  if (cp > 1) s += " x CP " + std::to_string(cp);
  s += " x PP " + std::to_string(pp);
  if (pp > 1)
    s += " (" + std::string(to_string(schedule)) +
         (schedule == Schedule::kInterleaved ? ", v " + std::to_string(virtual_stages) : "") + ")";
  s += " x DP " + std::to_string(dp);
  if (ep > 1) s += " x EP " + std::to_string(ep);
  s += ", ZeRO-" + std::to_string(zero_stage) + ", mb " + std::to_string(micro_batch_size) +
       ", recompute " + std::string(to_string(recompute));
  return s;
}

// ---------------------------------------------------------------------------------------------
// The analytic engine, as predict() runs it

AnalyticEstimate analytic_estimate(const Scenario& scenario) {
  Plan plan = plan_scenario(scenario);
  AnalyticExecutor engine;
  const Trace trace = engine.run(plan.job, plan.cluster, run_options(plan.scenario));
  const Results r = compute_results(plan.scenario, plan.model, plan.job, trace);
  AnalyticEstimate e;
  e.step_time_s = r.step_time_s;
  e.peak_bytes = r.peak_bytes_per_gpu;
  e.at_peak = r.per_category_bytes;
  return e;
}

// ---------------------------------------------------------------------------------------------
// StepEvaluator

struct StepEvaluator::Impl {
  // Shard graphs by what they are built from (build_model's inputs): a search's candidates share
  // the spec and vary a few options.
  struct Shard {
    models::ModelSpec spec;
    models::BuildOptions options;
    std::unique_ptr<ModelGraph> graph;
  };
  std::vector<Shard> shards;

  const ModelGraph& shard(const Scenario& sc) {
    const models::ModelSpec spec = models::spec_from_scenario(sc);
    const models::BuildOptions options = models::shard_options(sc);
    for (const Shard& s : shards)
      if (s.options == options && s.spec == spec) return *s.graph;
    shards.push_back(
        Shard{spec, options, std::make_unique<ModelGraph>(models::shard_from_scenario(sc))});
    return *shards.back().graph;
  }
};

StepEvaluator::StepEvaluator() : impl_(std::make_unique<Impl>()) {}
StepEvaluator::~StepEvaluator() = default;

AnalyticEstimate StepEvaluator::evaluate(const Scenario& sc, double capacity_bytes, bool energy) {
  const Step step = build_step(sc, impl_->shard(sc), kDefaultMaxMemoryBytes, true);
  AnalyticEstimate out;
  for (const auto& program : step.job.programs) out.ops += static_cast<double>(program.op_count());
  if (const auto memory = peak_in_program_order(step.job);
      memory && memory->bytes > capacity_bytes && sc.stragglers.entries.empty()) {
    out.step_time_s = std::numeric_limits<double>::quiet_NaN();
    out.peak_bytes = memory->bytes;
    out.at_peak = memory->at_peak;
    return out;
  }
  const StepEstimate e = estimate_step(step.job, step.cluster, run_options(sc));
  out.step_time_s = e.step_time_s;
  out.peak_bytes = e.peak_bytes;
  out.at_peak = e.at_peak;
  if (energy)
    if (const StepEnergy s =
            step_energy(step.job, Seconds(e.step_time_s), power_inputs(sc.cluster));
        s.modelled)
      out.energy_per_step_j = s.energy_per_step_j;
  return out;
}

// ---------------------------------------------------------------------------------------------
// The search

namespace {

// The best MFU published for a GPU generation in 16-bit training, from the sources of the public
// validation set (docs/validation.md, section 6), as the source states its FLOPs and peak.
struct PublishedMfu {
  const char* gpu_prefix;
  double mfu;
  const char* source;
};
constexpr PublishedMfu kBestPublishedMfu[] = {
    {"A100", 0.563,
     "a 1T GPT on 512 A100 with selective recompute and sequence parallelism (Korthikanti et al. "
     "2022; the Megatron-LM README of 2022-05-19)"},
    {"H100", 0.471,
     "a 7.1B GPT on 96 H100 in BF16, 465.9 TFLOP/s per GPU of 989 (the Megatron-LM README at "
     "f2e5db402c, 2024-07-15)"},
    {"H200", 0.471,
     "on H100, the same Hopper generation: a 7.1B GPT on 96 H100 in BF16, 465.9 TFLOP/s per GPU "
     "of 989 (the Megatron-LM README at f2e5db402c, 2024-07-15)"},
};

}  // namespace

std::optional<std::string> mfu_warning(const std::string& gpu, DType precision, double mfu) {
  if (precision != DType::kBf16 && precision != DType::kFp16) return std::nullopt;
  for (const auto& p : kBestPublishedMfu)
    if (gpu.rfind(p.gpu_prefix, 0) == 0 && mfu > p.mfu)
      return "the pick's MFU, " + format_number("%.1f%%", 100 * mfu) +
             ", is above the best published for " + p.gpu_prefix + " in 16-bit training, " +
             format_number("%.1f%%", 100 * p.mfu) + " (" + p.source +
             "): no published run of this GPU reached it, so treat the prediction as optimistic "
             "and compare the next picks";
  return std::nullopt;
}

std::string plan_limiter(double compute_s, double exposed_communication_s, double pipeline_bubble_s,
                         double peak_bytes, double capacity_bytes) {
  const double step = compute_s + exposed_communication_s + pipeline_bubble_s;
  // Under a tenth of the GPU's memory left: a larger micro-batch or less recompute does not fit.
  if (capacity_bytes > 0 && peak_bytes > 0.9 * capacity_bytes) return "memory";
  if (step <= 0) return "compute";
  const double worst = std::max(exposed_communication_s, pipeline_bubble_s);
  if (worst < 0.1 * step) return "compute";
  return exposed_communication_s >= pipeline_bubble_s ? "communication" : "bubble";
}

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) out.push_back(k);
  return out;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The key a refusal names (the first diagnostic's), for counting refusals by reason.
std::string refused_key(const InputError& e) {
  for (const auto& d : e.diagnostics())
    if (!d.key_path.empty()) return d.key_path;
  return "scenario";
}

struct Candidate {
  PlanConfig config;
  AnalyticEstimate estimate;
};

std::string largest_category(const AnalyticEstimate& e) {
  return std::string(to_string(dtsim::largest_category(e.at_peak)));
}

PlanRow row_of(const Candidate& c, double capacity) {
  PlanRow r;
  r.config = c.config;
  r.analytic = c.estimate;
  r.step_time_s = c.estimate.step_time_s;
  r.peak_bytes = c.estimate.peak_bytes;
  r.capacity_bytes = capacity;
  return r;
}

// The last non-empty line of a child's stderr: its error message.
std::string last_line(const std::string& text) {
  std::string line, last;
  for (char ch : text) {
    if (ch == '\n') {
      if (!line.empty()) last = line;
      line.clear();
    } else {
      line += ch;
    }
  }
  return printable(line.empty() ? last : line, 300);
}

// A parallel shape with the recompute settings the constraints allow (its recompute unset).
struct Shape {
  PlanConfig config;
  std::vector<Recompute> recomputes;
};

// Every candidate the constraints allow, grouped by what one load of the scenario decides: one
// entry per shape, holding its ZeRO variants (recompute, which no check involves, is set on the
// loaded scenario). Counts them into rep.enumerated.
std::vector<std::vector<Shape>> enumerate_shapes(const PlanRequest& req,
                                                 const models::ModelSpec& spec, int gpus_per_node,
                                                 PlanReport& rep) {
  const std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kSelective,
                                             Recompute::kFull};
  auto allowed = [&](const PlanConfig& c) {
    for (const auto& k : req.constraints)
      if (!satisfies(c, k)) return false;
    return true;
  };
  std::vector<std::vector<Shape>> by_zero_group;
  std::vector<int> experts = {1};
  if (spec.num_experts >= 2) experts = divisors(spec.num_experts);
  for (int tp : divisors(gpus_per_node)) {
    if (rep.gpus % tp != 0) continue;
    for (int cp : {1, 2, 4, 8}) {
      if ((rep.gpus / tp) % cp != 0) continue;
      for (int pp : divisors(rep.gpus / tp / cp)) {
        const int dp = rep.gpus / tp / cp / pp;
        std::vector<std::pair<Schedule, int>> schedules = {{Schedule::k1F1B, 1}};
        if (pp > 1) {
          schedules.push_back({Schedule::kGpipe, 1});
          for (int v : {2, 3, 4, 6, 8}) schedules.push_back({Schedule::kInterleaved, v});
        }
        for (int ep : experts)
          for (int64_t mb : {1, 2, 4, 8, 16})
            for (const auto& [schedule, v] : schedules) {
              std::vector<Shape> zeros;
              for (int zero = 0; zero <= 3; ++zero) {
                Shape shape;
                shape.config =
                    PlanConfig{tp, cp, pp, dp, ep, zero, mb, schedule, v, Recompute::kNone};
                for (Recompute r : recomputes) {
                  PlanConfig c = shape.config;
                  c.recompute = r;
                  if (allowed(c)) shape.recomputes.push_back(r);
                }
                rep.enumerated += shape.recomputes.size();
                if (!shape.recomputes.empty()) zeros.push_back(std::move(shape));
              }
              if (!zeros.empty()) by_zero_group.push_back(std::move(zeros));
            }
      }
    }
  }
  return by_zero_group;
}

// The evaluated candidates: those whose peak fits the GPU's memory, and those that do not.
struct Evaluated {
  std::vector<Candidate> fitting, misses;
};

// Loads each shape once (the loader decides validity) and evaluates each candidate with the step
// builder and the analytic engine; ZeRO-3 candidates come last, within the engine's op budget.
Evaluated evaluate_candidates(const PlanRequest& req, const std::string& text,
                              const std::vector<std::vector<Shape>>& by_zero_group,
                              PlanReport& rep) {
  if (req.progress) req.progress->phase("evaluating configurations", rep.enumerated);
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  StepEvaluator evaluator;
  // The run's energy, shown beside its time and cost (about 1 % more CPU: segments summed once).
  const bool energy = rep.run_sized || req.goal.objective == Objective::kEnergy;
  Evaluated out;
  std::vector<std::pair<Scenario, PlanConfig>> deferred;
  auto refuse = [&](const InputError& e, size_t n) {
    std::string key = refused_key(e);
    rep.invalid += n;
    rep.invalid_by_key[key] += n;
    return key;
  };
  auto classify = [&](Candidate c) {
    if (c.estimate.peak_bytes <= rep.capacity_bytes) {
      out.fitting.push_back(std::move(c));
      return;
    }
    ++rep.do_not_fit;
    ++rep.do_not_fit_by_category[largest_category(c.estimate)];
    out.misses.push_back(std::move(c));
  };
  size_t done = 0;
  for (const auto& zeros : by_zero_group) {
    std::optional<std::string> refusal;
    for (const Shape& shape : zeros) {
      const size_t n = shape.recomputes.size();
      // The loader's checks that involve the ZeRO stage refuse a stage and every stage above it
      // (DeepSpeed's pipeline refuses ZeRO-2 and 3; PipeDream and compression refuse 1 to 3), and
      // the stages come in increasing order: a shape refused at one stage is refused at the rest.
      if (refusal) {
        rep.invalid += n;
        rep.invalid_by_key[*refusal] += n;
        done += n;
        continue;
      }
      std::vector<Override> overrides;
      for (const auto& o : req.overrides) overrides.push_back(Override{o});
      for (auto& o : shape.config.overrides()) overrides.push_back(Override{std::move(o)});
      Scenario loaded;
      try {
        loaded = load_scenario_text(text, req.scenario, overrides, models::check_scenario);
      } catch (const InputError& e) {
        refusal = refuse(e, n);
        done += n;
        if (req.progress) req.progress->advance(done);
        continue;
      }
      for (Recompute r : shape.recomputes) {
        Scenario sc = loaded;
        sc.training.recompute = r;
        Candidate c;
        c.config = shape.config;
        c.config.recompute = r;
        // ZeRO-3 gathers each layer's weights on a stream of its own, so its pipeline units do
        // not form segments and its Job is built and lowered op by op (0.05 to 1 s each for the
        // large models): those come after the others, within the engine's op budget.
        if (sc.parallelism.zero_stage == 3) {
          deferred.emplace_back(std::move(sc), c.config);
          continue;
        }
        ++done;
        try {
          const double t0 = cpu_seconds();
          c.estimate = evaluator.evaluate(sc, rep.capacity_bytes, energy);
          rep.step_level_cpu_s += cpu_seconds() - t0;
          ++rep.step_level_evaluations;
        } catch (const InputError& e) {
          refuse(e, 1);
          continue;
        }
        classify(std::move(c));
      }
      if (req.progress) req.progress->advance(done);
    }
  }
  double& engine_ops = rep.engine_ops;
  for (auto& [sc, config] : deferred) {
    ++done;
    if (engine_ops > req.engine_budget_ops) {
      ++rep.not_evaluated;
      continue;
    }
    Candidate c;
    c.config = config;
    try {
      c.estimate = evaluator.evaluate(sc, rep.capacity_bytes, energy);
      engine_ops += c.estimate.ops;
      ++rep.engine_evaluations;
    } catch (const InputError& e) {
      refuse(e, 1);
      continue;
    }
    classify(std::move(c));
    if (req.progress) req.progress->advance(done);
  }
  rep.analytic_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  rep.analytic_cpu_s = cpu_seconds() - cpu0;
  return out;
}

// Why no configuration is the answer: the smallest peak that does not fit, or the checks that
// refused every one.
std::string why_none_fits(const PlanReport& rep, const std::vector<Candidate>& misses) {
  if (!misses.empty()) {
    const Candidate& best = misses.front();
    const auto largest = static_cast<size_t>(dtsim::largest_category(best.estimate.at_peak));
    return "none of the " + std::to_string(rep.do_not_fit) +
           " valid configurations evaluated fits in memory: the smallest peak is " +
           format_bytes(Bytes(best.estimate.peak_bytes)) + " per GPU (" + best.config.describe() +
           "), against " + format_bytes(Bytes(rep.capacity_bytes)) + " of " + rep.gpu +
           " memory; its largest part is " +
           std::string(to_string(static_cast<MemoryCategory>(largest))) + " (" +
           format_bytes(Bytes(best.estimate.at_peak[largest])) +
           "). Use more GPUs (cluster.nodes), GPUs with more memory (cluster.gpu), a smaller "
           "model, or loosen the constraints";
  }
  std::string reasons;
  for (const auto& [key, count] : rep.invalid_by_key)
    reasons += (reasons.empty() ? "" : ", ") + key + " (" + std::to_string(count) + ")";
  return "none of the " + std::to_string(rep.enumerated) +
         " configurations is valid for this model, cluster and global batch; the checks "
         "that refused them, by key: " +
         reasons + ". Run dtsim validate with one of them to see the messages";
}

// Fills a row from a finished `dtsim simulate --json` child.
void read_simulated(const ChildOutcome& outcome, PlanRow& row) {
  using Status = ChildOutcome::Status;
  // dtsim simulate exits 2 on a configuration that does not fit, with its whole result on
  // stdout: read it, and the check below marks the row.
  bool result_over_memory = false;
  if (outcome.status == Status::kExited && outcome.exit_code == 2) {
    result_over_memory = result_does_not_fit(nlohmann::json::parse(outcome.out, nullptr, false));
  }
  if ((outcome.status != Status::kExited || outcome.exit_code != 0) && !result_over_memory) {
    row.error = outcome.status == Status::kTimedOut     ? "timed out"
                : outcome.status == Status::kNotStarted ? "did not start: " + outcome.error
                : outcome.status == Status::kSignalled
                    ? "crashed (signal " + std::to_string(outcome.signal) + ")"
                    : "exit " + std::to_string(outcome.exit_code) + ": " + last_line(outcome.err);
    return;
  }
  try {
    const auto j = nlohmann::json::parse(outcome.out);
    row.simulated = true;
    row.step_time_s = j.at("step_time_s").get<double>();
    row.mfu = j.at("flops").at("mfu").get<double>();
    row.tokens_per_s = j.at("throughput").at("tokens_per_s").get<double>();
    const auto& b = j.at("breakdown_s");
    row.compute_s = b.at("compute").get<double>();
    row.exposed_communication_s = b.at("exposed_communication").get<double>();
    row.pipeline_bubble_s = b.at("pipeline_bubble").get<double>();
    row.peak_bytes = j.at("memory").at("peak_bytes_per_gpu").get<double>();
    row.capacity_bytes = j.at("memory").at("capacity_bytes").get<double>();
    row.limiter = plan_limiter(row.compute_s, row.exposed_communication_s, row.pipeline_bubble_s,
                               row.peak_bytes, row.capacity_bytes);
    // The whole run as the child simulated it (with failures, when the scenario has them).
    if (const auto run = j.find("run"); run != j.end()) {
      row.run.steps = run->at("steps").get<int64_t>();
      row.run.time_to_train_s = run->at("time_to_train_s").get<double>();
      row.run.gpu_hours = run->at("gpu_hours").get<double>();
      if (run->contains("cost")) row.run.cost = run->at("cost").get<double>();
      if (run->contains("energy_j")) row.run.energy_j = run->at("energy_j").get<double>();
      row.run_from_simulation = true;
    }
    // The search ranked it as fitting; a simulated peak over the GPU's memory means the
    // estimate was wrong, and such a configuration is never the answer.
    if (row.capacity_bytes > 0 && row.peak_bytes > row.capacity_bytes) {
      row.simulated = false;
      row.over_memory = true;
      row.error = "does not fit when simulated: " + format_bytes(Bytes(row.peak_bytes)) +
                  " per GPU of " + format_bytes(Bytes(row.capacity_bytes)) +
                  " (the search estimated " + format_bytes(Bytes(row.analytic.peak_bytes)) + ")";
    }
  } catch (const std::exception& e) {
    row.simulated = false;
    row.error = std::string("unreadable result: ") + printable(e.what(), 200);
  }
}

// Simulates the rows with SimGrid, one child process each, --jobs at a time.
void simulate_rows(const PlanRequest& req, std::vector<PlanRow>& rows) {
  if (req.progress) req.progress->phase("simulating the best with SimGrid", rows.size());
  ChildPool pool(std::max(1, req.jobs));
  size_t next = 0, finished = 0;
  while (finished < rows.size()) {
    while (next < rows.size() && pool.has_slot()) {
      ChildSpec spec;
      spec.argv = {req.dtsim, "simulate", req.scenario};
      std::vector<std::string> overrides = req.overrides;
      for (auto& o : rows[next].config.overrides()) overrides.push_back(std::move(o));
      for (auto& o : overrides) {
        spec.argv.push_back("--set");
        spec.argv.push_back(std::move(o));
      }
      for (const char* a : {"--engine", "simgrid", "--json"}) spec.argv.push_back(a);
      spec.timeout_s = req.child_timeout_s;
      pool.start(next, spec);
      ++next;
    }
    for (auto& [id, outcome] : pool.wait(1.0)) {
      ++finished;
      if (req.progress) req.progress->advance(finished);
      read_simulated(outcome, rows[id]);
    }
  }
}

// Drops the candidates whose run misses the deadline or the budget, counting them; none left is
// an InputError that names the closest miss.
template <class RunOf>
void drop_goal_misses(const RunGoal& goal, std::vector<Candidate>& fitting, PlanReport& rep,
                      const RunOf& run_of) {
  std::optional<std::pair<double, std::string>> closest;
  std::erase_if(fitting, [&](const Candidate& c) {
    const RunFigures run = run_of(c.estimate, c.estimate.step_time_s);
    const auto why = goal_miss(goal, run, rep.price);
    if (!why) return false;
    ++rep.miss_goal;
    const double key = objective_value(goal.objective, run);
    if (!closest || key < closest->first) closest = {key, c.config.describe() + " " + *why};
    return true;
  });
  if (fitting.empty())
    throw InputError(Diagnostic{
        SourceLocation{}, goal.deadline_s ? "--deadline" : "--budget",
        "none of the " + std::to_string(rep.fits) +
            " configurations that fit meets the goal; the closest, " + closest->second +
            " (the analytic engine's step, without failures). Allow more time or money, or "
            "more GPUs"});
}

}  // namespace

PlanReport plan_search(const PlanRequest& req) {
  if (req.top < 1)
    throw InputError(Diagnostic{
        SourceLocation{}, "--top",
        "expected at least 1 configuration to simulate, found " + std::to_string(req.top)});
  if (req.dtsim.empty()) throw RuntimeError("plan: no dtsim binary to run the simulations with");
  // The model, the cluster and the batch: the scenario's own parallelism, which the search
  // replaces, need not be valid (or present).
  const Scenario base = load_for_search(req.scenario, req.overrides);
  // Every candidate is loaded from the same text: read once, then load_scenario_text() with the
  // path as its name is load() (core/scenario/scenario.cc) without reading the file again.
  std::string text;
  {
    std::ifstream in(req.scenario, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  PlanReport rep;
  rep.rank_by = req.rank_by;
  rep.scenario_name = base.name;
  rep.model = models::spec_from_scenario(base).name;
  rep.gpus = base.cluster.nodes * base.cluster.gpus_per_node;
  rep.global_batch_size = base.training.global_batch_size.value;
  rep.gpu = base.cluster.gpu.name;
  rep.capacity_bytes = base.cluster.gpu.memory.value();
  rep.engine_budget_ops = req.engine_budget_ops;
  check_goal(req.goal, base);
  rep.goal = req.goal;
  rep.price = base.cluster.cost.price_per_gpu_hour;
  rep.run_sized = base.reliability.tokens.has_value() || base.reliability.steps.value > 1;
  if (rep.run_sized)
    rep.steps = run_steps(base, rep.global_batch_size, models::spec_from_scenario(base).seq_length);

  const auto by_zero_group =
      enumerate_shapes(req, models::spec_from_scenario(base), base.cluster.gpus_per_node, rep);
  if (rep.enumerated == 0)
    throw InputError(Diagnostic{SourceLocation{}, "--constraint",
                                "no configuration satisfies the constraints; loosen them"});
  // A search over a very large cluster is refused before it starts rather than run for days.
  if (const double estimate = plan_search_estimate_s(static_cast<double>(rep.enumerated), rep.gpus);
      req.max_search_s > 0 && estimate > req.max_search_s)
    throw InputError(Diagnostic{
        SourceLocation{}, "--max-search-time",
        "searching " + std::to_string(rep.enumerated) + " configurations over " +
            std::to_string(rep.gpus) + " GPUs would take at least " +
            CountedProgress::duration_text(estimate) +
            " (each configuration builds the groups of every GPU, about " +
            format_number("%.0f", kSearchSecondsPerGpu * 1e6) +
            " us per GPU), more than the limit of " +
            CountedProgress::duration_text(req.max_search_s) +
            ". Narrow the search with --constraint (e.g. parallelism.tensor=8, "
            "parallelism.pipeline=8, training.micro_batch_size=1, training.recompute=none: each "
            "pinned key divides the count), or raise --max-search-time"});

  auto [fitting, misses] = evaluate_candidates(req, text, by_zero_group, rep);
  rep.fits = fitting.size();
  std::sort(misses.begin(), misses.end(), [](const Candidate& a, const Candidate& b) {
    return a.estimate.peak_bytes < b.estimate.peak_bytes;
  });
  for (size_t i = 0; i < misses.size() && i < 3; ++i)
    rep.closest_misses.push_back(row_of(misses[i], rep.capacity_bytes));
  if (fitting.empty())
    throw InputError(
        Diagnostic{SourceLocation{base.file, 0, 0}, "parallelism", why_none_fits(rep, misses)});

  // Each configuration's interval: what comparable published runs say of a prediction like it.
  const std::string model_family(to_string(models::spec_from_scenario(base).family));
  const std::string sync(to_string(base.training.sync));
  const auto interval_of = [&](const PlanConfig& c, double step_s) {
    Results r;
    r.scenario = base.name;
    r.gpu = rep.gpu;
    r.gpus = rep.gpus;
    r.tp = c.tp;
    r.pp = c.pp;
    r.ep = c.ep;
    return step_time_interval(step_s, interval_query(r, model_family, sync), published_residuals());
  };
  // The run a step time makes (its energy scaled with the step from the analytic one's).
  const auto run_of = [&](const AnalyticEstimate& e, double step_s) {
    const double energy = e.energy_per_step_j < 0 || e.step_time_s <= 0
                              ? -1
                              : e.energy_per_step_j * step_s / e.step_time_s;
    return run_figures(rep.steps, step_s, rep.gpus, rep.price, energy);
  };
  // The ranking's key: the objective at the step time, or at its interval's upper end (the step
  // time where no comparable runs give an interval).
  const auto rank_key = [&](const PlanConfig& c, const AnalyticEstimate& e, double step_s) {
    double s = step_s;
    if (req.rank_by == RankBy::kHigh)
      if (const StepTimeInterval i = interval_of(c, step_s); i.runs > 0) s = i.high_s;
    return objective_value(req.goal.objective, run_of(e, s));
  };
  drop_goal_misses(req.goal, fitting, rep, run_of);
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < fitting.size(); ++i)
    order.emplace_back(
        rank_key(fitting[i].config, fitting[i].estimate, fitting[i].estimate.step_time_s), i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t top = std::min(fitting.size(), static_cast<size_t>(req.top));
  for (size_t i = 0; i < top; ++i) {
    PlanRow row = row_of(fitting[order[i].second], rep.capacity_bytes);
    row.interval = interval_of(row.config, row.analytic.step_time_s);
    row.run = run_of(row.analytic, row.analytic.step_time_s);
    rep.analytic_top.push_back(std::move(row));
  }

  if (!req.simulate) {
    rep.ranked = rep.analytic_top;
    mark_pareto(rep.ranked);
    return rep;
  }
  std::vector<PlanRow> rows = rep.analytic_top;
  simulate_rows(req, rows);
  for (PlanRow& row : rows) {
    if (!row.simulated) continue;
    row.interval = interval_of(row.config, row.step_time_s);
    if (!row.run_from_simulation) row.run = run_of(row.analytic, row.step_time_s);
    // Simulated (with failures, when the scenario has them), it may miss what the search met.
    if (auto why = goal_miss(req.goal, row.run, rep.price)) {
      row.simulated = false;
      row.misses_goal = true;
      row.error = "misses the goal when simulated: " + *why;
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const PlanRow& a, const PlanRow& b) {
    if (a.simulated != b.simulated) return a.simulated;
    return rank_key(a.config, a.analytic, a.step_time_s) <
           rank_key(b.config, b.analytic, b.step_time_s);
  });
  rep.ranked = std::move(rows);
  mark_pareto(rep.ranked);
  if (!rep.ranked.empty() && rep.ranked.front().simulated)
    if (auto w = mfu_warning(rep.gpu, base.training.precision, rep.ranked.front().mfu))
      rep.warnings.push_back(*std::move(w));
  return rep;
}

}  // namespace dtsim::driver
