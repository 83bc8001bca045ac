#include "driver/collective_benchmark.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/base/error.h"
#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/exec/engine_registry.h"
#include "core/hardware/network_topology.h"
#include "driver/predict.h"

namespace dtsim::driver {
namespace {

// Measured: dtsim collective --engine simgrid --op all-reduce --bytes 1GiB on 512 and 2048 nodes
// of 8 GPUs peaks at 78 and 284 MiB, and three sizes on 2048 nodes at 297 MiB
// (bench/results/large-inputs.md): about 17 kB a rank, rounded up.
constexpr double kFlowPlatformBytesPerRank = 18e3;

// A flag's word through its enum's name table (core/base/enum_table.h).
template <class E, size_t N>
E parse_flag(const EnumTable<E, N>& names, const std::string& flag, const std::string& text) {
  if (auto value = names.parse(text)) return *value;
  std::string expected;
  for (const auto& name : names.names()) expected += (expected.empty() ? "" : ", ") + name;
  throw InputError(
      Diagnostic{SourceLocation{}, flag, "expected one of " + expected + ", found '" + text + "'"});
}

InputError bad(const std::string& flag, const std::string& msg) {
  return InputError(Diagnostic{SourceLocation{}, flag, msg});
}

// nccl-tests' type names (src/common.cu test_typenames) that dtsim has a dtype for.
struct NcclTestsType {
  const char* name;
  DType dtype;
};
constexpr NcclTestsType kNcclTestsTypes[] = {{"float", DType::kFp32},
                                             {"half", DType::kFp16},
                                             {"bfloat16", DType::kBf16},
                                             {"f8e4m3", DType::kFp8}};

DType parse_dtype(const std::string& text) {
  if (auto d = kDTypeNames.parse(text)) return *d;
  for (const auto& t : kNcclTestsTypes)
    if (text == t.name) return t.dtype;
  std::string expected;
  for (const auto& name : kDTypeNames.names()) expected += name + ", ";
  throw bad("--dtype", "expected one of " + expected +
                           "or nccl-tests' float, half, bfloat16, f8e4m3; found '" + text + "'");
}

// A size as nccl-tests reads -b and -e (src/common.cu parsesize): a number of bytes, optionally
// followed by K, M or G (x 1024, 1024^2, 1024^3, either case).
Bytes parse_nccl_tests_size(const std::string& flag, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  std::string suffix(end);
  double unit = 1;
  if (suffix.size() == 1) {
    const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    unit = c == 'K' ? 1024.0 : c == 'M' ? 1048576.0 : c == 'G' ? 1073741824.0 : 0;
  }
  if (end == begin || suffix.size() > 1 || unit == 0 || !std::isfinite(number))
    throw bad(flag,
              "expected a number of bytes with an optional K, M or G suffix, as nccl-tests "
              "reads it (e.g. 8, 1M, 4G), found '" +
                  text + "'");
  if (number < 0) throw bad(flag, "the size must not be negative, found '" + text + "'");
  const double bytes = number * unit;
  if (bytes != std::floor(bytes)) throw bad(flag, "'" + text + "' is not a whole number of bytes");
  return Bytes(bytes);
}

// The sweep factor: a finite number above 1 (nccl-tests -f).
double parse_factor(const std::string& text) {
  char* end = nullptr;
  const double f = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(f) || f <= 1)
    throw bad("--factor",
              "expected a finite number greater than 1 (each size is the previous one "
              "times it), found '" +
                  text + "'");
  return f;
}

std::string algorithm_label(const CollectiveRow& r) {
  return r.protocol.empty() ? r.algorithm : r.algorithm + "/" + r.protocol;
}

// The sizes a request names: --bytes, or a sweep from the minimum to the maximum (nccl-tests'
// -b, -e and -f, or --min-bytes and --max-bytes); none for a barrier.
std::vector<Bytes> requested_sizes(const CollectiveRequest& q, CollectiveKind kind, DType dtype) {
  const double elem = bytes_per_element(dtype);
  // One element up to 1 TiB: nccl-tests sweeps stop far below; larger is a typo.
  auto checked = [&](const std::string& flag, const std::string& text, Bytes b) {
    if (b.value() < 1)
      throw bad(flag, "the size must be at least one element, found '" + text + "'");
    if (b.value() > 1099511627776.0)
      throw bad(flag, "'" + text + "' is larger than 1 TiB; check the unit");
    if (std::fmod(b.value(), elem) != 0)
      throw bad(flag, format_number("%.0f B", b.value()) + " is not a whole number of " + q.dtype +
                          " elements of " + format_number("%.0f", elem) + " B");
    return b;
  };
  auto size = [&](const std::string& flag, const std::string& text) {
    auto p = parse_bytes(text);
    if (!p) throw bad(flag, p.error);
    return checked(flag, text, *p.value);
  };
  auto nccl_size = [&](const std::string& flag, const std::string& text) {
    return checked(flag, text, parse_nccl_tests_size(flag, text));
  };
  if (!q.min_bytes.empty() && !q.min_bytes_nccl.empty())
    throw bad("-b", "give -b or --min-bytes, not both");
  if (!q.max_bytes.empty() && !q.max_bytes_nccl.empty())
    throw bad("-e", "give -e or --max-bytes, not both");
  const bool has_min = !q.min_bytes.empty() || !q.min_bytes_nccl.empty();
  const bool has_max = !q.max_bytes.empty() || !q.max_bytes_nccl.empty();
  std::vector<Bytes> sizes;
  if (kind == CollectiveKind::kBarrier) {
    if (!q.bytes.empty() || has_min || has_max)
      throw bad(q.bytes.empty() ? (has_min ? "--min-bytes" : "--max-bytes") : "--bytes",
                "a barrier moves no data: leave out the size flags");
    sizes.push_back(Bytes(0));
  } else if (!q.bytes.empty()) {
    if (has_min || has_max)
      throw bad("--bytes", "give either --bytes or --min-bytes/--max-bytes, not both");
    sizes.push_back(size("--bytes", q.bytes));
  } else if (has_min && has_max) {
    const Bytes lo =
        q.min_bytes.empty() ? nccl_size("-b", q.min_bytes_nccl) : size("--min-bytes", q.min_bytes);
    const Bytes hi =
        q.max_bytes.empty() ? nccl_size("-e", q.max_bytes_nccl) : size("--max-bytes", q.max_bytes);
    if (hi < lo)
      throw bad(q.max_bytes.empty() ? "-e" : "--max-bytes",
                "the sweep's maximum is smaller than its minimum");
    const double factor = q.factor.empty() ? 2.0 : parse_factor(q.factor);
    // Each size is the previous one times the factor, rounded to whole elements; sizes already
    // listed are skipped, and the sweep always ends at the maximum.
    const double lo_e = lo.value() / elem, hi_e = hi.value() / elem;
    double last = 0;
    for (double x = lo_e; x < hi_e; x *= factor) {
      const double whole = std::min(hi_e, std::round(x));
      if (whole > last) {
        sizes.push_back(Bytes(whole * elem));
        last = whole;
      }
      if (sizes.size() > kMaxSweepSizes)
        throw bad("--factor", "factor " + q.factor + " gives more than " +
                                  std::to_string(kMaxSweepSizes) +
                                  " sizes between the minimum and the maximum; use a larger one");
    }
    if (last < hi_e) sizes.push_back(hi);
  } else {
    throw bad("--bytes",
              "give --bytes SIZE, or --min-bytes and --max-bytes for a sweep (e.g. --bytes 1GiB)");
  }
  if (!q.factor.empty() && sizes.size() == 1 && !(has_min && has_max))
    throw bad("--factor", "the factor steps a sweep: give it with --min-bytes and --max-bytes");
  return sizes;
}

// The algorithm and protocol a request names, checked against the collective and the cluster.
struct AlgorithmChoice {
  std::optional<CollectiveAlgorithm> named;  // as the flag names it; none if not a name
  CollectiveAlgorithm algorithm;
  CollectiveProtocol protocol;
  bool textbook;  // --protocol none: the alpha-beta ring without NCCL's costs
};

AlgorithmChoice requested_algorithm(const CollectiveRequest& q, const Cluster& c,
                                    CollectiveKind kind, int ranks) {
  const std::optional<CollectiveAlgorithm> named = kCollectiveAlgorithmNames.parse(q.algorithm);
  const CollectiveAlgorithm algorithm = named.value_or(CollectiveAlgorithm::kRing);
  // --protocol auto runs a named NCCL algorithm (ring, tree, NVLS) as auto would run it, so
  // auto is never slower than an algorithm the user can name; --protocol none asks for the
  // textbook alpha-beta ring, without NCCL's per-call and protocol costs (auto never picks it).
  const bool textbook = q.protocol == "none";
  if (q.protocol == "fastest")
    throw bad("--protocol", "'fastest' is what auto means here: use --protocol auto");
  CollectiveProtocol protocol =
      textbook ? CollectiveProtocol::kAuto
               : parse_flag(kCollectiveProtocolNames, "--protocol", q.protocol);
  if ((textbook || protocol != CollectiveProtocol::kAuto) && named != CollectiveAlgorithm::kRing &&
      named != CollectiveAlgorithm::kTree)
    throw bad("--protocol",
              "protocols shape the ring and the tree only; add --algorithm ring or tree");
  if (!textbook && protocol == CollectiveProtocol::kAuto &&
      (algorithm == CollectiveAlgorithm::kRing || algorithm == CollectiveAlgorithm::kTree ||
       algorithm == CollectiveAlgorithm::kNvls || algorithm == CollectiveAlgorithm::kNvlsTree ||
       algorithm == CollectiveAlgorithm::kCollNet))
    protocol = CollectiveProtocol::kFastest;
  if (algorithm == CollectiveAlgorithm::kPat) {
    if (kind != CollectiveKind::kAllGather && kind != CollectiveKind::kReduceScatter)
      throw bad("--algorithm",
                "PAT runs all-gather and reduce-scatter only; use ring or auto for " + q.op);
    if (c.gpus_per_node != 1 || ranks < 2)
      throw bad("--algorithm",
                "PAT runs with one GPU per node, as NCCL runs it: set cluster.gpus_per_node=1 and "
                "--ranks 2 or more");
    if (!nccl_runs_collectives(c) || network_topology(c).cabled_nodes(c))
      throw bad("--algorithm",
                "PAT is NCCL's: not on this cluster, whose collectives NCCL does "
                "not run over a switched network");
  } else if (named && algorithm != CollectiveAlgorithm::kAuto &&
             algorithm != CollectiveAlgorithm::kRing) {
    if (kind != CollectiveKind::kAllReduce)
      throw bad("--algorithm",
                "'" + q.algorithm + "' is built for all-reduce only so far; use ring for " + q.op);
    const bool nvls_tree = algorithm == CollectiveAlgorithm::kNvlsTree;
    if ((algorithm == CollectiveAlgorithm::kNvls || nvls_tree) && !nvls_supported(c))
      throw bad("--algorithm", std::string(nvls_tree ? "NVLS-tree" : "NVLS") +
                                   " needs NVSwitch with NVLink 4 or later (H100, H200, B200 "
                                   "nodes); this cluster's intra-node fabric is " +
                                   c.intra_node.name);
    if (algorithm == CollectiveAlgorithm::kNvls && ranks > c.gpus_per_node)
      throw bad("--algorithm", "NVLS reduces inside one NVSwitch node: use --ranks " +
                                   std::to_string(c.gpus_per_node) +
                                   " or fewer, or nvls-tree across nodes");
    if ((algorithm == CollectiveAlgorithm::kNvls || nvls_tree) && c.gpus_per_node < 2)
      throw bad("--algorithm",
                "NVLS reduces through the NVSwitch of a node with several GPUs of the group; with "
                "one GPU a node NCCL turns it off (nccl src/transport/nvls.cc): use ring or auto");
    if (nvls_tree && ranks <= c.gpus_per_node)
      throw bad("--algorithm",
                "NVLS-tree runs across nodes: use nvls inside one node, or --ranks above " +
                    std::to_string(c.gpus_per_node));
    if (nvls_tree && ranks % c.gpus_per_node != 0)
      throw bad("--algorithm", "NVLS-tree needs whole nodes: --ranks a multiple of " +
                                   std::to_string(c.gpus_per_node));
    if (algorithm == CollectiveAlgorithm::kCollNet) {
      if (!c.network.in_network_reduction)
        throw bad("--algorithm",
                  "CollNet needs switches that reduce in the network: set "
                  "cluster.network.in_network_reduction: true (InfiniBand with SHARP)");
      if (c.intra_node.kind != FabricKind::kSwitch)
        throw bad("--algorithm",
                  "CollNet needs NVSwitch inside the nodes (NCCL runs it nowhere else); this "
                  "cluster's intra-node fabric is " +
                      c.intra_node.name);
      if (ranks <= c.gpus_per_node || ranks % c.gpus_per_node != 0)
        throw bad("--algorithm", "CollNet runs across whole nodes: --ranks a multiple of " +
                                     std::to_string(c.gpus_per_node) + " above " +
                                     std::to_string(c.gpus_per_node));
    }
  } else if (!named) {
    throw bad("--algorithm",
              "'" + q.algorithm +
                  "' is not an algorithm: choose ring, tree, halving-doubling, hierarchical, nvls, "
                  "nvls-tree, collnet, pat or auto (the fastest way NCCL could run it, as dtsim "
                  "times it)");
  }

  return AlgorithmChoice{named, algorithm, protocol, textbook};
}

// Why busbw falls from the previous size to this one.
std::string busbw_dip_note(const CollectiveRow& prev, const CollectiveRow& row,
                           CollectiveAlgorithm resolved, const std::string& engine) {
  if (algorithm_label(prev) != algorithm_label(row))
    return "busbw dips: switches from " + algorithm_label(prev) + " to " + algorithm_label(row) +
           " here";
  if (resolved == CollectiveAlgorithm::kTree)
    return "busbw dips: the tree's pipeline chunk count changes with size (NCCL's tree chunking)";
  if (engine == "analytic")
    return "busbw dips: the same algorithm's closed form grows faster than the size here";
  return "busbw dips: the " + engine +
         " engine's flow-level timing of this size (link sharing and per-flow latency) departs "
         "from the closed form";
}

}  // namespace

