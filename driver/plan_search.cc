#include "driver/plan_search.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "core/exec/analytic_executor.h"
#include "core/exec/compute_cost.h"
#include "core/exec/overlap_contention.h"
#include "core/strategy/layout.h"
#include "core/strategy/model_state.h"
#include "core/strategy/strategy.h"
#include "driver/child_process.h"
#include "driver/predict.h"
#include "models/model_spec.h"
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
// FastAnalyticModel
//
// What the analytic engine computes for a folded Job (core/exec/activity_graph.cc): every op is a
// node that starts when the op before it on its stream and the events it waits on have ended;
// a collective is one node shared by its simulated members, a send and its receive one node.
// The step time is the latest end. The Job's ops come from core/strategy/parallel_step.cc; this
// evaluator emits the same dependencies with each unbroken run of compute-stream ops (kernels and
// tensor- or context-parallel collectives that only the one simulated rank of the stage joins)
// as one node whose duration is the sum of theirs. Runs break where another stream waits on
// them: pipeline sends, gradient buckets, the collectives several stages join. Each run keeps its
// chain of kernels, so that after the first longest path the kernels beside collectives are
// stretched as lowering stretches them (core/exec/overlap_contention.h), and the longest path is
// taken again.

namespace {

// A longest-path graph: node finish = max(predecessors' finish) + duration.
// Its buffers are kept across clear(), since a search evaluates thousands of graphs.
class StepGraph {
 public:
  void clear() {
    duration_.clear();
    edges_.clear();
  }
  int add(double duration) {
    duration_.push_back(duration);
    return static_cast<int>(duration_.size()) - 1;
  }
  void edge(int from, int to) {
    if (from >= 0) edges_.emplace_back(from, to);
  }
  // After makespan(): when node i started; its duration, which may be changed for another
  // makespan() over the same edges.
  double start(int i) const { return start_[static_cast<size_t>(i)]; }
  double duration(int i) const { return duration_[static_cast<size_t>(i)]; }
  void set_duration(int i, double d) { duration_[static_cast<size_t>(i)] = d; }
  double makespan() {
    const size_t n = duration_.size();
    first_.assign(n + 1, 0);
    preds_.assign(n, 0);
    succ_.resize(edges_.size());
    for (const auto& [a, b] : edges_) {
      ++first_[static_cast<size_t>(a) + 1];
      ++preds_[static_cast<size_t>(b)];
    }
    for (size_t i = 0; i < n; ++i) first_[i + 1] += first_[i];
    fill_.assign(first_.begin(), first_.end() - 1);
    for (const auto& [a, b] : edges_)
      succ_[static_cast<size_t>(fill_[static_cast<size_t>(a)]++)] = b;
    start_.assign(n, 0.0);
    ready_.clear();
    for (size_t i = 0; i < n; ++i)
      if (preds_[i] == 0) ready_.push_back(static_cast<int>(i));
    double end = 0;
    size_t done = 0;
    while (!ready_.empty()) {
      const auto v = static_cast<size_t>(ready_.back());
      ready_.pop_back();
      const double finish = start_[v] + duration_[v];
      end = std::max(end, finish);
      ++done;
      for (int k = first_[v]; k < first_[v + 1]; ++k) {
        const auto s = static_cast<size_t>(succ_[static_cast<size_t>(k)]);
        start_[s] = std::max(start_[s], finish);
        if (--preds_[s] == 0) ready_.push_back(static_cast<int>(s));
      }
    }
    if (done != n) throw RuntimeError("plan: the step graph has a cycle (a dtsim bug)");
    return end;
  }

 private:
  std::vector<double> duration_, start_;
  std::vector<std::pair<int, int>> edges_;
  std::vector<int> first_, preds_, succ_, fill_, ready_;
};

// Mirrors parallel_step.cc's schedule_for_stage (Narayanan et al. 2021, section 2.2).
struct Unit {
  bool forward = true;
  int chunk = 0;
  int micro_batch = 0;
};
std::vector<Unit> schedule_units(Schedule schedule, int p, int s, int v, int m) {
  std::vector<Unit> units;
  auto fwd = [&](int mb) { units.push_back({true, 0, mb}); };
  auto bwd = [&](int mb) { units.push_back({false, 0, mb}); };
  if (schedule == Schedule::kGpipe) {
    for (int mb = 0; mb < m; ++mb) fwd(mb);
    for (int mb = 0; mb < m; ++mb) bwd(mb);
    return units;
  }
  if (schedule != Schedule::kInterleaved || v == 1) {
    const int warmup = std::min(p - s - 1, m);
    for (int mb = 0; mb < warmup; ++mb) fwd(mb);
    for (int i = 0; i < m - warmup; ++i) {
      fwd(warmup + i);
      bwd(i);
    }
    for (int mb = m - warmup; mb < m; ++mb) bwd(mb);
    return units;
  }
  const int total = m * v;
  auto unit = [&](bool forward, int k) {
    const int group = k / p;
    int chunk = group % v;
    if (!forward) chunk = v - 1 - chunk;
    return Unit{forward, chunk, (k / (p * v)) * p + k % p};
  };
  const int warmup = m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  for (int k = 0; k < warmup; ++k) units.push_back(unit(true, k));
  for (int i = 0; i < total - warmup; ++i) {
    units.push_back(unit(true, warmup + i));
    units.push_back(unit(false, i));
  }
  for (int k = total - warmup; k < total; ++k) units.push_back(unit(false, k));
  return units;
}

// Mirrors parallel_step.cc's folding_is_exact: the Job holds one rank per stage.
bool folds_to_one_rank_per_stage(const Scenario& sc) {
  const auto& c = sc.cluster;
  const auto& net = c.network;
  return sc.simulate.symmetry_folding && net.nics_per_node >= c.gpus_per_node &&
         c.intra_node.kind != FabricKind::kPcie && net.topology != Topology::kTorus &&
         net.topology != Topology::kDragonfly && net.topology != Topology::kRailOnly &&
         net.oversubscription <= 1 && net.pod_oversubscription <= 1;
}

bool megatron_framework(Framework f) {
  return f == Framework::kMegatronLm2021 || f == Framework::kMegatronCore || f == Framework::kNemo;
}

Bytes stashed(const Layer& l, Recompute r) {
  if (!l.recomputable) return l.activation_bytes;
  switch (r) {
    case Recompute::kNone:
      return l.activation_bytes;
    case Recompute::kSelective:
      return l.activation_bytes_selective;
    case Recompute::kFull:
      return l.activation_bytes_full;
  }
  return l.activation_bytes;
}

Bytes recomputed(const Layer& l, Recompute r) {
  if (!l.recomputable) return Bytes(0);
  if (r == Recompute::kFull) return l.activation_bytes - l.activation_bytes_full;
  if (r == Recompute::kSelective) return l.activation_bytes - l.activation_bytes_selective;
  return Bytes(0);
}

// Running memory of one rank in compute-stream order, as trace_from_times() accounts it: the
// engine orders a rank's memory events by time, which on one stream is stream order.
struct MemoryTimeline {
  std::array<Bytes, kMemoryCategories> live{};
  Bytes total{0};
  Bytes peak{0};
  std::array<Bytes, kMemoryCategories> at_peak{};
  void add(MemoryCategory c, Bytes b) {
    if (b.value() == 0) return;  // parallel_step.cc emits no op for zero bytes
    live[static_cast<size_t>(c)] += b;
    total += b;
    if (total > peak) {
      peak = total;
      at_peak = live;
    }
  }
};

}  // namespace

