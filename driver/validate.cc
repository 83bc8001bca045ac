#include "driver/validate.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/collectives/collective_schedule.h"
#include "core/exec/analytic_executor.h"
#include "core/report/report.h"
#include "core/strategy/layout.h"

namespace dtsim::driver {
namespace {

std::string rank_list(const std::vector<Rank>& ranks) {
  if (ranks.empty()) return "[]";
  if (ranks.size() <= 8) {
    std::string s = "[";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    return s + "]";
  }
  return "[" + std::to_string(ranks.front()) + ", " + std::to_string(ranks[1]) + ", ..., " +
         std::to_string(ranks.back()) + "] (" + std::to_string(ranks.size()) + " ranks)";
}

// What shrinks the memory category that overflows most, leaving out what the scenario does
// already.
std::string memory_remedy(const Scenario& s, size_t largest) {
  std::string remedy;
  if (static_cast<MemoryCategory>(largest) == MemoryCategory::kActivations) {
    // Only what the scenario does not do already.
    std::vector<std::string> steps;
    if (!s.training.flash_attention) steps.push_back("turn on training.flash_attention");
    if (s.training.recompute == Recompute::kNone)
      steps.push_back("use training.recompute: selective or full");
    else if (s.training.recompute == Recompute::kSelective)
      steps.push_back("use training.recompute: full (selective is set)");
    if (s.training.micro_batch_size.value > 1)
      steps.push_back("a smaller training.micro_batch_size");
    steps.push_back(std::string("more tensor") +
                    (s.parallelism.sequence_parallel ? "" : " (with sequence_parallel)") +
                    ", context or pipeline parallelism");
    for (size_t i = 0; i < steps.size(); ++i)
      remedy += (i == 0 ? "" : i + 1 == steps.size() ? ", or " : ", ") + steps[i];
    remedy[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(remedy[0])));
  } else if (static_cast<MemoryCategory>(largest) == MemoryCategory::kBuffers) {
    remedy = "Lower training.gradient_bucket or training.runtime_reserve";
  } else {
    remedy =
        "Shard the model state: parallelism.zero_stage (1 optimizer, 2 + gradients, 3 + "
        "weights), or more tensor or pipeline parallelism; or choose a GPU with more "
        "memory";
  }
  return remedy;
}

}  // namespace

