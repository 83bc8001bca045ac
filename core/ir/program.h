// The Program IR: what one rank does in one training step (docs/design.md section 2).
//
// Contract:
// - A Program is a list of Streams. Ops on one stream run in order, as on a CUDA stream; ops on
//   different streams run concurrently. An op may wait on Events recorded by ops on other
//   streams (cudaEventRecord / cudaStreamWaitEvent). An op records its event when it ends.
// - Ops: Compute, Collective, Send, Recv, Memory. Every op carries a Label (name, layer,
//   micro-batch, phase) so traces explain themselves.
// - Programs are plain values: no SimGrid, CUDA or Qt types. Every executor (analytic, SimGrid,
//   CUDA+NCCL, MPI+Eigen) runs the same Program.
// - A Job holds the Programs of the ranks that are simulated and the communication Groups with
//   all their members (the strategy lists every group of the world, so a GroupId means the same
//   group whichever ranks are built, core/strategy/strategy.h). Ranks without a Program are
//   assumed to behave like the simulated member of their group (symmetry folding, docs/design.md
//   section 8): identical data-parallel replicas need not all be built. A collective completes
//   when every member that has a Program reaches it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/enum_table.h"
#include "core/base/ids.h"
#include "core/base/units.h"
#include "core/ir/model_graph.h"

namespace dtsim {

enum class Phase { kForward, kBackward, kRecompute, kGradientSync, kOptimizer, kPipeline, kOther };
inline constexpr auto kPhaseNames = make_enum_table<Phase>({{Phase::kForward, "forward"},
                                                            {Phase::kBackward, "backward"},
                                                            {Phase::kRecompute, "recompute"},
                                                            {Phase::kGradientSync, "gradient_sync"},
                                                            {Phase::kOptimizer, "optimizer"},
                                                            {Phase::kPipeline, "pipeline"},
                                                            {Phase::kOther, "other"}});
constexpr std::string_view to_string(Phase p) {
  return kPhaseNames.to_string(p);
}

struct Label {
  std::string name;      // "block.3.qkv", "grad_bucket.2"
  int layer = -1;        // index into the ModelGraph's layers, or -1
  int micro_batch = -1;  // -1 when not per micro-batch
  Phase phase = Phase::kOther;
};

struct ComputeOp {
  KernelKind kind = KernelKind::kGemm;
  Flops flops{0};
  Bytes bytes{0};  // device-memory traffic
  DType dtype = DType::kBf16;
  GemmShape shape{};  // when known, the cost model applies wave quantization
  TrafficClass traffic = TrafficClass::kStreaming;  // which memory efficiency prices `bytes`
  double load_factor = 1;  // the busiest rank's work over the mean (Kernel::load_factor)
  int launches = 1;        // kernel launches it takes (Kernel::launches)
};

// The compute op a layer graph's compute kernel runs as, in `dtype`.
inline ComputeOp compute_op_of(const Kernel& k, DType dtype) {
  return ComputeOp{k.kind, k.flops, k.bytes, dtype, k.shape, k.traffic, k.load_factor, k.launches};
}

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier
};
// The names nccl-tests and `dtsim collective --op` use.
inline constexpr auto kCollectiveKindNames =
    make_enum_table<CollectiveKind>({{CollectiveKind::kAllReduce, "all-reduce"},
                                     {CollectiveKind::kAllGather, "all-gather"},
                                     {CollectiveKind::kReduceScatter, "reduce-scatter"},
                                     {CollectiveKind::kBroadcast, "broadcast"},
                                     {CollectiveKind::kReduce, "reduce"},
                                     {CollectiveKind::kAllToAll, "all-to-all"},
                                     {CollectiveKind::kBarrier, "barrier"}});
constexpr std::string_view to_string(CollectiveKind k) {
  return kCollectiveKindNames.to_string(k);
}
// The collective a layer graph's communication kernel (core/ir/model_graph.h) stands for.
CollectiveKind collective_kind(CommPattern pattern);

// kHalvingDoubling: recursive halving/doubling (Rabenseifner); kHierarchical: intra-node
// reduce-scatter, inter-node all-reduce, intra-node all-gather. Both are built for all-reduce;
// other collectives use the ring.
// kNvls: NVSwitch in-network reduction (NVLink SHARP, Hopper and later), one node.
// kTree: NCCL's double binary tree over nodes with a chain inside each node, pipelined in chunks
// (all-reduce; core/collectives/collective_schedule.h, TreePlan).
// NCCL's protocols (docs/reference.md): LL and LL128 trade bandwidth for lower per-step latency.
// kAuto: with algorithm auto, NCCL's choice; with an explicit algorithm, the pure alpha-beta model.
// kAuto: the algorithm's own model, without a protocol's effect (the textbook alpha-beta ring);
// with algorithm auto, the fastest of everything auto chooses from. kFastest: a named NCCL
// algorithm (ring, tree, NVLS) as auto would run it: the fastest of its protocols, with NCCL's
// per-call costs where NCCL's model covers the system (core/collectives/collective_schedule.h).
enum class CollectiveProtocol { kAuto, kLL, kLL128, kSimple, kFastest };
inline constexpr auto kCollectiveProtocolNames =
    make_enum_table<CollectiveProtocol>({{CollectiveProtocol::kAuto, "auto"},
                                         {CollectiveProtocol::kLL, "LL"},
                                         {CollectiveProtocol::kLL128, "LL128"},
                                         {CollectiveProtocol::kSimple, "Simple"},
                                         {CollectiveProtocol::kFastest, "fastest"}});