struct FastAnalyticModel::Impl {
  StepGraph graph;  // reused by every evaluate()
  // One entry of a kernel chain, for the SM charge of kernels beside collectives
  // (core/exec/overlap_contention.h): a kernel of `time` (kernel set), a TP collective in line
  // (kernel null), or a GEMM of `time` with the collective of `comm` seconds beside it (comm >= 0).
  struct Item {
    double time = 0;
    double comm = -1;
    const Kernel* kernel = nullptr;
    DType dtype = DType::kBf16;
  };
  using Items = std::vector<Item>;
  // Per-layer chain times of one stage: forward, recompute (selective, full), backward, and
  // their chains.
  struct LayerTimes {
    double forward = 0, selective = 0, full = 0, backward = 0;
    Items forward_items, selective_items, backward_items;
  };
  // A kernel's rate beside `held` collective blocks over its full rate, by (kernel, dtype,
  // cluster, held).
  std::map<std::tuple<const Kernel*, int, const Cluster*, int>, double> speeds;
  double speed(const Item& item, int held, const Cluster& c) {
    const auto key = std::make_tuple(item.kernel, static_cast<int>(item.dtype), &c, held);
    auto it = speeds.find(key);
    if (it == speeds.end()) {
      const Kernel& k = *item.kernel;
      it = speeds.emplace(key, speed_beside(compute_op_of(k, item.dtype), c.gpu, held)).first;
    }
    return it->second;
  }
  // Shard graphs by what shapes them (one model section per search).
  std::map<std::tuple<std::string, int, bool, int, int, int64_t, int, bool, bool, bool, double>,
           std::unique_ptr<ModelGraph>>
      shards;
  std::map<std::tuple<const ModelGraph*, const Cluster*, int, std::vector<Rank>, std::vector<Rank>,
                      bool>,
           LayerTimes>
      layer_times;
  // Clusters by their configuration's identity in a search (the same file and GPU count).
  std::map<std::tuple<std::string, int, int, std::string>, std::unique_ptr<Cluster>> clusters;
  // Collective times by (kind, bytes, dtype, group), the group interned once per stage: a
  // data-parallel group holds up to every rank, and a stage issues hundreds of buckets on it.
  struct RanksHash {
    size_t operator()(const std::vector<Rank>& ranks) const {
      size_t h = ranks.size();
      for (Rank r : ranks) h = h * 1000003u ^ static_cast<size_t>(r);
      return h;
    }
  };
  std::unordered_map<std::vector<Rank>, int, RanksHash> group_ids;
  std::vector<const std::vector<Rank>*> groups;
  struct CollectiveTimeHash {
    size_t operator()(const std::tuple<int, double, int, int>& k) const {
      return std::hash<double>()(std::get<1>(k)) ^ (static_cast<size_t>(std::get<0>(k)) << 1) ^
             (static_cast<size_t>(std::get<2>(k)) << 5) ^
             (static_cast<size_t>(std::get<3>(k)) << 9);
    }
  };
  std::unordered_map<std::tuple<int, double, int, int>, double, CollectiveTimeHash>
      collective_times;

  int group_id(const std::vector<Rank>& ranks) {
    auto it = group_ids.find(ranks);
    if (it == group_ids.end()) {
      it = group_ids.emplace(ranks, static_cast<int>(groups.size())).first;
      groups.push_back(&it->first);
    }
    return it->second;
  }

  // Compute times of a shard's kernels, by (shard, layer, list, index): list 0 forward, 1
  // backward, 2 selective recompute.
  std::map<std::tuple<const ModelGraph*, const Cluster*, int, int, size_t>, double> kernel_times;

  const ModelGraph& shard(const Scenario& sc) {
    const auto& par = sc.parallelism;
    const auto key = std::make_tuple(
        sc.file, par.tensor.value, par.sequence_parallel, par.context.value, par.expert.value,
        sc.training.micro_batch_size.value, static_cast<int>(sc.training.precision),
        sc.training.flash_attention, sc.training.moe_permute_fusion, sc.training.moe_router_fusion,
        sc.training.moe_load_imbalance.value_or(0));
    auto it = shards.find(key);
    if (it == shards.end())
      it = shards.emplace(key, std::make_unique<ModelGraph>(models::shard_from_scenario(sc))).first;
    return *it->second;
  }

  const Cluster& cluster(const Scenario& sc) {
    const auto key =
        std::make_tuple(sc.file, sc.cluster.nodes, sc.cluster.gpus_per_node, sc.cluster.gpu.name);
    auto it = clusters.find(key);
    if (it == clusters.end())
      it = clusters.emplace(key, std::make_unique<Cluster>(sc.cluster)).first;
    return *it->second;
  }

