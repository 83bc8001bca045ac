// Lowering a Job to an activity graph: the one form every timing engine executes.
//
// Contract:
// - Each op instance (op x iteration x simulated rank) becomes a zero-time `begin` join that
//   waits for the op before it on its stream (across iterations too) and for the events it
//   waits on, then a body, then an `end` node. A span runs from begin's finish to end's finish.
// - Bodies: compute -> one Compute node (its duration at the GPU's nominal speed, from the
//   roofline in core/collectives/cost_model.h); memory -> nothing (the begin join is the moment);
//   collective -> shared by every simulated member of the group (matched by the order of
//   collectives on that group), with a body chosen by CollectiveBody: a closed-form Delay
//   (the analytic engine) or the flows of core/collectives/collective_schedule.h (the SimGrid
//   engine); send/recv -> a Flow between the pair, shared by both sides (rendezvous). Flow nodes
//   name their ends as typed endpoints (core/hardware/endpoint.h): GPUs, or a node's switch for
//   NVLS.
// - Collectives alone on their links (`alone_collectives`, bodies with flows: collective or chunk
//   fidelity): a collective whose flows can never share a link with a flow that runs at the same
//   time is one kAlone node instead of its flows, and the engine times its schedule
//   (ActivityGraph::alone, at the body's fidelity) once, alone. That is exact under a
//   link-sharing model in which a flow's rate depends only on the flows it shares a link with
//   (max-min sharing, as SimGrid's). The proof is per group and conservative (alone_groups() in
//   activity_graph.cc): the links are the GPUs' fabric links (fabric_link_users) and the
//   inter-node network taken as one link, and every other collective or transfer that crosses a
//   link the group's flows use is ordered after or before each of its collectives by one
//   simulated rank's streams and event waits.
// - Engines assign start and finish times to nodes; trace_from_times() turns them into the
//   Trace, including each rank's memory timeline (of the first step: later steps reuse its memory).
// - Problems in the Job (an event nobody records, a collective some members never reach, a
//   cycle) raise RuntimeError naming the op, never a hang.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/exec/executor.h"
#include "core/hardware/endpoint.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"

namespace dtsim {

enum class CollectiveBody { kClosedForm, kChunkFlows, kCollectiveFlows };

// A node's successors: most nodes have one or two, kept inside the node; more go to the heap.
// Graphs of millions of nodes would otherwise allocate once per node.
class NodeIds {
 public:
  NodeIds() = default;
  NodeIds(const NodeIds& o) { *this = o; }
  NodeIds(NodeIds&& o) noexcept { *this = std::move(o); }
  NodeIds& operator=(const NodeIds& o) {
    if (this != &o) {
      clear();
      reserve(o.size_);
      for (int32_t v : o) push_back(v);
    }
    return *this;
  }
  NodeIds& operator=(NodeIds&& o) noexcept {
    if (this != &o) {
      clear();
      if (o.heap_) {
        heap_ = o.heap_;
        capacity_ = o.capacity_;
        size_ = o.size_;
        o.heap_ = nullptr;
        o.capacity_ = kInline;
        o.size_ = 0;
      } else {
        for (int32_t v : o) push_back(v);
      }
    }
    return *this;
  }
  ~NodeIds() { delete[] heap_; }

  void push_back(int32_t v) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data()[size_++] = v;
  }
  void reserve(uint32_t n) {
    if (n <= capacity_) return;
    auto* grown = new int32_t[n];
    std::copy(begin(), end(), grown);
    delete[] heap_;
    heap_ = grown;
    capacity_ = n;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t operator[](size_t i) const { return data()[i]; }
  const int32_t* begin() const { return data(); }
  const int32_t* end() const { return data() + size_; }

 private:
  static constexpr uint32_t kInline = 2;
  int32_t* data() { return heap_ ? heap_ : inline_; }
  const int32_t* data() const { return heap_ ? heap_ : inline_; }
  void clear() {
    delete[] heap_;
    heap_ = nullptr;
    capacity_ = kInline;
    size_ = 0;
  }
  int32_t* heap_ = nullptr;
  uint32_t size_ = 0, capacity_ = kInline;
  int32_t inline_[kInline] = {};
};

struct GraphNode {
  enum class Kind : uint8_t { kJoin, kCompute, kFlow, kDelay, kAlone };
  Kind kind = Kind::kJoin;
  int32_t predecessors = 0;
  Endpoint src;  // compute: its GPU; flow: the source (a GPU or, for NVLS, a node's switch)
  Endpoint dst;  // flow: the destination
  double amount =
      0;  // compute and delay: seconds; flow: bytes; alone: index in ActivityGraph::alone
  NodeIds successors;

