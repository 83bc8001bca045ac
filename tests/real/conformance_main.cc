// Conformance of the executors (issue acceptance: one Program through the analytic, SimGrid and
// CPU-real executors): launched as `mpirun -np N real_conformance SCENARIO`, every rank runs its
// Program on the CPU back end; rank 0 then runs the same unfolded Job through the analytic and
// the SimGrid engines and checks, per rank, that
// - every stream ran the same ops in the same order in every iteration (memory ops have no span),
// - the collectives on each group came in the same sequence with the same kind and bytes moved,
// - the sends and receives to each peer came in the same sequence with the same tag and bytes.
// Exit 0 when all three agree exactly, 1 with the first difference otherwise.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/error.h"
#include "core/exec/engine_registry.h"
#include "driver/real.h"

namespace {

using namespace dtsim;

struct Signature {
  // (rank, stream, iteration) -> op indices in start order
  std::map<std::tuple<Rank, StreamId, int>, std::vector<size_t>> stream_order;
  // (rank, group) -> (iteration, kind, bytes moved) in start order
  std::map<std::pair<Rank, GroupId>, std::vector<std::tuple<int, int, double>>> collectives;
  // (rank, peer, is_send) -> (iteration, tag, bytes moved) in start order
  std::map<std::tuple<Rank, Rank, bool>, std::vector<std::tuple<int, int, double>>> messages;
};

Signature signature(const Trace& trace, const Job& job) {
  std::vector<Span> spans = trace.spans;
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.iteration, a.start, a.op_index) < std::tie(b.iteration, b.start, b.op_index);
  });
  Signature s;
  for (const Span& span : spans) {
    s.stream_order[{span.rank, span.stream, span.iteration}].push_back(span.op_index);
    const Op& op = job.program_for(span.rank)
                       ->streams.at(static_cast<size_t>(span.stream))
                       .ops.at(span.op_index);
    if (const auto* c = std::get_if<CollectiveOp>(&op.body))
      s.collectives[{span.rank, c->group}].emplace_back(span.iteration, static_cast<int>(c->kind),
                                                        span.moved.value());
    else if (const auto* x = std::get_if<SendOp>(&op.body))
      s.messages[{span.rank, x->peer, true}].emplace_back(span.iteration, x->tag,
                                                          span.moved.value());
    else if (const auto* x = std::get_if<RecvOp>(&op.body))
      s.messages[{span.rank, x->peer, false}].emplace_back(span.iteration, x->tag,
                                                           span.moved.value());
  }
  // Within a stream, ops run in order: sort by index must change nothing.
  for (auto& [key, order] : s.stream_order)
    if (!std::is_sorted(order.begin(), order.end()))
      throw RuntimeError(trace.engine + ": rank " + std::to_string(std::get<0>(key)) + " stream " +
                         std::to_string(std::get<1>(key)) + " ran its ops out of order");
  return s;
}

template <class Map>
bool same(const Map& a, const Map& b, const std::string& what, const std::string& ea,
          const std::string& eb) {
  if (a == b) return true;
  for (const auto& [key, va] : a) {
    const auto it = b.find(key);
    if (it == b.end()) {
      std::printf("FAIL: %s: an entry of %s is missing from %s\n", what.c_str(), ea.c_str(),
                  eb.c_str());
      return false;
    }
    if (it->second != va) {
      std::printf("FAIL: %s differ between %s (%zu entries) and %s (%zu entries)\n", what.c_str(),
                  ea.c_str(), va.size(), eb.c_str(), it->second.size());
      return false;
    }
  }
  std::printf("FAIL: %s: %s has entries %s lacks\n", what.c_str(), eb.c_str(), ea.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpirun -np N real_conformance SCENARIO\n");
    return 2;
  }
  try {
    driver::MeasureOptions options;
    options.iterations = 2;
    options.real.warmup_iterations = 1;
    options.real.timeout = Seconds(120);
    driver::Measurement m = driver::measure(argv[1], {}, options);
    if (!m.root) return 0;
    RunOptions run;
    run.iterations = options.iterations;
    std::vector<std::pair<std::string, Trace>> traces = {{m.trace.engine, m.trace}};
    for (const char* engine : {"analytic", "simgrid"})
      traces.emplace_back(engine, make_engine(engine, engine_settings(m.scenario))->run(m.job, m.cluster, run));
    std::vector<Signature> sigs;
    for (const auto& [name, t] : traces) sigs.push_back(signature(t, m.job));
    bool ok = true;
    for (size_t i = 1; i < sigs.size(); ++i) {
      const std::string& a = traces[0].first;
      const std::string& b = traces[i].first;
      ok &= same(sigs[0].stream_order, sigs[i].stream_order, "per-stream op orders", a, b);
      ok &= same(sigs[0].collectives, sigs[i].collectives, "collective sequences", a, b);
      ok &= same(sigs[0].messages, sigs[i].messages, "send/recv sequences", a, b);
    }
    size_t ops = 0, collectives = 0, messages = 0;
    for (const auto& [k, v] : sigs[0].stream_order) ops += v.size();
    for (const auto& [k, v] : sigs[0].collectives) collectives += v.size();
    for (const auto& [k, v] : sigs[0].messages) messages += v.size();
    std::printf(
        "%s: %d ranks, %d iterations: %zu timed ops, %zu collective calls, %zu sends and "
        "receives; %s across cpu-mpi, analytic and simgrid\n",
        argv[1], m.job.world_size, run.iterations, ops, collectives, messages,
        ok ? "identical" : "NOT identical");
    if (ops == 0 || (collectives == 0 && messages == 0)) {
      std::printf("FAIL: the scenario exercises no communication, so the check proves nothing\n");
      return 1;
    }
    return ok ? 0 : 1;
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.render().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