void validate(const Plan& plan, std::ostream& out) {
  const Scenario& s = plan.scenario;
  const Cluster& c = plan.cluster;
  out << "scenario " << printable(s.name, 200) << " (" << printable(s.file, 200)
      << "): OK so far\n";
  out << "  cluster      " << s.cluster.nodes << " nodes x " << c.gpus_per_node << " "
      << with_overrides(c.gpu.name, c.gpu_overridden) << " = " << s.cluster.total_gpus() << " GPUs";
  // Dedicated parameter servers run on nodes appended to the cluster (core/strategy/
  // parameter_server.h).
  if (c.nodes > s.cluster.nodes)
    out << ", and " << c.nodes - s.cluster.nodes
        << " appended node(s) of that kind for the dedicated parameter servers";
  out << "\n";
  out << "  GPU          " << format_flop_rate(c.gpu.peak_for(s.training.precision)) << " dense "
      << to_string(s.training.precision) << ", " << format_bytes(c.gpu.memory) << ", "
      << format_bandwidth(c.gpu.memory_bandwidth) << " memory bandwidth\n";
  // A measured profile replaces catalog figures: say whose (core/hardware/profile.h).
  if (!c.profile.empty())
    out << "  profile      " << printable(c.profile, 200) << ": measured GEMM rates ("
        << c.gpu.gemm_table.size() << " dtype(s)), memory bandwidth, launch overhead"
        << (c.intra_node.source.rfind("measured:", 0) == 0 ? ", intra-node links" : "")
        << " replace the catalog's\n";
  out << "  intra-node   " << with_overrides(c.intra_node.name, c.intra_node_overridden) << ": "
      << format_bandwidth(c.intra_node.per_gpu_bandwidth) << " per GPU per direction ("
      << format_bandwidth(c.intra_node.usable_bandwidth()) << " usable), "
      << format_duration(c.intra_node.latency) << " per hop\n";
  out << "  network      " << with_overrides(c.network.preset, c.network.overridden) << " ("
      << to_string(c.network.kind) << ", " << to_string(c.network.topology)
      << "): " << c.network.nics_per_node << " x "
      << format_number("%.0f Gb/s", c.network.nic_bandwidth.value() * 8 / 1e9) << " per node, "
      << format_duration(c.network.latency) << ", oversubscription " << c.network.oversubscription
      << ":1\n";
  for (const auto& n : s.notes) out << "  note         " << printable(n, 400) << "\n";
  out << "  model        " << plan.model.name << ": " << format_count(plan.model.parameters())
      << " parameters, " << describe_layers(count_layers(plan.model)) << "\n";
  const auto& par = s.parallelism;
  out << "  parallelism  tensor " << par.tensor.value
      << (par.sequence_parallel ? " (sequence parallel)" : "") << ", context " << par.context.value
      << ", pipeline " << par.pipeline.value;
  if (par.pipeline.value > 1)
    out << " (" << to_string(par.schedule)
        << (par.schedule == Schedule::kInterleaved
                ? ", " + std::to_string(par.virtual_stages) + " chunks per GPU"
                : std::string())
        << ")";
  out << ", data " << par.data.value << (par.data_auto ? " (auto)" : "") << ", expert "
      << par.expert.value << ", ZeRO stage " << par.zero_stage << "; " << s.micro_batches()
      << " micro-batches of " << s.training.micro_batch_size.value << " per replica per step\n";
  out << "  gradients    " << to_string(s.training.grad_dtype)
      << (s.training.grad_dtype_auto
              ? " (auto for " + std::string(to_string(s.training.precision)) + ")"
              : std::string())
      << ", buckets of " << format_bytes(s.training.gradient_bucket) << " (the first "
      << format_bytes(s.training.first_gradient_bucket) << "), reverse layer order\n";
  out << "  placement    order " << to_string(par.placement_order)
      << " (innermost first); rank r runs on node r / " << c.gpus_per_node << ", GPU r % "
      << c.gpus_per_node << "; simulated ranks: " << plan.job.programs.size() << " of "
      << c.total_gpus() << " (the rest folded by symmetry)\n";
  if (par.pipeline.value > 1) {
    const RankLayout layout = rank_layout(s.parallelism);
    out << "    pipeline stages of replica 0 (tensor rank 0):";
    for (int stage = 0; stage < par.pipeline.value; ++stage)
      out << (stage ? " ->" : "") << " " << layout.rank(0, 0, stage, 0);
    out << "\n";
  }
  // The collectives each group runs (the Job lists every group of the world, most of them
  // without a simulated member), in one pass over the ops.
  std::map<GroupId, std::vector<const CollectiveOp*>> issued;
  for (const auto& p : plan.job.programs)
    for (const auto& st : p.streams)
      for (const auto& op : st.ops)
        if (const auto* col = std::get_if<CollectiveOp>(&op.body))
          issued[col->group].push_back(col);
  std::map<std::string, int> shown;
  for (const auto& g : plan.job.groups) {
    // One example of each kind of group that communicates (groups of one rank never do).
    if (g.ranks.size() <= 1 || shown.count(g.name)) continue;
    const auto found = issued.find(g.id);
    if (found == issued.end()) continue;
    // The collectives this group runs, with the algorithm and protocol auto resolves them to.
    std::map<std::string, int> seen;
    // Resolved once per distinct collective: resolving costs O(group size), and a data-parallel
    // group of a million ranks issues hundreds of equal buckets.
    std::map<std::tuple<CollectiveKind, double, DType>, ResolvedCollective> resolved;
    for (const CollectiveOp* col : found->second) {
      const auto key = std::make_tuple(col->kind, col->bytes.value(), col->dtype);
      auto it = resolved.find(key);
      if (it == resolved.end())
        it = resolved.emplace(key, resolve_collective(*col, g.ranks, c)).first;
      const ResolvedCollective& r = it->second;
      const std::string how =
          std::string(to_string(col->kind)) + " " + format_bytes(col->bytes) + " " +
          std::string(to_string(col->dtype)) + ": " + std::string(to_string(r.algorithm)) +
          (r.protocol == CollectiveProtocol::kAuto ? std::string()
                                                   : "/" + std::string(to_string(r.protocol)));
      ++seen[how];
    }
    shown[g.name] = 1;
    std::set<int> nodes;
    for (Rank rank : g.ranks) nodes.insert(c.node_of(rank));
    out << "    group " << g.name << ": " << rank_list(g.ranks) << ", spans " << nodes.size()
        << " node(s)\n";
    for (const auto& [how, count] : seen) out << "      " << count << " x " << how << "\n";
  }
  // Memory: the analytic executor's timeline gives the peak and what is live at it.
  AnalyticExecutor exec;
  Trace t = exec.run(plan.job, c, RunOptions{});
  Results r = compute_results(s, plan.model, plan.job, t);
  out << "  memory per GPU at peak:\n";
  size_t largest = 0;
  for (size_t k = 0; k < r.per_category_bytes.size(); ++k) {
    std::string name(to_string(static_cast<MemoryCategory>(k)));
    name.resize(12, ' ');
    out << "    " << name << " " << format_bytes(Bytes(r.per_category_bytes[k])) << "\n";
    if (r.per_category_bytes[k] > r.per_category_bytes[largest]) largest = k;
  }
  out << "    total        " << format_bytes(Bytes(r.peak_bytes_per_gpu)) << " of "
      << format_bytes(Bytes(r.capacity_bytes)) << (r.fits ? " (fits)" : " (does not fit)") << "\n";
  if (!r.fits) {
    const std::string cat(to_string(static_cast<MemoryCategory>(largest)));
    const std::string remedy = memory_remedy(s, largest);
    throw InputError(
        Diagnostic{c.gpu_where.known() ? c.gpu_where : SourceLocation{s.file, 0, 0}, "memory",
                   "the job needs " + format_bytes(Bytes(r.peak_bytes_per_gpu)) + " per GPU but " +
                       with_overrides(c.gpu.name, c.gpu_overridden) + " has " +
                       format_bytes(Bytes(r.capacity_bytes)) + " (short by " +
                       format_bytes(Bytes(r.peak_bytes_per_gpu - r.capacity_bytes)) +
                       "); the largest category is " + cat + " at " +
                       format_bytes(Bytes(r.per_category_bytes[largest])) + ". " + remedy});
  }
  out << "valid: " << printable(s.name, 200) << " can run\n";
}

}  // namespace dtsim::driver