constexpr std::string_view to_string(CollectiveProtocol p) {
  return kCollectiveProtocolNames.to_string(p);
}

enum class CollectiveAlgorithm {
  kAuto,
  kRing,
  kTree,
  kHalvingDoubling,
  kHierarchical,
  kNvls,
  kNvlsTree,
  kCollNet,
  kPat
};
inline constexpr auto kCollectiveAlgorithmNames = make_enum_table<CollectiveAlgorithm>(
    {{CollectiveAlgorithm::kAuto, "auto"},
     {CollectiveAlgorithm::kRing, "ring"},
     {CollectiveAlgorithm::kTree, "tree"},
     {CollectiveAlgorithm::kHalvingDoubling, "halving-doubling"},
     {CollectiveAlgorithm::kHierarchical, "hierarchical"},
     {CollectiveAlgorithm::kNvls, "nvls"},
     {CollectiveAlgorithm::kNvlsTree, "nvls-tree"},
     {CollectiveAlgorithm::kCollNet, "collnet"},
     {CollectiveAlgorithm::kPat, "pat"}});
constexpr std::string_view to_string(CollectiveAlgorithm a) {
  return kCollectiveAlgorithmNames.to_string(a);
}

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupId group = 0;
  // The operation's size in the nccl-tests sense: the full buffer for all-reduce, broadcast and
  // reduce; the full gathered array for all-gather and reduce-scatter.
  Bytes bytes{0};
  DType dtype = DType::kBf16;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  Rank root = 0;  // broadcast and reduce
  CollectiveProtocol protocol = CollectiveProtocol::kAuto;
};

struct SendOp {
  Rank peer = 0;
  Bytes bytes{0};
  int tag = 0;
};

struct RecvOp {
  Rank peer = 0;
  Bytes bytes{0};
  int tag = 0;
};

enum class MemoryCategory { kWeights, kGradients, kOptimizer, kActivations, kBuffers };
constexpr int kMemoryCategories = 5;
inline constexpr auto kMemoryCategoryNames =
    make_enum_table<MemoryCategory>({{MemoryCategory::kWeights, "weights"},
                                     {MemoryCategory::kGradients, "gradients"},
                                     {MemoryCategory::kOptimizer, "optimizer"},
                                     {MemoryCategory::kActivations, "activations"},
                                     {MemoryCategory::kBuffers, "buffers"}});
static_assert(kMemoryCategoryNames.size() == kMemoryCategories);
constexpr std::string_view to_string(MemoryCategory c) {
  return kMemoryCategoryNames.to_string(c);
}

struct MemoryOp {
  MemoryCategory category = MemoryCategory::kBuffers;
  Bytes bytes{0};  // positive allocates, negative frees
};

struct Op;
// A segment: ops that run one after another on one stream, none of which waits for an event or
// records one, held once and shared by every op that runs them (a pipeline chunk's forward
// kernels, the same for every micro-batch). Expanded, the segment's ops take its micro-batch,
// its first op its waits and its last op its record (expand_segments). A strategy emits them
// only when asked (JobOptions::segments); the analytic engine's lowering times one as one span,
// every other executor runs the expanded Program.
struct SegmentOp {
  std::shared_ptr<const std::vector<Op>> ops;
  int micro_batch = -1;
};

using OpBody = std::variant<ComputeOp, CollectiveOp, SendOp, RecvOp, MemoryOp, SegmentOp>;

struct Op {
  OpBody body;
  Label label;
  std::vector<EventId> waits;     // events that must be recorded before this op starts
  std::optional<EventId> record;  // recorded when this op ends
};

struct Stream {
  std::string name;  // "compute", "grad_comm"
  std::vector<Op> ops;
};

struct Program {
  Rank rank = 0;
  std::vector<Stream> streams;
  int num_events = 0;

  StreamId add_stream(std::string name);
  EventId new_event() { return num_events++; }
  // Appends an op to a stream and returns a reference to it (valid until the next append).
  Op& append(StreamId stream, OpBody body, Label label);
  // Ops over all streams, a segment counting the ops it holds.
  size_t op_count() const;
  bool has_segments() const;
};

struct Group {
  GroupId id = 0;
  std::string name;  // "dp", "tp", "pp", "world"
  std::vector<Rank> ranks;
};

struct Job {
  int world_size = 1;
  std::vector<Program> programs;  // the simulated ranks (see the symmetry note above)
  std::vector<Group> groups;

  const Group& group(GroupId id) const { return groups.at(static_cast<size_t>(id)); }
  const Program* program_for(Rank r) const;
  bool has_segments() const;
};

// The same Program with every segment replaced by the ops it holds (see SegmentOp); a Program
// without segments is returned unchanged.
Program expand_segments(const Program& program);
Job expand_segments(const Job& job);

}  // namespace dtsim
