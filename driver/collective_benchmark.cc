#include "driver/collective_benchmark.h"

#include <cmath>
#include <cstdio>

#include "core/base/error.h"
#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/exec/engine_registry.h"

namespace dtsim::driver {
namespace {

// A flag's word through its enum's name table (core/base/enum_table.h).
template <class E, size_t N>
E parse_flag(const EnumTable<E, N>& names, const std::string& flag, const std::string& text) {
  if (auto value = names.parse(text)) return *value;
  std::string expected;
  for (const auto& name : names.names()) expected += (expected.empty() ? "" : ", ") + name;
  throw InputError(
      Diagnostic{SourceLocation{}, flag, "expected one of " + expected + ", found '" + text + "'"});
}

}  // namespace

CollectiveBenchmark run_collective_benchmark(const Scenario& sc, const CollectiveRequest& q) {
  const Cluster c(sc.cluster);
  auto bad = [](const std::string& flag, const std::string& msg) {
    return InputError(Diagnostic{SourceLocation{}, flag, msg});
  };
  // Sizes.
  // One element up to 1 TiB: nccl-tests sweeps stop far below; larger is a typq.
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
  if (!q.bytes.empty()) {
    if (!q.min_bytes.empty() || !q.max_bytes.empty())
      throw bad("--bytes", "give either --bytes or --min-bytes/--max-bytes, not both");
    sizes.push_back(size("--bytes", q.bytes));
  } else if (!q.min_bytes.empty() && !q.max_bytes.empty()) {
    const Bytes lo = size("--min-bytes", q.min_bytes), hi = size("--max-bytes", q.max_bytes);
    if (hi < lo) throw bad("--max-bytes", "--max-bytes is smaller than --min-bytes");
    for (double b = lo.value(); b <= hi.value() * (1 + 1e-12) && sizes.size() < 200; b *= q.factor)
      sizes.push_back(Bytes(std::round(b)));
  } else {
    throw bad("--bytes",
              "give --bytes SIZE, or --min-bytes and --max-bytes for a sweep (e.g. --bytes 1GiB)");
  }
  const DType dtype = parse_flag(kDTypeNames, "--dtype", q.dtype);
  const double elem = bytes_per_element(dtype);
  for (Bytes b : sizes)
    if (std::fmod(b.value(), elem) != 0)
      throw bad(q.bytes.empty() ? "--min-bytes" : "--bytes",
                format_number("%.0f B", b.value()) + " is not a whole number of " + q.dtype +
                    " elements of " + format_number("%.0f", elem) + " B");
  const int ranks = q.ranks > 0 ? q.ranks : c.total_gpus();
  if (ranks > c.total_gpus())
    throw bad("--ranks", std::to_string(ranks) + " ranks requested but the cluster has " +
                             std::to_string(c.total_gpus()) +
                             " GPUs (cluster.nodes x cluster.gpus_per_node)");
  const std::optional<CollectiveAlgorithm> named = kCollectiveAlgorithmNames.parse(q.algorithm);
  const CollectiveAlgorithm algorithm = named.value_or(CollectiveAlgorithm::kRing);
  const CollectiveProtocol protocol =
      parse_flag(kCollectiveProtocolNames, "--protocol", q.protocol);
  if (protocol != CollectiveProtocol::kAuto && named != CollectiveAlgorithm::kRing)
    throw bad("--protocol", "protocols shape the ring only so far; add --algorithm ring");
  const CollectiveKind kind = parse_flag(kCollectiveKindNames, "--op", q.op);
  if (named && algorithm != CollectiveAlgorithm::kAuto && algorithm != CollectiveAlgorithm::kRing) {
    if (kind != CollectiveKind::kAllReduce)
      throw bad("--algorithm",
                "'" + q.algorithm + "' is built for all-reduce only so far; use ring for " + q.op);
    if (algorithm == CollectiveAlgorithm::kNvls && !nvls_supported(c))
      throw bad("--algorithm",
                "NVLS needs NVSwitch with NVLink 4 or later (H100, H200, B200 nodes); "
                "this cluster's intra-node fabric is " +
                    c.intra_node.name);
    if (algorithm == CollectiveAlgorithm::kNvls && ranks > c.gpus_per_node)
      throw bad("--algorithm", "NVLS reduces inside one NVSwitch node: use --ranks " +
                                   std::to_string(c.gpus_per_node) +
                                   " or fewer (NVLS across nodes, NVLS-tree, is not built yet)");
  } else if (!named) {
    const bool planned = q.algorithm == "pat" || q.algorithm == "nvls-tree";
    throw bad("--algorithm",
              "'" + q.algorithm + (planned ? "' is not supported yet" : "' is not an algorithm") +
                  ": choose ring, tree, halving-doubling, hierarchical, nvls or auto (what "
                  "NCCL's cost model would pick among them); PAT and NVLS-tree are not built");
  }

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
  auto executor = make_engine(sc.simulate.engine, sc);
  Trace t = executor->run(job, c, RunOptions{});
  std::vector<double> times(sizes.size(), 0);
  for (const auto& span : t.spans) times[span.op_index] = (span.end - span.start).value();

  CollectiveBenchmark result;
  result.ranks = ranks;
  result.engine = t.engine;
  const double bus_factor = bus_bandwidth_factor(kind, ranks);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double algbw = times[i] > 0 ? sizes[i].value() / times[i] / 1e9 : 0;
    const auto& op = std::get<CollectiveOp>(job.programs[0].streams[0].ops[i].body);
    const ResolvedCollective resolved = resolve_collective(op, g.ranks, c);
    CollectiveRow row;
    row.bytes = sizes[i];
    row.count = sizes[i].value() / elem;
    row.algorithm = std::string(to_string(resolved.algorithm));
    row.protocol = resolved.protocol == CollectiveProtocol::kAuto
                       ? "none"
                       : std::string(to_string(resolved.protocol));
    row.time_s = times[i];
    row.algbw_GBps = algbw;
    row.busbw_GBps = algbw * bus_factor;
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace dtsim::driver