  // The collective's time on the interned group `group` (group_id()).
  double collective(const CollectiveOp& op, int group, const Cluster& c) {
    const auto key = std::make_tuple(static_cast<int>(op.kind), op.bytes.value(),
                                     static_cast<int>(op.dtype), group);
    auto it = collective_times.find(key);
    if (it == collective_times.end())
      it = collective_times
               .emplace(key, collective_time(op, *groups[static_cast<size_t>(group)], c).value())
               .first;
    return it->second;
  }
  double collective(const CollectiveOp& op, const std::vector<Rank>& ranks, const Cluster& c) {
    return collective(op, group_id(ranks), c);
  }

  // One kernel list in order. `async_tp` mirrors the step builder's asynchronous tensor-parallel
  // backward of the Megatron profiles (core/strategy/parallel_step.cc, async_tp_backward and
  // overlaps_gemm): a column-parallel input's backward collective runs beside the GEMM after it,
  // so the pair costs the longer of the two.
  double chain(const ModelGraph* g, int layer, int list, const std::vector<Kernel>& ks, DType dtype,
               const std::vector<Rank>& tp, const std::vector<Rank>& cp, const Cluster& c,
               Rank rank, bool async_tp, Items& items) {
    auto kernel_time = [&](size_t j) {
      const Kernel& k = ks[j];
      const auto key = std::make_tuple(g, &c, layer, list, j);
      auto it = kernel_times.find(key);
      if (it == kernel_times.end())
        it = kernel_times
                 .emplace(
                     key,
                     (compute_time(compute_op_of(k, dtype), c.gpu) / c.speed_scale(rank)).value())
                 .first;
      return it->second;
    };
    double sum = 0;
    for (size_t j = 0; j < ks.size(); ++j) {
      const Kernel& k = ks[j];
      if (k.kind != KernelKind::kCommunication) {
        sum += kernel_time(j);
        items.push_back(Item{kernel_time(j), -1, &k, dtype});
        continue;
      }
      const CollectiveOp op{collective_kind(k.pattern), 0, k.bytes, dtype};
      const double communication = collective(op, k.group == CommGroup::kTensor ? tp : cp, c);
      const bool beside_gemm =
          async_tp && k.group == CommGroup::kTensor &&
          (k.name.ends_with("_tp_enter.backward") || k.name.ends_with("_sp_regather.backward")) &&
          j + 2 < ks.size() && ks[j + 1].kind == KernelKind::kGemm;
      if (beside_gemm) {
        sum += std::max(communication, kernel_time(j + 1));
        items.push_back(Item{kernel_time(j + 1), communication, &ks[j + 1], dtype});
        ++j;
        continue;
      }
      sum += communication;
      items.push_back(Item{communication, -1, nullptr, dtype});
    }
    return sum;
  }

  // The collectives beside a stage's compute stream (gradient buckets, the tied embedding's
  // all-reduce, the ZeRO weight gather), and its compute runs with their chains.
  struct Window {
    int node, stage, sms;
  };
  struct StageRun {
    int node, stage;
    const std::vector<const Items*>* run;
  };

  // The engine's charge (core/exec/overlap_contention.cc, charge_overlap_contention) on the
  // step graph after its first longest path: each stage's profile of collective blocks (its
  // windows and the TP collectives beside GEMMs inside its chains), then every kernel of every
  // run stretched from its start in that uncontended schedule. Returns whether any run changed.
  bool charge_beside_collectives(StepGraph& graph, const Cluster& c, int stages,
                                 const std::vector<Window>& windows,
                                 const std::vector<StageRun>& runs, int tp_sms) {
    if (c.gpu.sm_count <= 1 || !nccl_runs_collectives(c)) return false;
    std::vector<SmProfile> profiles(static_cast<size_t>(stages));
    for (const Window& w : windows)
      profiles[static_cast<size_t>(w.stage)].add(
          graph.start(w.node), graph.start(w.node) + graph.duration(w.node), w.sms);
    for (const StageRun& r : runs) {
      double t = graph.start(r.node);
      for (const Items* items : *r.run)
        for (const Item& item : *items) {
          if (item.comm >= 0) profiles[static_cast<size_t>(r.stage)].add(t, t + item.comm, tp_sms);
          t += item.comm >= 0 ? std::max(item.comm, item.time) : item.time;
        }
    }
    bool any = false;
    for (auto& profile : profiles) {
      profile.seal();
      any = any || !profile.empty();
    }
    if (!any) return false;
    bool changed = false;
    for (const StageRun& r : runs) {
      const SmProfile& profile = profiles[static_cast<size_t>(r.stage)];
      if (profile.empty()) continue;
      double t = graph.start(r.node), total = 0;
      for (const Items* items : *r.run)
        for (const Item& item : *items) {
          const double uncontended = item.comm >= 0 ? std::max(item.comm, item.time) : item.time;
          if (item.kernel == nullptr) {
            total += item.time;
          } else {
            const double kernel =
                profile.stretched(t, item.time, [&](int held) { return speed(item, held, c); });
            total += item.comm >= 0 ? std::max(item.comm, kernel) : kernel;
          }
          t += uncontended;
        }
      if (total != graph.duration(r.node)) {
        graph.set_duration(r.node, total);
        changed = true;
      }
    }
    return changed;
  }

  const LayerTimes& layer(const ModelGraph& g, int i, DType dtype, const std::vector<Rank>& tp,
                          const std::vector<Rank>& cp, const Cluster& c, Rank rank, bool async_tp) {
    const auto key = std::make_tuple(&g, &c, i, tp, cp, async_tp);
    auto it = layer_times.find(key);
    if (it != layer_times.end()) return it->second;
    const Layer& l = g.layers[static_cast<size_t>(i)];
    LayerTimes t;
    t.forward = chain(&g, i, 0, l.forward, dtype, tp, cp, c, rank, false, t.forward_items);
    t.backward = chain(&g, i, 1, l.backward, dtype, tp, cp, c, rank, async_tp, t.backward_items);
    t.selective =
        chain(&g, i, 2, l.selective_recompute, dtype, tp, cp, c, rank, false, t.selective_items);
    t.full = t.forward;
    return layer_times.emplace(key, t).first->second;
  }
};