  static GraphNode compute(Rank gpu, Seconds duration) {
    return GraphNode{Kind::kCompute, 0, Endpoint::gpu(gpu), {}, duration.value(), {}};
  }
  static GraphNode flow(Endpoint src, Endpoint dst, Bytes bytes) {
    return GraphNode{Kind::kFlow, 0, src, dst, bytes.value(), {}};
  }
  static GraphNode delay(Seconds duration) {
    return GraphNode{Kind::kDelay, 0, {}, {}, duration.value(), {}};
  }
  // A collective alone on its links: the schedule ActivityGraph::alone[schedule] takes its time.
  static GraphNode alone(size_t schedule) {
    return GraphNode{Kind::kAlone, 0, {}, {}, static_cast<double>(schedule), {}};
  }
  size_t alone_schedule() const { return static_cast<size_t>(amount); }
  // The GPU a compute node runs on.
  Rank gpu() const { return src.rank(); }
};

struct OpInstance {
  Rank rank = 0;
  StreamId stream = 0;
  int iteration = 0;
  uint32_t op_index = 0;
  int32_t begin = -1;
  int32_t end = -1;
};

struct ActivityGraph {
  std::vector<GraphNode> nodes;
  std::vector<OpInstance> ops;
  int iterations = 1;
  // With waits tracked: (op instance, node) for each node a collective member waits for before
  // the collective (its stream predecessor, the events it waits on). The member arrives when the
  // last of them finishes; the collective starts when its last member arrives. Kept beside the
  // graph, not as join nodes, so that tracking adds no work to an engine.
  bool tracks_waits = false;
  std::vector<std::pair<uint32_t, int32_t>> member_predecessors;
  // The schedules of kAlone nodes, one per distinct collective (group, kind, bytes, ...).
  std::vector<CollectiveSchedule> alone;
  // Every simulated rank's compute nodes come from one stream, so its GPU never runs two kernels
  // at once: a run of its kernels and alone collectives may be timed as one span of its GPU.
  bool one_compute_stream = true;
  // Approximations lowering made that change the answer (overlap_contention.h); they reach the
  // Trace's notes through trace_from_times().
  std::vector<std::string> notes;
  // Segments (core/ir/program.h, SegmentOp) lowered as one compute node each, closed-form bodies
  // only: by (segment, rank), each op's time at its GPU's nominal speed (a collective's its
  // closed form, a memory op 0) and their sum, the node's duration.
  struct SegmentTimes {
    std::vector<double> each;
    double total = 0;
  };
  std::map<std::pair<const std::vector<Op>*, Rank>, SegmentTimes> segment_times;

  int32_t add(GraphNode n);
  void edge(int32_t from, int32_t to);
};

// Adds a collective's schedule between the joins `begin` and `end`: flows that wait for nothing
// wait for begin, and end waits for the flows nothing waits for, then the trailing latency.
void add_schedule(ActivityGraph& g, const CollectiveSchedule& s, int32_t begin, int32_t end);

// `transient` (optional) multiplies each compute kernel's duration by its rank's factor for that
// kernel (core/exec/executor.h); `track_waits` records when each collective member arrives
// (ActivityGraph::member_predecessors), so that trace_from_times() can report straggler waits.
// Neither changes the graph's nodes or times when absent. Compute kernels that overlap collectives
// on their GPU are stretched for the SMs those hold (core/exec/overlap_contention.h).
// `degraded` (optional, closed-form bodies only): collectives and transfers through a degraded
// NIC take the slowest edge's time (DegradedNics).
// `alone_collectives` (kCollectiveFlows and kChunkFlows): collectives proven alone on their links
// become kAlone nodes (see the contract above).
// Segments: with closed-form bodies, no `transient`, no `degraded`, no waits tracked, and every
// collective a segment holds joined by one simulated rank, a segment instance is a join and one
// compute node whose duration is the sum of its ops' (their chain's longest path, which nothing
// else joins), its kernels stretched beside collectives one by one as if apart. That node is the
// instance's begin and end (it starts when its last predecessor ends). Otherwise the Job's
// segments are expanded first. trace_from_times() needs a graph without segment nodes.
ActivityGraph lower(const Job& job, const Cluster& cluster, int iterations, CollectiveBody body,
                    const TransientSlowdowns* transient = nullptr, bool track_waits = false,
                    const DegradedNics* degraded = nullptr, bool alone_collectives = false);

// The GPUs whose own fabric link a transfer crosses (the platform's routes, sim/platform.h):
// both ends inside one node (a switch end is no GPU; on a mesh node every GPU of the relay route),
// and on PCIe nodes the GPU ends of a
// transfer between nodes too, whose route to the NIC starts with the GPU's link.
std::vector<Rank> fabric_link_users(const Transfer& t, const Cluster& cluster);

// The time of a schedule with no other traffic, where each transfer takes alpha + bytes / beta of
// its pair (point_to_point_time) and flows wait only for their `after` flows.
Seconds schedule_time_without_contention(const CollectiveSchedule& s, const Cluster& cluster);

// Start-free longest-path times for a graph whose every node has a fixed duration (compute and
// delay: amount; flow: alpha + bytes / beta of its pair; alone: its schedule's
// schedule_time_without_contention; join: 0). Returns finish times, and `start` (optional) gets
// each node's start: the latest finish of its predecessors.
std::vector<double> finish_times_without_contention(const ActivityGraph& g, const Cluster& cluster,
                                                    std::vector<double>* start = nullptr);

// The run's transient slowdowns; with throttling, the unthrottled step time its phases are read
// at comes from the closed form of one step (core/exec/executor.h, kThrottle).
TransientSlowdowns transient_slowdowns(const Job& job, const Cluster& cluster,
                                       const RunOptions& options);

// Collective members' waits (from their arrival to the collective's start) longer than this are
// reported as Trace::straggler_waits: well above the rounding of a simulated clock, well below any
// kernel.
inline constexpr double kMinStragglerWaitSeconds = 1e-9;

Trace trace_from_times(const ActivityGraph& g, const Job& job, const std::vector<double>& finish,
                       const std::string& engine);

}  // namespace dtsim
