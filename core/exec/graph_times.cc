// Timing an activity graph without contention, and turning finish times into a Trace
// (core/exec/activity_graph.h).
#include <algorithm>
#include <array>
#include <map>

#include "core/base/error.h"
#include "core/collectives/cost_model.h"
#include "core/exec/activity_graph.h"

namespace dtsim {

Seconds schedule_time_without_contention(const CollectiveSchedule& s, const Cluster& cluster) {
  // Every flow waits only for flows before it (decompose appends a flow after those it waits
  // for: collective_schedule.h), so one pass over the flows gives each one's finish, and the
  // schedule ends at the latest finish of a flow nothing waits for, plus the trailing latency:
  // what add_schedule's graph takes alone. An empty schedule takes no time, as there.
  if (s.flows.empty()) return Seconds(0);
  std::vector<double> finish(s.flows.size(), 0.0);
  std::vector<char> has_successor(s.flows.size(), 0);
  for (size_t i = 0; i < s.flows.size(); ++i) {
    const Flow& f = s.flows[i];
    double start = 0;
    for (int a : f.after) {
      if (a < 0 || static_cast<size_t>(a) >= i)
        throw RuntimeError("collective schedule: flow " + std::to_string(i) + " waits for flow " +
                           std::to_string(a) + ", which is not before it");
      start = std::max(start, finish[static_cast<size_t>(a)]);
      has_successor[static_cast<size_t>(a)] = 1;
    }
    const double duration = f.is_delay() ? f.delay().value()
                                         : point_to_point_time(f.transfer().bytes, f.transfer().src,
                                                               f.transfer().dst, cluster)
                                               .value();
    finish[i] = start + duration;
  }
  double last = 0;
  for (size_t i = 0; i < s.flows.size(); ++i)
    if (!has_successor[i]) last = std::max(last, finish[i]);
  return Seconds(last + std::max(0.0, s.trailing_latency.value()));
}

std::vector<double> finish_times_without_contention(const ActivityGraph& g, const Cluster& cluster,
                                                    std::vector<double>* start_out) {
  std::vector<double> alone_time;
  for (const auto& s : g.alone)
    alone_time.push_back(schedule_time_without_contention(s, cluster).value());
  const size_t n = g.nodes.size();
  std::vector<double> start(n, 0.0), finish(n, 0.0);
  std::vector<int32_t> waiting(n);
  std::vector<int32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = g.nodes[i].predecessors;
    if (waiting[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  size_t done = 0;
  while (!ready.empty()) {
    const int32_t v = ready.back();
    ready.pop_back();
    const GraphNode& node = g.nodes[static_cast<size_t>(v)];
    double duration = 0;
    switch (node.kind) {
      case GraphNode::Kind::kJoin:
        break;
      case GraphNode::Kind::kCompute:
      case GraphNode::Kind::kDelay:
        duration = node.amount;
        break;
      case GraphNode::Kind::kFlow:
        duration = point_to_point_time(Bytes(node.amount), node.src, node.dst, cluster).value();
        break;
      case GraphNode::Kind::kAlone:
        duration = alone_time[node.alone_schedule()];
        break;
    }
    finish[static_cast<size_t>(v)] = start[static_cast<size_t>(v)] + duration;
    ++done;
    for (int32_t s : node.successors) {
      start[static_cast<size_t>(s)] =
          std::max(start[static_cast<size_t>(s)], finish[static_cast<size_t>(v)]);
      if (--waiting[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  if (done != n)
    throw RuntimeError("the program cannot finish: its ops wait on each other in a cycle (" +
                       std::to_string(n - done) + " activities never become ready)");
  if (start_out) *start_out = std::move(start);
  return finish;
}

Trace trace_from_times(const ActivityGraph& g, const Job& job, const std::vector<double>& finish,
                       const std::string& engine) {
  if (!g.segment_times.empty() || job.has_segments())
    throw std::logic_error("trace_from_times: a Job with segments; expand them before lowering");
  Trace t;
  t.engine = engine;
  t.notes = g.notes;
  t.iterations = g.iterations;
  t.iteration_end.assign(static_cast<size_t>(g.iterations), Seconds(0));
  struct MemEvent {
    double time;
    size_t order;
    MemoryCategory category;
    double bytes;
  };
  std::map<Rank, std::vector<MemEvent>> memory;
  std::vector<double> arrived;  // by op instance, when waits are tracked
  if (g.tracks_waits) {
    arrived.assign(g.ops.size(), 0.0);
    for (const auto& [instance, node] : g.member_predecessors)
      arrived[instance] = std::max(arrived[instance], finish[static_cast<size_t>(node)]);
  }
  t.spans.reserve(g.ops.size());
  const Program* p = nullptr;  // the program of the previous instance: instances come by program
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const OpInstance& inst = g.ops[k];
    if (p == nullptr || p->rank != inst.rank) p = job.program_for(inst.rank);
    const Op& op = p->streams[static_cast<size_t>(inst.stream)].ops[inst.op_index];
    const double start = finish[static_cast<size_t>(inst.begin)];
    const double end = finish[static_cast<size_t>(inst.end)];
    auto& it_end = t.iteration_end[static_cast<size_t>(inst.iteration)];
    it_end = std::max(it_end, Seconds(end));
    if (const auto* m = std::get_if<MemoryOp>(&op.body)) {
      // A Program's memory ops describe one step's state, and later steps reuse that memory: the
      // peak is the first step's (counting every step would add the weights once per step).
      if (inst.iteration == 0)
        memory[inst.rank].push_back(MemEvent{start, k, m->category, m->bytes.value()});
      continue;
    }
    SpanKind kind = SpanKind::kCompute;
    Bytes moved{0};
    if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
      kind = SpanKind::kCollective;
      moved = c->bytes;
    } else if (const auto* x = std::get_if<SendOp>(&op.body)) {
      kind = SpanKind::kSend;
      moved = x->bytes;
    } else if (const auto* x = std::get_if<RecvOp>(&op.body)) {
      kind = SpanKind::kRecv;
      moved = x->bytes;
    }
    t.spans.push_back(Span{inst.rank, inst.stream, inst.iteration, inst.op_index, kind,
                           Seconds(start), Seconds(end), moved});
    if (!arrived.empty() && kind == SpanKind::kCollective &&
        start - arrived[k] > kMinStragglerWaitSeconds)
      t.straggler_waits.push_back(Span{inst.rank, inst.stream, inst.iteration, inst.op_index, kind,
                                       Seconds(arrived[k]), Seconds(start), Bytes(0)});
  }
  // Iterations end in order even if a late op of one iteration outlives an early op of the next.
  for (size_t i = 1; i < t.iteration_end.size(); ++i)
    t.iteration_end[i] = std::max(t.iteration_end[i], t.iteration_end[i - 1]);
  for (auto& [rank, events] : memory) {
    std::stable_sort(events.begin(), events.end(), [](const MemEvent& a, const MemEvent& b) {
      return std::tie(a.time, a.order) < std::tie(b.time, b.order);
    });
    RankMemory rm;
    rm.rank = rank;
    std::array<Bytes, kMemoryCategories> live{};
    Bytes total{0};
    for (const auto& e : events) {
      live[static_cast<size_t>(e.category)] += Bytes(e.bytes);
      total += Bytes(e.bytes);
      if (total > rm.peak) {
        rm.peak = total;
        rm.at_peak = live;
      }
    }
    t.memory.push_back(rm);
  }
  return t;
}

}  // namespace dtsim