std::string nccl_tests_type_name(DType dtype) {
  if (dtype == DType::kTf32) return "float";  // stored as fp32
  for (const auto& t : kNcclTestsTypes)
    if (t.dtype == dtype) return t.name;
  return std::string(to_string(dtype));
}

CollectiveBenchmark run_collective_benchmark(const Scenario& sc, const CollectiveRequest& q) {
  // The benchmark folds every member onto one program by symmetry, which a slowed GPU or NIC
  // would break: refuse rather than time the nominal cluster under the scenario's name.
  if (!sc.stragglers.entries.empty())
    throw InputError(Diagnostic{sc.stragglers.entries.front().where, "stragglers",
                                "dtsim collective times the nominal cluster and cannot apply "
                                "stragglers; remove them here (dtsim simulate applies them to a "
                                "training step)"});

  const Cluster c(sc.cluster);
  const CollectiveKind kind = parse_flag(kCollectiveKindNames, "--op", q.op);
  const DType dtype = parse_dtype(q.dtype);
  const double elem = bytes_per_element(dtype);
  const std::vector<Bytes> sizes = requested_sizes(q, kind, dtype);
  // nccl-tests' -o names (src/common.cu, test_opnames): sum prod max min avg; "all" runs each in
  // turn there, which here would be the same rows five times.
  static const std::vector<std::string> kRedops = {"sum", "prod", "max", "min", "avg"};
  if (std::find(kRedops.begin(), kRedops.end(), q.redop) == kRedops.end())
    throw bad("-o", "expected one of sum, prod, max, min, avg, found '" + printable(q.redop, 40) +
                        "' (each takes the same time in NCCL's kernels; run one)");
  const int ranks = q.ranks > 0 ? q.ranks : c.total_gpus();
  if (ranks > c.total_gpus())
    throw bad("--ranks", std::to_string(ranks) + " ranks requested but the cluster has " +
                             std::to_string(c.total_gpus()) +
                             " GPUs (cluster.nodes x cluster.gpus_per_node)");
  // One rank moves nothing: a time of zero would read as a measurement. nccl-tests' -g 1 is one
  // GPU per process, and its rank count comes from mpirun, which dtsim does not see.
  if (ranks < 2)
    throw bad(q.ranks > 0 ? "--ranks/-g" : "cluster",
              q.ranks > 0
                  ? "a collective over 1 rank moves nothing. nccl-tests' -g is GPUs per process "
                    "(mpirun -np 16 ... -g 1 is 16 ranks); give the total: --ranks N or -g N, "
                    "2 to " +
                        std::to_string(c.total_gpus())
                  : "the cluster has 1 GPU, and a collective over 1 rank moves nothing; use more "
                    "GPUs (cluster.nodes, cluster.gpus_per_node)");
  const AlgorithmChoice choice = requested_algorithm(q, c, kind, ranks);
  const CollectiveAlgorithm algorithm = choice.algorithm;
  const CollectiveProtocol protocol = choice.protocol;

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
  auto executor = make_engine(sc.simulate.engine, engine_settings(sc));
  // The memory a run would hold, before it holds it, as simulate's estimate counts it
  // (driver/predict.h): an engine that turns a collective into flows holds its cost per member
  // per size (an all-to-all's member sends to every other member), and a platform of hosts and
  // links for every rank whatever the sizes (kFlowPlatformBytesPerRank).
  const double flows_per_member = kind == CollectiveKind::kAllToAll ? ranks - 1.0 : 1.0;
  const double platform_bytes =
      executor->bytes_per_collective_member() > 0 ? kFlowPlatformBytesPerRank * ranks : 0.0;
  const double run_bytes = kBaseRunBytes + platform_bytes +
                           static_cast<double>(sizes.size()) * ranks * flows_per_member *
                               executor->bytes_per_collective_member();
  if (run_bytes > kDefaultMaxMemoryBytes)
    throw bad(q.ranks > 0 ? "--ranks/-g" : "cluster",
              std::string(to_string(kind)) + " over " + std::to_string(ranks) + " ranks, " +
                  std::to_string(sizes.size()) + " size(s), on the " + sc.simulate.engine +
                  " engine would need about " + format_bytes(Bytes(run_bytes)) +
                  " of memory, more than " + format_bytes(Bytes(kDefaultMaxMemoryBytes)) +
                  "; use --engine analytic (no flows), fewer ranks (--ranks) or fewer sizes");
  Trace t = executor->run(job, c, RunOptions{});
  std::vector<double> times(sizes.size(), 0);
  for (const auto& span : t.spans) times[span.op_index] = (span.end - span.start).value();

  CollectiveBenchmark result;
  result.ranks = ranks;
  result.engine = t.engine;
  result.op = std::string(to_string(kind));
  result.dtype = std::string(to_string(dtype));
  result.type_name = nccl_tests_type_name(dtype);
  const bool reduces = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduce ||
                       kind == CollectiveKind::kReduceScatter;
  result.redop = reduces ? q.redop : "none";
  result.root = kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce ? 0 : -1;
  const double bus_factor = bus_bandwidth_factor(kind, ranks);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double algbw = times[i] > 0 ? sizes[i].value() / times[i] / 1e9 : 0;
    const auto& op = std::get<CollectiveOp>(job.programs[0].streams[0].ops[i].body);
    const ResolvedCollective resolved = resolve_collective(op, g.ranks, c);
    CollectiveRow row;
    row.bytes = sizes[i];
    row.count = sizes[i].value() / elem;
    row.algorithm = std::string(to_string(resolved.algorithm));
    if (resolved.protocol != CollectiveProtocol::kAuto)
      row.protocol = std::string(to_string(resolved.protocol));
    row.time_s = times[i];
    row.algbw_GBps = algbw;
    row.busbw_GBps = algbw * bus_factor;
    if (const auto nccl = nccl_reference_choice(op, g.ranks, c)) {
      row.nccl_algorithm = std::string(to_string(nccl->algorithm));
      row.nccl_protocol = std::string(to_string(nccl->protocol));
      row.nccl_time_s = nccl->time_us * 1e-6;
    }
    // Why busbw falls, where it does (a size is never slower per byte without a stated reason).
    if (i > 0 && row.busbw_GBps < result.rows.back().busbw_GBps)
      row.note = busbw_dip_note(result.rows.back(), row, resolved.algorithm, result.engine);
    // An algorithm auto never chooses is said to be one, so that a faster time here is read as
    // what it is: a textbook model without NCCL's per-call and protocol costs.
    const bool reference_model =
        choice.textbook || ((resolved.algorithm == CollectiveAlgorithm::kHalvingDoubling ||
                             resolved.algorithm == CollectiveAlgorithm::kHierarchical) &&
                            !torus_all_reduce_plan(g.ranks, c));
    if (row.note.empty() && reference_model && choice.named != CollectiveAlgorithm::kAuto)
      row.note =
          "textbook alpha-beta model without NCCL's per-call and protocol costs; auto "
          "does not choose it";
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace dtsim::driver