FastAnalyticModel::FastAnalyticModel() : impl_(std::make_unique<Impl>()) {}
FastAnalyticModel::~FastAnalyticModel() = default;

bool FastAnalyticModel::covers(const Scenario& sc) const {
  const auto& par = sc.parallelism;
  // Mixture-of-experts models, with or without expert parallelism: the step builder keeps the
  // expert weights in their own part (their state, buckets and reductions over the
  // expert-data-parallel group), which the step-level model does not mirror.
  if (models::spec_from_scenario(sc).num_experts >= 2) return false;
  return par.zero_stage <= 2 && !par.tp_comm_overlap && !par.pipeline_scatter_gather &&
         sc.training.precision != DType::kFp8 && sc.stragglers.entries.empty() &&
         sc.simulate.iterations == 1 &&
         // PipeDream's schedules and gradient compression build steps the step-level model
         // does not mirror (core/strategy/parallel_step.cc); the analytic engine times them.
         !is_pipedream(par.schedule) && sc.training.compression.method == Compression::kNone &&
         // Relaxed synchronisation rewrites the step after the engine (driver/relaxed_sync.h).
         sc.training.sync == SyncMode::kSynchronous && folds_to_one_rank_per_stage(sc);
}

AnalyticEstimate FastAnalyticModel::evaluate(const Scenario& sc) {
  Impl& im = *impl_;
  const ModelGraph& g = im.shard(sc);
  const Cluster& cluster = im.cluster(sc);
  const auto& par = sc.parallelism;
  const auto& tr = sc.training;
  const int t = par.tensor.value, p = par.pipeline.value, d = par.data.value,
            cp = par.context.value;
  const int v = par.schedule == Schedule::kInterleaved && p > 1 ? par.virtual_stages : 1;
  const int m = static_cast<int>(sc.micro_batches());
  const int zero = par.zero_stage;
  const DType dtype = tr.precision, grad_dtype = tr.grad_dtype;
  const double grad_bpp = gradient_bytes_per_parameter(grad_dtype);
  const double weight_bpp = weight_bytes_per_parameter(dtype);
  const bool megatron = megatron_framework(tr.framework);
  const bool mixed = weight_bpp < 4;
  const RankLayout layout = layout_from_scenario(sc);
  const auto chunks = pipeline_chunks(g, p, v, par.layers_per_stage);
  double tied = 0;
  for (const auto& l : g.layers) tied = std::max(tied, l.tied_parameters);
  auto dense_params = [&](const Layer& l) {
    return l.parameters - l.expert_parameters + (p > 1 ? l.tied_parameters : 0);
  };
  const double boundary_bytes = training_bytes_per_element(dtype) * g.micro_batch_size *
                                g.shape.seq_length * g.shape.hidden_size / cp /
                                (par.sequence_parallel ? t : 1);
  auto sorted = [](std::vector<Rank> r) {
    std::sort(r.begin(), r.end());
    return r;
  };
  const int dp_size = d * cp;
  // The gradient-statistics group: every rank with the distributed optimizer, else the model-
  // parallel ranks of replica 0 (parallel_step.cc, rank_groups).
  std::vector<Rank> grad_stats;
  if (zero >= 1) {
    for (Rank r = 0; r < cluster.world_size(); ++r) grad_stats.push_back(r);
  } else {
    for (int s = 0; s < p; ++s)
      for (int i = 0; i < t; ++i) grad_stats.push_back(layout.rank(i, 0, s, 0));
  }
  grad_stats = sorted(grad_stats);

  StepGraph& graph = im.graph;
  graph.clear();
  // The Job's op budget under predict()'s default --max-memory (strategy.h, JobOptions::max_ops).
  const double max_ops =
      std::max(1.0, (kDefaultMaxMemoryBytes - kBaseRunBytes) / kBytesPerOpIteration);
  double job_ops = 0;
  // Send/receive pairs, matched as lower() does: (src, dst, tag, sequence).
  std::vector<std::vector<int>> p2p(static_cast<size_t>(2 * p));
  int embedding_node = -1, grad_norm_node = -1;
  // For the SM charge of kernels beside collectives (core/exec/overlap_contention.h).
  std::vector<Impl::Window> windows;
  std::vector<Impl::StageRun> runs;
  const int tp_sms = collective_sms(cluster, t);
  // A run's chains, in order (Impl::Items), for the SM charge after the first longest path.
  using Run = std::vector<const Impl::Items*>;
  struct ChunkCosts {
    double forward = 0, backward = 0;
    Run forward_run, backward_run;
    std::vector<Run> bucketed_runs;                // parallel to bucketed
    std::vector<Bytes> stash;                      // forward order
    std::vector<std::pair<Bytes, Bytes>> release;  // backward order: recomputed, freed
    // run, then its buckets: (preparation on the compute stream, collective)
    std::vector<std::pair<double, std::vector<std::pair<double, double>>>> bucketed;
    std::vector<double> buckets;       // every bucket's time, in order
    std::vector<double> bucket_preps;  // parallel to buckets: Megatron's kernels before each
  };
  std::deque<std::vector<ChunkCosts>> kept_costs;
  AnalyticEstimate out;
  out.fast = true;
  std::vector<std::pair<Rank, MemoryTimeline>> memories;
  for (int s = 0; s < p; ++s) {
    const Rank rank = layout.rank(0, 0, s, 0);
    const Rank prev = layout.rank(0, 0, (s + p - 1) % p, 0);
    const Rank next = layout.rank(0, 0, (s + 1) % p, 0);
    const auto tp_ranks = sorted(layout.group(ParallelDim::kTensor, 0, 0, s, 0));
    const auto cp_ranks = sorted(layout.group(ParallelDim::kContext, 0, 0, s, 0));
    std::vector<Rank> dp_ranks;
    for (int dd = 0; dd < d; ++dd)
      for (int c = 0; c < cp; ++c) dp_ranks.push_back(layout.rank(0, c, s, dd));
    dp_ranks = sorted(dp_ranks);
    const int dp_group = im.group_id(dp_ranks);
    const int dp_sms = collective_sms(cluster, static_cast<int>(dp_ranks.size()));
    const double p2p_s = p > 1 ? point_to_point_time(Bytes(boundary_bytes), Endpoint::gpu(rank),
                                                     Endpoint::gpu(next), cluster)
                                     .value()
                               : 0;
    auto p2p_time = [&](Rank from, Rank to) {
      return p > 1 ? point_to_point_time(Bytes(boundary_bytes), Endpoint::gpu(from),
                                         Endpoint::gpu(to), cluster)
                         .value()
                   : 0.0;
    };
    const double p2p_prev_s = p2p_time(rank, prev), p2p_from_prev_s = p2p_time(prev, rank),
                 p2p_from_next_s = p2p_time(next, rank);

    // Model state, buckets and the op count, per chunk as build_rank() makes them.
    double part_params = 0;
    Bytes largest_bucket{0};
    double kernels_per_micro_batch = 0;
    std::vector<std::vector<GradientBucket>> buckets(chunks.size());
    for (int j = 0; j < v; ++j) {
      const int c = j * p + s;
      const auto& range = chunks[static_cast<size_t>(c)];
      for (int i = range.first; i <= range.last; ++i) {
        const Layer& l = g.layers[static_cast<size_t>(i)];
        part_params += dense_params(l);
        kernels_per_micro_batch += static_cast<double>(l.forward.size() + l.backward.size() +
                                                       l.selective_recompute.size() + 3);
      }
      buckets[static_cast<size_t>(c)] =
          assign_gradient_buckets(g, range.first, range.last, grad_bpp, tr.first_gradient_bucket,
                                  tr.gradient_bucket, dense_params);
      if (dp_size > 1)
        for (const auto& b : buckets[static_cast<size_t>(c)])
          largest_bucket = std::max(largest_bucket, b.bytes);
    }
    const double ops = kernels_per_micro_batch * m;
    if (ops > kMaxOpsPerStep || job_ops + ops * (p - s) > max_ops)
      throw InputError(Diagnostic{tr.global_batch_size.where, "training.global_batch_size",
                                  "the step has more ops than dtsim simulates"});
    job_ops += ops;
    const ModelStateBytes state =
        model_state_bytes(part_params, dtype, grad_dtype, tr.optimizer, zero, dp_size);
    const double optimizer_shard = zero >= 1 ? part_params / dp_size : part_params;

    MemoryTimeline mem;
    mem.add(MemoryCategory::kWeights, state.weights);
    mem.add(MemoryCategory::kGradients, state.gradients);
    mem.add(MemoryCategory::kOptimizer, state.optimizer);
    mem.add(MemoryCategory::kBuffers, tr.runtime_reserve);
    mem.add(MemoryCategory::kBuffers, largest_bucket);

    // Each local chunk's forward and backward, computed once for all its micro-batches: the
    // time of the run of kernels, the activation bytes each layer stashes or frees, and for the
    // last micro-batch's backward the runs between the points where gradient buckets start.
    // Kept until the SM charge after the loop, which reads the runs' chains.
    // Megatron's kernels before each bucket's collective (parallel_step.cc, prepare_bucket): the
    // NaN check's norm (megatron-core, nemo) and the 1/dp scaling.
    auto bucket_prep = [&](Bytes bucket) {
      if (!megatron || bucket.value() <= 0) return 0.0;
      auto kernel = [&](double bytes) {
        return compute_time(ComputeOp{KernelKind::kElementwise, Flops(0), Bytes(bytes), grad_dtype},
                            cluster.gpu)
                   .value() /
               cluster.speed_scale(rank);
      };
      const bool nan_check =
          tr.framework == Framework::kMegatronCore || tr.framework == Framework::kNemo;
      return (nan_check ? kernel(bucket.value()) : 0.0) + kernel(2 * bucket.value());
    };
    std::vector<ChunkCosts>& costs = kept_costs.emplace_back(static_cast<size_t>(v));
    for (int j = 0; j < v; ++j) {
      const int c = j * p + s;
      const auto& range = chunks[static_cast<size_t>(c)];
      ChunkCosts& k = costs[static_cast<size_t>(j)];
      for (int i = range.first; i <= range.last; ++i) {
        const auto& times = im.layer(g, i, dtype, tp_ranks, cp_ranks, cluster, rank,
                                     megatron_framework(tr.framework));
        k.forward += times.forward;
        k.forward_run.push_back(&times.forward_items);
        k.stash.push_back(stashed(g.layers[static_cast<size_t>(i)], tr.recompute));
      }
      const auto& chunk_buckets = buckets[static_cast<size_t>(c)];
      for (const auto& b : chunk_buckets) {
        k.buckets.push_back(im.collective(
            CollectiveOp{zero == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter, 0,
                         b.bytes, grad_dtype},
            dp_group, cluster));
        k.bucket_preps.push_back(bucket_prep(b.bytes));
      }
      size_t next_bucket = 0;
      double run = 0;
      Run run_items;
      for (int i = range.last; i >= range.first; --i) {
        const Layer& l = g.layers[static_cast<size_t>(i)];
        const auto& times = im.layer(g, i, dtype, tp_ranks, cp_ranks, cluster, rank,
                                     megatron_framework(tr.framework));
        const Bytes transient = recomputed(l, tr.recompute);
        double t_layer = 0;
        Run layer_items;
        if (l.recomputable && tr.recompute == Recompute::kFull) {
          t_layer += times.full;
          layer_items.push_back(&times.forward_items);
        }
        if (l.recomputable && tr.recompute == Recompute::kSelective) {
          t_layer += times.selective;
          layer_items.push_back(&times.selective_items);
        }
        t_layer += times.backward;
        layer_items.push_back(&times.backward_items);
        k.backward_run.insert(k.backward_run.end(), layer_items.begin(), layer_items.end());
        run_items.insert(run_items.end(), layer_items.begin(), layer_items.end());
        k.backward += t_layer;
        run += t_layer;
        k.release.emplace_back(transient, -(stashed(l, tr.recompute) + transient));
        // A bucket starts once the backward of its lowest layer has ended.
        std::vector<std::pair<double, double>> starting;
        while (next_bucket < chunk_buckets.size() && chunk_buckets[next_bucket].first_layer == i) {
          starting.emplace_back(k.bucket_preps[next_bucket], k.buckets[next_bucket]);
          ++next_bucket;
        }
        if (!starting.empty()) {
          k.bucketed.emplace_back(run, std::move(starting));
          k.bucketed_runs.push_back(std::move(run_items));
          run = 0;
          run_items.clear();
        }
      }
      k.bucketed.emplace_back(run, std::vector<std::pair<double, double>>{});
      k.bucketed_runs.push_back(std::move(run_items));
    }

    int compute = -1, grad_comm = -1, send_next = -1, send_prev = -1, recv_prev = -1,
        recv_next = -1;
    int sent_count[2] = {0, 0}, received_count[2] = {0, 0};
    // The node of a send and its receive, by tag (0: activations to the next stage, 1:
    // gradients to the previous one), sending stage and sequence, as lower() pairs them.
    auto pair_node = [&](int tag, int src_stage, int seq, double duration) {
      auto& nodes = p2p[static_cast<size_t>(tag * p + src_stage)];
      if (static_cast<int>(nodes.size()) <= seq) nodes.resize(static_cast<size_t>(seq) + 1, -1);
      int& n = nodes[static_cast<size_t>(seq)];
      if (n < 0) n = graph.add(duration);
      return n;
    };
    auto on_compute = [&](double duration, int waits_for, const Run* run = nullptr) {
      const int n = graph.add(duration);
      graph.edge(compute, n);
      graph.edge(waits_for, n);
      compute = n;
      if (run != nullptr) runs.push_back(Impl::StageRun{n, s, run});
      return n;
    };
    auto on_grad_comm = [&](double duration, int waits_for, int sms) {
      const int n = graph.add(duration);
      graph.edge(grad_comm, n);
      graph.edge(waits_for, n);
      grad_comm = n;
      windows.push_back(Impl::Window{n, s, sms});
      return n;
    };

    if (megatron && zero < 3)
      on_compute(compute_time(ComputeOp{KernelKind::kElementwise, Flops(0),
                                        Bytes(part_params * grad_bpp), grad_dtype},
                              cluster.gpu)
                         .value() /
                     cluster.speed_scale(rank),
                 -1);

    const int prev_stage = (s + p - 1) % p, next_stage = (s + 1) % p;
    for (const Unit& u : schedule_units(par.schedule, p, s, v, m)) {
      const int c = u.chunk * p + s;
      const ChunkCosts& k = costs[static_cast<size_t>(u.chunk)];
      if (u.forward) {
        int received = -1;
        if (c > 0) {
          received = pair_node(0, prev_stage, received_count[0]++, p2p_from_prev_s);
          graph.edge(recv_prev, received);
          recv_prev = received;
        }
        for (const Bytes b : k.stash) mem.add(MemoryCategory::kActivations, b);
        const int produced = on_compute(k.forward, received, &k.forward_run);
        if (c + 1 < p * v) {
          const int sent = pair_node(0, s, sent_count[0]++, p2p_s);
          graph.edge(send_next, sent);
          graph.edge(produced, sent);
          send_next = sent;
        }
        continue;
      }
      int received = -1;
      if (c + 1 < p * v) {
        received = pair_node(1, next_stage, received_count[1]++, p2p_from_next_s);
        graph.edge(recv_next, received);
        recv_next = received;
      }
      for (const auto& [transient, freed] : k.release) {
        mem.add(MemoryCategory::kActivations, transient);
        mem.add(MemoryCategory::kActivations, freed);
      }
      const bool last = u.micro_batch == m - 1;
      int done = -1;
      if (last && tr.overlap_grad_reduce && dp_size > 1) {
        for (size_t b = 0; b < k.bucketed.size(); ++b) {
          const auto& [run, starting] = k.bucketed[b];
          done = on_compute(run, received, &k.bucketed_runs[b]);
          received = -1;
          for (const auto& [prep, t_bucket] : starting) {
            if (prep > 0) done = on_compute(prep, -1);
            on_grad_comm(t_bucket, done, dp_sms);
          }
        }
      } else {
        done = on_compute(k.backward, received, &k.backward_run);
      }
      if (last && !tr.overlap_grad_reduce && dp_size > 1) {
        bool first = true;
        for (size_t b = 0; b < k.buckets.size(); ++b) {
          const bool prepared = k.bucket_preps[b] > 0;
          if (prepared) done = on_compute(k.bucket_preps[b], -1);
          on_grad_comm(k.buckets[b], prepared || first ? done : -1, dp_sms);
          first = false;
        }
      }
      if (c > 0) {
        const int sent = pair_node(1, s, sent_count[1]++, p2p_prev_s);
        graph.edge(send_prev, sent);
        graph.edge(done, sent);
        send_prev = sent;
      }
    }

    // Tied embedding: the first and last stage all-reduce it together.
    if (p > 1 && (s == 0 || s == p - 1) && tied > 0) {
      if (embedding_node < 0)
        embedding_node = graph.add(im.collective(
            CollectiveOp{CollectiveKind::kAllReduce, 0, Bytes(tied * grad_bpp), grad_dtype},
            sorted({layout.rank(0, 0, 0, 0), layout.rank(0, 0, p - 1, 0)}), cluster));
      graph.edge(grad_comm, embedding_node);
      graph.edge(compute, embedding_node);
      grad_comm = embedding_node;
      windows.push_back(Impl::Window{embedding_node, s, collective_sms(cluster, 2)});
    }

    // The optimizer step after every gradient collective (parallel_step.cc, build_rank): its
    // first kernel waits for the last one; the gradient-norm all-reduce joins every stage.
    int waits_for = grad_comm;
    double sum = 0;
    auto flush = [&] {
      const int n = on_compute(sum, waits_for);
      waits_for = -1;
      sum = 0;
      return n;
    };
    auto step_kernel = [&](KernelKind kind, double bytes) {
      sum +=
          compute_time(ComputeOp{kind, Flops(0), Bytes(bytes), DType::kFp32}, cluster.gpu).value() /
          cluster.speed_scale(rank);
    };
    if (megatron && mixed && grad_bpp < 4)
      step_kernel(KernelKind::kElementwise, optimizer_shard * (grad_bpp + 4));
    if (dtype == DType::kFp16) {
      step_kernel(KernelKind::kElementwise, state.gradients.value() * 2.0);
      if (dp_size > 1)
        sum += im.collective(CollectiveOp{CollectiveKind::kAllReduce, 0, Bytes(4), DType::kFp32},
                             dp_group, cluster);
    }
    if (megatron) {
      step_kernel(KernelKind::kElementwise, optimizer_shard * 4);
      if (grad_stats.size() > 1) {
        flush();
        if (grad_norm_node < 0)
          grad_norm_node = graph.add(
              im.collective(CollectiveOp{CollectiveKind::kAllReduce, 0, Bytes(4), DType::kFp32},
                            grad_stats, cluster));
        graph.edge(compute, grad_norm_node);
        compute = grad_norm_node;
      }
      if (tr.framework != Framework::kMegatronLm2021)
        step_kernel(KernelKind::kElementwise, optimizer_shard * 8);
      const double updated =
          optimizer_bytes_per_parameter(dtype, tr.optimizer) + (mixed ? 0 : weight_bpp);
      step_kernel(KernelKind::kOptimizer, optimizer_shard * (4 + 2 * updated));
      if (mixed) step_kernel(KernelKind::kElementwise, optimizer_shard * (4 + weight_bpp));
    } else {
      step_kernel(KernelKind::kOptimizer,
                  optimizer_shard * (grad_bpp + weight_bpp +
                                     2 * optimizer_bytes_per_parameter(dtype, tr.optimizer)));
    }
    const int stepped = flush();
    if ((zero == 1 || zero == 2) && dp_size > 1 && part_params > 0)
      on_grad_comm(im.collective(CollectiveOp{CollectiveKind::kAllGather, 0,
                                              Bytes(part_params * weight_bpp), dtype},
                                 dp_group, cluster),
                   stepped, dp_sms);
    memories.emplace_back(rank, mem);
  }
  out.step_time_s = graph.makespan();
  if (im.charge_beside_collectives(graph, cluster, p, windows, runs, tp_sms))
    out.step_time_s = graph.makespan();
  // The worst rank, as compute_results() picks it: in rank order, the last of the largest.
  std::sort(memories.begin(), memories.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, mem] : memories)
    if (mem.peak.value() >= out.peak_bytes) {
      out.peak_bytes = mem.peak.value();
      for (size_t c = 0; c < kMemoryCategories; ++c) out.at_peak[c] = mem.at_peak[c].value();
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The search

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
  size_t largest = 0;
  for (size_t c = 1; c < e.at_peak.size(); ++c)
    if (e.at_peak[c] > e.at_peak[largest]) largest = c;
  return std::string(to_string(static_cast<MemoryCategory>(largest)));
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

}  // namespace

