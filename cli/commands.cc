#include "cli/commands.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "cli/pipeline.h"
#include "core/analytic_executor.h"
#include "core/collective_schedule.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware_markdown.h"
#include "core/report.h"
#include "core/scenario_reference.h"
#include "core/strategy/layout.h"
#include "models/model_builder.h"
#include "models/model_spec.h"
#include "models/scenario_model.h"

namespace dtsim::cli {
namespace {

std::vector<Override> to_overrides(const std::vector<std::string>& texts) {
  std::vector<Override> out;
  for (const auto& t : texts) out.push_back(Override{t});
  return out;
}

// Opens an output file before any work is done, so a bad path costs nothing.
std::ofstream open_output(const std::string& path, const std::string& flag) {
  std::ofstream f(path, std::ios::trunc);
  if (!f)
    throw InputError(Diagnostic{SourceLocation{}, flag,
                                "cannot write '" + path + "' (does its directory exist?)"});
  return f;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

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

}  // namespace

int run_simulate(const SimulateOptions& o, std::ostream& out) {
  auto overrides = to_overrides(o.overrides);
  if (!o.engine.empty()) overrides.push_back(Override{"simulate.engine=" + o.engine});
  Scenario sc = load_scenario(o.scenario, overrides, models::check_scenario);
  std::ofstream result_file, trace_file;
  if (!o.output.empty()) result_file = open_output(o.output, "--output");
  if (!o.trace.empty()) trace_file = open_output(o.trace, "--trace");

  Prediction p = predict(std::move(sc));
  nlohmann::json j = results_to_json(p.results);
  if (o.json)
    out << j.dump(2) << "\n";
  else
    out << render_summary(p.results);
  if (!p.results.fits && !o.json)
    out << "\nwarning: the peak memory exceeds the GPU's capacity; run dtsim validate for the "
           "fix.\n";
  if (result_file.is_open()) result_file << j.dump(2) << "\n";
  if (trace_file.is_open())
    trace_file << chrome_trace(p.trace, p.job, p.scenario.cluster).dump() << "\n";
  if ((result_file.is_open() && !result_file) || (trace_file.is_open() && !trace_file))
    throw RuntimeError("writing the output files failed (disk full?)");
  return 0;
}

int run_validate(const ValidateOptions& o, std::ostream& out) {
  Scenario sc = load_scenario(o.scenario, to_overrides(o.overrides), models::check_scenario);
  Plan plan = plan_scenario(std::move(sc));
  const Scenario& s = plan.scenario;
  const auto& c = s.cluster;
  out << "scenario " << s.name << " (" << s.file << "): OK so far\n";
  out << "  cluster      " << c.nodes << " nodes x " << c.gpus_per_node << " " << c.gpu.name
      << " = " << c.total_gpus() << " GPUs\n";
  out << "  GPU          " << format_flop_rate(c.gpu.peak_for(s.training.precision)) << " dense "
      << to_string(s.training.precision) << ", " << format_bytes(c.gpu.memory) << ", "
      << format_bandwidth(c.gpu.memory_bandwidth) << " memory bandwidth\n";
  out << "  intra-node   " << c.intra_node.name << ": "
      << format_bandwidth(c.intra_node.per_gpu_bandwidth) << " per GPU per direction ("
      << format_bandwidth(c.intra_node.usable_bandwidth()) << " usable), "
      << format_duration(c.intra_node.latency) << " per hop\n";
  out << "  network      " << c.network.preset << " (" << to_string(c.network.kind) << ", "
      << to_string(c.network.topology) << "): " << c.network.nics_per_node << " x "
      << fmt("%.0f Gb/s", c.network.nic_bandwidth.value() * 8 / 1e9) << " per node, "
      << format_duration(c.network.latency) << ", oversubscription " << c.network.oversubscription
      << ":1\n";
  out << "  model        " << plan.model.name << ": "
      << fmt("%.3f B", plan.model.parameters() / 1e9) << " parameters, " << plan.model.layers.size()
      << " layers\n";
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
  out << "  placement    order " << to_string(par.placement_order)
      << " (innermost first); rank r runs on node r / " << c.gpus_per_node << ", GPU r % "
      << c.gpus_per_node << "; simulated ranks: " << plan.job.programs.size() << " of "
      << c.total_gpus() << " (the rest folded by symmetry)\n";
  if (par.pipeline.value > 1) {
    const RankLayout layout = layout_from_scenario(s);
    out << "    pipeline stages of replica 0 (tensor rank 0):";
    for (int stage = 0; stage < par.pipeline.value; ++stage)
      out << (stage ? " ->" : "") << " " << layout.rank(0, 0, stage, 0);
    out << "\n";
  }
  std::map<std::string, int> shown;
  for (const auto& g : plan.job.groups) {
    // One example of each kind of group that communicates (groups of one rank never do).
    if (g.ranks.size() <= 1 || shown.count(g.name)) continue;
    // The collectives this group runs, with the algorithm and protocol auto resolves them to.
    std::map<std::string, int> seen;
    for (const auto& p : plan.job.programs)
      for (const auto& st : p.streams)
        for (const auto& op : st.ops)
          if (const auto* col = std::get_if<CollectiveOp>(&op.body); col && col->group == g.id) {
            const ResolvedCollective r = resolve_collective(*col, g.ranks, c);
            const std::string how = std::string(to_string(col->kind)) + " " +
                                    format_bytes(col->bytes) + ": " +
                                    std::string(to_string(r.algorithm)) +
                                    (r.protocol == CollectiveProtocol::kAuto
                                         ? std::string()
                                         : "/" + std::string(to_string(r.protocol)));
            ++seen[how];
          }
    if (seen.empty()) continue;
    shown[g.name] = 1;
    std::set<int> nodes;
    for (Rank rank : g.ranks) nodes.insert(node_of(rank, c));
    out << "    group " << g.name << ": " << rank_list(g.ranks) << ", spans " << nodes.size()
        << " node(s)\n";
    for (const auto& [how, count] : seen) out << "      " << count << " x " << how << "\n";
  }
  // Memory: the analytic executor's timeline gives the peak and what is live at it.
  AnalyticExecutor exec;
  Trace t = exec.run(plan.job, c, 1);
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
    // What shrinks the category that overflows most.
    std::string remedy;
    if (static_cast<MemoryCategory>(largest) == MemoryCategory::kActivations)
      remedy = std::string(s.training.flash_attention ? "" : "Turn on training.flash_attention, ") +
               (s.training.flash_attention ? "Use" : "use") +
               " training.recompute: selective or full, a smaller training.micro_batch_size, or "
               "more tensor (with sequence_parallel), context or pipeline parallelism";
    else if (static_cast<MemoryCategory>(largest) == MemoryCategory::kBuffers)
      remedy = "Lower training.gradient_bucket or training.runtime_reserve";
    else
      remedy =
          "Shard the model state: parallelism.zero_stage (1 optimizer, 2 + gradients, 3 + "
          "weights), or more tensor or pipeline parallelism; or choose a GPU with more "
          "memory";
    throw InputError(Diagnostic{
        c.gpu_where.known() ? c.gpu_where : SourceLocation{s.file, 0, 0}, "memory",
        "the job needs " + format_bytes(Bytes(r.peak_bytes_per_gpu)) + " per GPU but " +
            c.gpu.name + " has " + format_bytes(Bytes(r.capacity_bytes)) + " (short by " +
            format_bytes(Bytes(r.peak_bytes_per_gpu - r.capacity_bytes)) +
            "); the largest category is " + cat + " at " +
            format_bytes(Bytes(r.per_category_bytes[largest])) + ". " + remedy});
  }
  out << "valid: " << s.name << " can run\n";
  return 0;
}

int run_collective(const CollectiveOptions& o, std::ostream& out) {
  auto overrides = to_overrides(o.overrides);
  if (!o.engine.empty()) overrides.push_back(Override{"simulate.engine=" + o.engine});
  Scenario sc = load_scenario(o.scenario, overrides, models::check_scenario);
  const ClusterConfig& c = sc.cluster;
  auto bad = [](const std::string& flag, const std::string& msg) {
    return InputError(Diagnostic{SourceLocation{}, flag, msg});
  };
  // Sizes.
  // One element up to 1 TiB: nccl-tests sweeps stop far below; larger is a typo.
  auto size = [&](const std::string& flag, const std::string& text) {
    auto p = parse_bytes(text);
    if (!p) throw bad(flag, p.error);
    if (p.value->value() < 1)
      throw bad(flag, "the size must be at least one element, found '" + text + "'");
    if (p.value->value() > 1099511627776.0)
      throw bad(flag, "'" + text + "' is larger than 1 TiB; check the unit");
    return *p.value;
  };
  std::vector<Bytes> sizes;
  if (!o.bytes.empty()) {
    if (!o.min_bytes.empty() || !o.max_bytes.empty())
      throw bad("--bytes", "give either --bytes or --min-bytes/--max-bytes, not both");
    sizes.push_back(size("--bytes", o.bytes));
  } else if (!o.min_bytes.empty() && !o.max_bytes.empty()) {
    const Bytes lo = size("--min-bytes", o.min_bytes), hi = size("--max-bytes", o.max_bytes);
    if (hi < lo) throw bad("--max-bytes", "--max-bytes is smaller than --min-bytes");
    for (double b = lo.value(); b <= hi.value() * (1 + 1e-12) && sizes.size() < 200; b *= o.factor)
      sizes.push_back(Bytes(std::round(b)));
  } else {
    throw bad("--bytes",
              "give --bytes SIZE, or --min-bytes and --max-bytes for a sweep (e.g. --bytes 1GiB)");
  }
  const DType dtype = *dtype_from_string(o.dtype);
  const double elem = bytes_per_element(dtype);
  for (Bytes b : sizes)
    if (std::fmod(b.value(), elem) != 0)
      throw bad(o.bytes.empty() ? "--min-bytes" : "--bytes",
                fmt("%.0f B", b.value()) + " is not a whole number of " + o.dtype +
                    " elements of " + fmt("%.0f", elem) + " B");
  const int ranks = o.ranks > 0 ? o.ranks : c.total_gpus();
  if (ranks > c.total_gpus())
    throw bad("--ranks", std::to_string(ranks) + " ranks requested but the cluster has " +
                             std::to_string(c.total_gpus()) +
                             " GPUs (cluster.nodes x cluster.gpus_per_node)");
  CollectiveAlgorithm algorithm =
      o.algorithm == "auto" ? CollectiveAlgorithm::kAuto : CollectiveAlgorithm::kRing;
  CollectiveProtocol protocol = CollectiveProtocol::kAuto;
  for (CollectiveProtocol p :
       {CollectiveProtocol::kLL, CollectiveProtocol::kLL128, CollectiveProtocol::kSimple})
    if (to_string(p) == o.protocol) protocol = p;
  if (protocol != CollectiveProtocol::kAuto && o.algorithm != "ring")
    throw bad("--protocol", "protocols shape the ring only so far; add --algorithm ring");
  if (o.algorithm == "halving-doubling" || o.algorithm == "hierarchical" || o.algorithm == "nvls" ||
      o.algorithm == "tree") {
    algorithm = o.algorithm == "hierarchical" ? CollectiveAlgorithm::kHierarchical
                : o.algorithm == "nvls"       ? CollectiveAlgorithm::kNvls
                : o.algorithm == "tree"       ? CollectiveAlgorithm::kTree
                                              : CollectiveAlgorithm::kHalvingDoubling;
    if (o.op != "all-reduce")
      throw bad("--algorithm",
                "'" + o.algorithm + "' is built for all-reduce only so far; use ring for " + o.op);
    if (algorithm == CollectiveAlgorithm::kNvls && !nvls_supported(c))
      throw bad("--algorithm",
                "NVLS needs NVSwitch with NVLink 4 or later (H100, H200, B200 nodes); "
                "this cluster's intra-node fabric is " +
                    c.intra_node.name);
    if (algorithm == CollectiveAlgorithm::kNvls && ranks > c.gpus_per_node)
      throw bad("--algorithm", "NVLS reduces inside one NVSwitch node: use --ranks " +
                                   std::to_string(c.gpus_per_node) +
                                   " or fewer (NVLS across nodes, NVLS-tree, is not built yet)");
  } else if (o.algorithm != "ring" && o.algorithm != "auto") {
    const bool planned = o.algorithm == "pat" || o.algorithm == "nvls-tree";
    throw bad("--algorithm",
              "'" + o.algorithm + (planned ? "' is not supported yet" : "' is not an algorithm") +
                  ": choose ring, tree, halving-doubling, hierarchical, nvls or auto (what "
                  "NCCL's cost model would pick among them); PAT and NVLS-tree are not built");
  }
  CollectiveKind kind = CollectiveKind::kAllReduce;
  for (CollectiveKind k :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kBroadcast, CollectiveKind::kReduce, CollectiveKind::kAllToAll,
        CollectiveKind::kBarrier})
    if (to_string(k) == o.op) kind = k;

  // One program runs the sizes back to back; the other members are folded by symmetry.
  Job job;
  job.world_size = c.total_gpus();
  Group g{0, "collective", {}};
  for (int r = 0; r < ranks; ++r) g.ranks.push_back(r);
  job.groups.push_back(g);
  Program p;
  p.rank = 0;
  const StreamId s = p.add_stream("comm");
  for (size_t i = 0; i < sizes.size(); ++i)
    p.append(s, CollectiveOp{kind, 0, sizes[i], dtype, algorithm, 0, protocol},
             Label{std::string(to_string(kind)) + "." + std::to_string(i), -1, -1, Phase::kOther});
  job.programs.push_back(std::move(p));
  auto executor = make_executor(sc);
  Trace t = executor->run(job, c, 1);
  std::vector<double> times(sizes.size(), 0);
  for (const auto& span : t.spans) times[span.op_index] = (span.end - span.start).value();

  const double bus_factor = bus_bandwidth_factor(kind, ranks);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double algbw = times[i] > 0 ? sizes[i].value() / times[i] / 1e9 : 0;
    const auto& op = std::get<CollectiveOp>(job.programs[0].streams[0].ops[i].body);
    const ResolvedCollective resolved = resolve_collective(op, g.ranks, c);
    const std::string used(to_string(resolved.algorithm));
    const std::string used_protocol(
        resolved.protocol == CollectiveProtocol::kAuto ? "none" : to_string(resolved.protocol));
    rows.push_back({{"op", o.op},
                    {"bytes", sizes[i].value()},
                    {"count", sizes[i].value() / elem},
                    {"dtype", o.dtype},
                    {"ranks", ranks},
                    {"algorithm", used},
                    {"protocol", used_protocol},
                    {"engine", t.engine},
                    {"time_s", times[i]},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", algbw * bus_factor}});
  }
  if (o.json) {
    out << (rows.size() == 1 ? rows[0] : nlohmann::json{{"results", rows}}).dump(2) << "\n";
    return 0;
  }
  out << "# dtsim collective: " << o.op << ", " << rows[0]["algorithm"].get<std::string>() << " ("
      << rows[0]["protocol"].get<std::string>() << " protocol at the first size), " << ranks
      << " ranks on " << c.nodes << " x " << c.gpus_per_node << " " << c.gpu.name << ", engine "
      << t.engine << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "#%14s %14s %7s %12s %10s %10s\n#%14s %14s %7s %12s %10s %10s\n",
                "size", "count", "type", "time", "algbw", "busbw", "(B)", "(elements)", "", "(us)",
                "(GB/s)", "(GB/s)");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, " %14.0f %14.0f %7s %12.2f %10.2f %10.2f\n",
                  r["bytes"].get<double>(), r["count"].get<double>(), o.dtype.c_str(),
                  r["time_s"].get<double>() * 1e6, r["algbw_GBps"].get<double>(),
                  r["busbw_GBps"].get<double>());
    out << buf;
  }
  return 0;
}