PlanReport plan_search(const PlanRequest& req) {
  if (req.top < 1)
    throw InputError(Diagnostic{
        SourceLocation{}, "--top",
        "expected at least 1 configuration to simulate, found " + std::to_string(req.top)});
  if (req.dtsim.empty()) throw RuntimeError("plan: no dtsim binary to run the simulations with");
  const Scenario base = load(req.scenario, req.overrides);
  // Every candidate is loaded from the same text: read once, then load_scenario_text() with the
  // path as its name is load() (core/scenario/scenario.cc) without reading the file again.
  std::string text;
  {
    std::ifstream in(req.scenario, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const models::ModelSpec spec = models::spec_from_scenario(base);
  PlanReport rep;
  rep.scenario_name = base.name;
  rep.gpus = base.cluster.nodes * base.cluster.gpus_per_node;
  rep.global_batch_size = base.training.global_batch_size.value;
  rep.gpu = base.cluster.gpu.name;
  rep.capacity_bytes = base.cluster.gpu.memory.value();

  // Every candidate, grouped by what one load of the scenario decides (all but recompute, which
  // no check involves: it is set on the loaded scenario).
  const std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kSelective,
                                             Recompute::kFull};
  auto allowed = [&](const PlanConfig& c) {
    for (const auto& k : req.constraints)
      if (!satisfies(c, k)) return false;
    return true;
  };
  struct Shape {
    PlanConfig config;  // recompute unset
    std::vector<Recompute> recomputes;
  };
  std::vector<std::vector<Shape>> by_zero_group;  // one entry per shape; its ZeRO variants
  const int gpn = base.cluster.gpus_per_node;
  std::vector<int> experts = {1};
  if (spec.num_experts >= 2) experts = divisors(spec.num_experts);
  for (int tp : divisors(gpn)) {
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
  if (rep.enumerated == 0)
    throw InputError(Diagnostic{SourceLocation{}, "--constraint",
                                "no configuration satisfies the constraints; loosen them"});

  // Load and evaluate each: the loader decides validity, the analytic model time and memory.
  if (req.progress) req.progress->phase("evaluating configurations", rep.enumerated);
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  FastAnalyticModel fast;
  std::vector<Candidate> fitting, misses;
  std::vector<std::pair<Scenario, PlanConfig>> deferred;
  auto classify = [&](Candidate c) {
    if (c.estimate.peak_bytes <= rep.capacity_bytes) {
      fitting.push_back(std::move(c));
      return;
    }
    ++rep.do_not_fit;
    ++rep.do_not_fit_by_category[largest_category(c.estimate)];
    misses.push_back(std::move(c));
  };
  size_t done = 0;
  for (const auto& zeros : by_zero_group) {
    bool shape_refused = false;
    std::string refusal;
    for (const Shape& shape : zeros) {
      const size_t n = shape.recomputes.size();
      // The loader's checks do not involve the ZeRO stage (a count from 0 to 3 in the schema),
      // so a shape it refuses at one stage it refuses at every stage.
      if (shape_refused) {
        rep.invalid += n;
        rep.invalid_by_key[refusal] += n;
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
        shape_refused = true;
        refusal = refused_key(e);
        rep.invalid += n;
        rep.invalid_by_key[refusal] += n;
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
        if (!fast.covers(sc)) {
          deferred.emplace_back(std::move(sc), c.config);
          continue;
        }
        try {
          const double t0 = cpu_seconds();
          c.estimate = fast.evaluate(sc);
          rep.fast_cpu_s += cpu_seconds() - t0;
          ++rep.fast_evaluations;
        } catch (const InputError& e) {
          ++rep.invalid;
          ++rep.invalid_by_key[refused_key(e)];
          ++done;
          continue;
        }
        ++done;
        classify(std::move(c));
      }
      if (req.progress) req.progress->advance(done);
    }
  }
  // What the step-level evaluator does not cover runs through the analytic engine itself, within
  // its time budget: a large model's Job takes a second or more each.
  const auto engine_start = std::chrono::steady_clock::now();
  for (auto& [sc, config] : deferred) {
    ++done;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - engine_start).count() >
        req.engine_budget_s) {
      ++rep.not_evaluated;
      continue;
    }
    Candidate c;
    c.config = config;
    try {
      c.estimate = analytic_estimate(sc);
      ++rep.engine_evaluations;
    } catch (const InputError& e) {
      ++rep.invalid;
      ++rep.invalid_by_key[refused_key(e)];
      continue;
    }
    classify(std::move(c));
    if (req.progress) req.progress->advance(done);
  }
  rep.analytic_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  rep.analytic_cpu_s = cpu_seconds() - cpu0;
  rep.fits = fitting.size();
  std::sort(misses.begin(), misses.end(), [](const Candidate& a, const Candidate& b) {
    return a.estimate.peak_bytes < b.estimate.peak_bytes;
  });
  for (size_t i = 0; i < misses.size() && i < 3; ++i)
    rep.closest_misses.push_back(row_of(misses[i], rep.capacity_bytes));

  if (fitting.empty()) {
    std::string why;
    if (!misses.empty()) {
      const Candidate& best = misses.front();
      const size_t largest = [&] {
        size_t l = 0;
        for (size_t c = 1; c < kMemoryCategories; ++c)
          if (best.estimate.at_peak[c] > best.estimate.at_peak[l]) l = c;
        return l;
      }();
      why = "none of the " + std::to_string(rep.do_not_fit) +
            " valid configurations evaluated fits in memory: the smallest peak is " +
            format_bytes(Bytes(best.estimate.peak_bytes)) + " per GPU (" + best.config.describe() +
            "), against " + format_bytes(Bytes(rep.capacity_bytes)) + " of " + rep.gpu +
            " memory; its largest part is " +
            std::string(to_string(static_cast<MemoryCategory>(largest))) + " (" +
            format_bytes(Bytes(best.estimate.at_peak[largest])) +
            "). Use more GPUs (cluster.nodes), GPUs with more memory (cluster.gpu), a smaller "
            "model, or loosen the constraints";
    } else {
      std::string reasons;
      for (const auto& [key, count] : rep.invalid_by_key)
        reasons += (reasons.empty() ? "" : ", ") + key + " (" + std::to_string(count) + ")";
      why = "none of the " + std::to_string(rep.enumerated) +
            " configurations is valid for this model, cluster and global batch; the checks "
            "that refused them, by key: " +
            reasons + ". Run dtsim validate with one of them to see the messages";
    }
    throw InputError(Diagnostic{SourceLocation{base.file, 0, 0}, "parallelism", why});
  }

  std::stable_sort(fitting.begin(), fitting.end(), [](const Candidate& a, const Candidate& b) {
    return a.estimate.step_time_s < b.estimate.step_time_s;
  });
  const size_t top = std::min(fitting.size(), static_cast<size_t>(req.top));
  for (size_t i = 0; i < top; ++i)
    rep.analytic_top.push_back(row_of(fitting[i], rep.capacity_bytes));

  // SimGrid, one child process per simulation.
  if (req.progress) req.progress->phase("simulating the best with SimGrid", top);
  std::vector<PlanRow> rows = rep.analytic_top;
  {
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
        PlanRow& row = rows[id];
        ++finished;
        if (req.progress) req.progress->advance(finished);
        using Status = ChildOutcome::Status;
        if (outcome.status != Status::kExited || outcome.exit_code != 0) {
          row.error =
              outcome.status == Status::kTimedOut     ? "timed out"
              : outcome.status == Status::kNotStarted ? "did not start: " + outcome.error
              : outcome.status == Status::kSignalled
                  ? "crashed (signal " + std::to_string(outcome.signal) + ")"
                  : "exit " + std::to_string(outcome.exit_code) + ": " + last_line(outcome.err);
          continue;
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
          row.limiter = plan_limiter(row.compute_s, row.exposed_communication_s,
                                     row.pipeline_bubble_s, row.peak_bytes, row.capacity_bytes);
          // The search ranked it as fitting; a simulated peak over the GPU's memory means the
          // estimate was wrong, and such a configuration is never the answer.
          if (row.capacity_bytes > 0 && row.peak_bytes > row.capacity_bytes) {
            row.simulated = false;
            row.over_memory = true;
            row.error = "does not fit when simulated: " + format_bytes(Bytes(row.peak_bytes)) +
                        " per GPU of " + format_bytes(Bytes(row.capacity_bytes)) +
                        " (the search estimated " + format_bytes(Bytes(row.analytic.peak_bytes)) +
                        ")";
          }
        } catch (const std::exception& e) {
          row.simulated = false;
          row.error = std::string("unreadable result: ") + printable(e.what(), 200);
        }
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const PlanRow& a, const PlanRow& b) {
    if (a.simulated != b.simulated) return a.simulated;
    return a.step_time_s < b.step_time_s;
  });
  rep.ranked = std::move(rows);
  return rep;
}

}  // namespace dtsim::driver