int run_catalog(const CatalogOptions& o, std::ostream& out) {
  if (o.what == "keys") {
    out << render_scenario_reference_markdown();
    return 0;
  }
  if (o.what == "hardware") {
    out << render_hardware_catalog_markdown();
    return 0;
  }
  if (o.markdown) {
    if (o.what == "gpus") out << render_gpu_catalog_markdown();
    if (o.what == "fabrics") out << render_fabric_catalog_markdown();
    if (o.what == "networks") out << render_network_catalog_markdown();
    if (o.what != "models") return 0;
  }
  char buf[256];
  if (o.what == "gpus") {
    std::snprintf(buf, sizeof buf, "%-16s %12s %12s %10s %14s\n", "name", "bf16 TFLOP/s",
                  "fp8 TFLOP/s", "memory GiB", "memory GB/s");
    out << buf;
    for (const auto& g : gpu_catalog()) {
      std::snprintf(buf, sizeof buf, "%-16s %12.1f %12s %10.1f %14.0f\n", g.name.c_str(),
                    g.peak_for(DType::kBf16).value() / 1e12,
                    g.supports(DType::kFp8)
                        ? fmt("%.1f", g.peak_for(DType::kFp8).value() / 1e12).c_str()
                        : "-",
                    g.memory.value() / (1024.0 * 1024 * 1024), g.memory_bandwidth.value() / 1e9);
      out << buf;
    }
  } else if (o.what == "fabrics") {
    std::snprintf(buf, sizeof buf, "%-26s %-7s %16s %11s %12s\n", "name", "kind", "GB/s per GPU",
                  "efficiency", "latency us");
    out << buf;
    for (const auto& f : fabric_catalog()) {
      std::snprintf(buf, sizeof buf, "%-26s %-7s %16.1f %11.3f %12.2f\n", f.name.c_str(),
                    std::string(to_string(f.kind)).c_str(), f.per_gpu_bandwidth.value() / 1e9,
                    f.protocol_efficiency, f.latency.value() * 1e6);
      out << buf;
    }
  } else if (o.what == "networks") {
    std::snprintf(buf, sizeof buf, "%-12s %-11s %10s %12s %11s\n", "name", "kind", "Gb/s",
                  "latency us", "efficiency");
    out << buf;
    for (const auto& n : network_catalog()) {
      std::snprintf(buf, sizeof buf, "%-12s %-11s %10.0f %12.2f %11.2f\n", n.name.c_str(),
                    std::string(to_string(n.kind)).c_str(), n.port_bandwidth.value() * 8 / 1e9,
                    n.latency.value() * 1e6, n.protocol_efficiency);
      out << buf;
    }
  } else if (o.what == "models") {
    std::snprintf(buf, sizeof buf, "%-16s %-10s %14s  %s\n", "name", "family", "parameters",
                  "source");
    out << buf;
    for (const auto& name : models::preset_names()) {
      const models::ModelSpec* spec = models::find_preset(name);
      ModelGraph g = models::build_model(*spec, models::BuildOptions{});
      const double p = g.parameters();
      const std::string count = p >= 1e9 ? fmt("%.3f B", p / 1e9) : fmt("%.1f M", p / 1e6);
      std::snprintf(buf, sizeof buf, "%-16s %-10s %14s  %s\n", name.c_str(),
                    std::string(models::to_string(spec->family)).c_str(), count.c_str(),
                    spec->source.substr(0, 60).c_str());
      out << buf;
    }
  }
  return 0;
}

}  // namespace dtsim::cli
