// The step builder behind build_job() (core/strategy/strategy.h), shared by the files that define
// it: parallel_step.cc (the builder, its groups and each rank's step), step_units.cc (the pipeline
// units: layers, kernels, ZeRO-3 gathers, boundaries), step_gradients.cc (gradient buckets,
// their collectives and compression) and step_optimizer.cc (the optimizer step). Private to
// core/strategy.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/base/checked.h"
#include "core/base/error.h"
#include "core/strategy/layout.h"
#include "core/strategy/model_state.h"
#include "core/strategy/parameter_server.h"
#include "core/strategy/strategy.h"

namespace dtsim::strategy_internal {

enum class UnitKind { kForward, kBackward };
// Send/receive tags between pipeline stages.
constexpr int kActivationTag = 0, kGradientTag = 1;
struct Unit {
  UnitKind kind = UnitKind::kForward;
  int chunk = 0;  // local chunk index j; the global chunk is j·p + s
  int micro_batch = 0;
  // PipeDream schedules: a backward of the previous step's micro-batch (carried over, no flush
  // between steps), and whether its gradient arrived in the previous step (recv_carried).
  bool carried = false;
  bool recv_carried = false;
};

// The units stage s of p runs in one step, in order (parallel_step.cc).
std::vector<Unit> schedule_for_stage(Schedule schedule, int p, int s, int v, int m);
// The activation bytes a layer keeps from its forward to its backward under `r`.
Bytes stashed_activations(const Layer& l, Recompute r);
// Whether one tensor- and context-parallel rank of a stage may stand for the others
// (parallel_step.cc).
bool folding_is_exact(const ClusterConfig& c);

// Everything one rank's program needs to know, and the job's groups.
class StepBuilder {
 public:
  StepBuilder(const ModelGraph& model, const Scenario& sc);

  Job build(const JobOptions& options);

  Program build_one(Rank rank);

 private:
  int world() const { return t_ * cp_ * p_ * d_; }

  // The Job's op budget (JobOptions::max_ops) and what is spent of it.
  double max_job_ops_ = 0;
  bool segments_ = false;
  double job_ops_ = 0;
  int ranks_to_build_ = 1, ranks_built_ = 0;

  GroupId group(const std::string& name, std::vector<Rank> ranks);

  // The group `make` creates for the coordinates (kind, a, b, c), made once.
  template <class Make>
  GroupId cached(int kind, int a, int b, int c, Make make) {
    const auto key = std::make_tuple(kind, a, b, c);
    if (auto it = group_cache_.find(key); it != group_cache_.end()) return it->second;
    const GroupId id = make();
    group_cache_.emplace(key, id);
    return id;
  }
  struct GroupKeyHash {
    size_t operator()(const std::tuple<int, int, int, int>& k) const {
      const auto [a, b, c, d] = k;
      return ((static_cast<size_t>(a) * 1000003u ^ static_cast<size_t>(b)) * 1000003u ^
              static_cast<size_t>(c)) *
                 1000003u ^
             static_cast<size_t>(d);
    }
  };
  std::unordered_map<std::tuple<int, int, int, int>, GroupId, GroupKeyHash> group_cache_;

  // The groups of rank (tp, cp, s, dp).
  struct RankGroups {
    GroupId tp = 0, cp = 0, ep = 0, dp = 0, edp = 0;
    int dp_size = 1, edp_size = 1;
    GroupId embedding = -1;  // first and last stage with tied weights; -1 elsewhere
    // FP8 amax reduction: the stage's tensor-, context- and data-parallel ranks (Megatron-LM
    // d98e8a64dd, megatron/core/fp8_utils.py `get_fp8_context` passes
    // parallel_state.get_amax_reduction_group(with_context_parallel=True) to TE's fp8_autocast).
    GroupId amax = 0;
    int amax_size = 1;
    // Gradient statistics (the norm for clipping): the model-parallel ranks (tensor x pipeline)
    // with the plain optimizer, every rank with the distributed one (ZeRO >= 1)
    // (megatron/core/optimizer/__init__.py sets grad_stats_parallel_group; MegatronOptimizer.
    // get_grad_stats_parallel_group in optimizer.py documents both cases).
    GroupId grad_stats = 0;
    int grad_stats_size = 1;
  };
  RankGroups rank_groups(int tp, int cp, int s, int dp);

  void create_groups();

  // The ranks with this tp and pp whose (cp, dp) coordinates satisfy `member`.
  template <class Member>
  std::vector<Rank> ranks_where(int tp, int pp, Member member) const {
    std::vector<Rank> ranks;
    for (int dp = 0; dp < d_; ++dp)
      for (int c = 0; c < cp_; ++c)
        if (member(c, dp)) ranks.push_back(layout_.rank(tp, c, pp, dp));
    return ranks;
  }

  // One set of parameters reduced over one group: a layer's dense or expert weights.
  struct Part {
    GroupId group = 0;
    int size = 1;                                // ranks in the group
    std::function<double(const Layer&)> params;  // this part's parameters of a layer
    bool expert = false;
    std::vector<std::vector<GradientBucket>> buckets;  // by global chunk
  };
  static double expert_parameters(const Layer& l) { return l.expert_parameters; }
  double dense_parameters(const Layer& l) const;

  // A compute op after the last backward that waits for a compressed collective (`after`, or
  // -1: the collective `then` of the pass before, in the same bucket order), optionally followed
  // by a collective of its own on grad_comm.
  struct AfterBackward {
    int order = 0;
    EventId after = -1;
    ComputeOp op;
    Label label;
    std::optional<CollectiveOp> then;
  };

  struct RankState {
    Program p;
    StreamId compute = 0, grad_comm = 0, param_comm = -1, tp_comm = -1;
    StreamId send_next = -1, send_prev = -1, recv_prev = -1, recv_next = -1;
    GroupId tp_group = 0, cp_group = 0, ep_group = 0;
    GroupId amax_group = 0;
    int amax_size = 1;
    std::vector<Part> parts;    // dense, then expert
    Rank prev = -1, next = -1;  // pipeline neighbours (the interleaved schedule wraps)
    // Gradient decompression the optimizer waits for (bucket_sync), in `order` passes.
    std::vector<AfterBackward> after_backward;
    // ZeRO-3 prefetch: a layer's gather may start once the layer two before it has finished,
    // so it overlaps the previous layer's compute and at most two layers are gathered at once.
    EventId gather_gate = -1, last_layer_end = -1;
    // Segments (JobOptions::segments), by (forward, chunk, first micro-batch, last micro-batch):
    // what the unit's layer loop appended, or null where it cannot be one segment.
    std::map<std::tuple<bool, int, bool, bool>, std::shared_ptr<const std::vector<Op>>> segments;
  };

  // A pipeline unit's layer loop, `body`, appends the same ops for every micro-batch with the same
  // key but the micro-batch in their labels. With segments on, the first run of each key is
  // captured: when it appended only compute-stream ops, none recording an event and only the
  // first waiting (for what the unit received), they become one segment, and later micro-batches
  // append that segment instead of running the body. Otherwise the body runs every time.
  template <typename Body>
  void layer_loop(RankState& r, const std::tuple<bool, int, bool, bool>& key, const Label& label,
                  Body&& body) {
    if (!segments_) return body();
    auto& ops = r.p.streams[static_cast<size_t>(r.compute)].ops;
    if (const auto found = r.segments.find(key); found != r.segments.end()) {
      if (!found->second) return body();
      Op& op = r.p.append(r.compute, SegmentOp{found->second, label.micro_batch}, label);
      op.waits = std::move(kernel_waits_);
      kernel_waits_.clear();
      return;
    }
    std::vector<size_t> sizes;
    for (const auto& st : r.p.streams) sizes.push_back(st.ops.size());
    const int events = r.p.num_events;
    const std::vector<EventId> pending = kernel_waits_;
    body();
    const size_t first = sizes[static_cast<size_t>(r.compute)];
    bool one_segment = r.p.num_events == events && kernel_waits_.empty() && ops.size() > first;
    for (size_t s = 0; s < sizes.size() && one_segment; ++s)
      one_segment = s == static_cast<size_t>(r.compute) || r.p.streams[s].ops.size() == sizes[s];
    for (size_t i = first; i < ops.size() && one_segment; ++i)
      one_segment = !ops[i].record && ops[i].label.micro_batch == label.micro_batch &&
                    (i == first ? ops[i].waits == pending : ops[i].waits.empty());
    if (!one_segment) {
      r.segments.emplace(key, nullptr);
      return;
    }
    auto held = std::make_shared<std::vector<Op>>(std::make_move_iterator(ops.begin() + first),
                                                  std::make_move_iterator(ops.end()));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(first), ops.end());
    held->front().waits.clear();
    Op& op = r.p.append(r.compute, SegmentOp{held, label.micro_batch}, label);
    op.waits = pending;
    r.segments.emplace(key, std::move(held));
  }

  int weight_versions(int s) const;

  void optimizer_step(RankState& r, const ModelStateBytes& state, double optimizer_shard,
                      const RankGroups& groups, int mb);

  void run_after_backward(RankState& r);

  static EventId mark_end(Program& p, StreamId s);

  void memory(RankState& r, MemoryCategory c, Bytes bytes, const std::string& name, int layer,
              int mb, Phase phase);

  bool async_tp_backward() const;

  bool overlaps_gemm(const std::vector<Kernel>& ks, size_t j, size_t* gemm, Phase phase) const;

  void kernels(RankState& r, const std::vector<Kernel>& ks, int layer, int mb, Phase phase,
               const Layer& l);

  bool megatron_optimizer() const;

  ChunkRange fp8_blocks(const ChunkRange& range) const;

  double fp8_gemms(const ChunkRange& range) const;

  void fp8_amax_reduction(RankState& r, double gemms, double tensors_per_gemm,
                          const std::string& direction, int layer, int mb, Phase phase);

  bool sharded_layer(const RankState& r, const Layer& l) const;

  Bytes gathered_bytes(const Layer& l) const;

  EventId gather_parameters(RankState& r, const Layer& l, int layer, int mb, Phase phase);

  bool gather_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase);

  void release_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase);

  void gather_boundary(RankState& r, int layer, int mb, Phase phase);

  void forward_layers(RankState& r, const ChunkRange& range, int mb);

  void forward_unit(RankState& r, int chunk_global, int mb);

  void backward_layers(RankState& r, int chunk_global, int mb, bool last_micro_batch);

  void backward_unit(RankState& r, int chunk_global, int mb, bool last_micro_batch,
                     bool recv_carried = false);

  bool prepare_bucket(RankState& r, Bytes bucket, const Label& label);

  CollectiveOp gradient_collective(const Part& part, Bytes bytes) const;

  void bucket_sync(RankState& r, const Part& part, int chunk, size_t k, const GradientBucket& b,
                   int mb);

  // PowerSGD's shape of a bucket: the share of its gradients that are weight matrices and the
  // elements of P and Q per gradient, from the layers the bucket spans (its ends may hold part
  // of a layer: the layers' average stands for the bucket).
  struct LowRank {
    double matrix_share = 0, p_per_element = 0, q_per_element = 0;
  };
  LowRank low_rank(const GradientBucket& b) const;

  // The weight matrices of each layer, for PowerSGD: the weights of its forward GEMMs (k x n,
  // one per batch entry for grouped expert GEMMs), an embedding table as (parameters / hidden)
  // x hidden; GEMMs are taken in order while they fit in the layer's own parameters (a tied
  // output head multiplies by a matrix another layer owns). The rest are vectors.
  struct LayerMatrices {
    double parameters = 0, matrix_elements = 0, p_elements = 0, q_elements = 0;
  };
  void collect_layer_matrices();

  static Label bucket_label(const Part& part, int chunk, size_t k, const GradientBucket& b, int mb);

  void attach_waits(RankState& r, size_t before);

  Program build_rank(Rank rank);
  // build_rank's parts, in order.
  struct RankParameters {
    std::vector<double> part_params;  // per part of r.parts
    Bytes largest_bucket{0};          // of the parts reduced over more than one rank
    double kernels_per_micro_batch = 0;
  };
  struct RankModelState {
    ModelStateBytes state;
    double optimizer_shard = 0;  // parameters whose optimizer step this rank runs
  };
  RankGroups open_rank(RankState& r, int tp, int cp, int s, int dp);
  RankParameters assign_parameters(RankState& r, int s);
  void check_op_budget(double kernels_per_micro_batch);
  RankModelState place_model_state(RankState& r, const RankParameters& params, int s);
  void run_schedule(RankState& r, int s, const RankModelState& state, const RankGroups& groups);
  void finish_step(RankState& r, const RankParameters& params, const RankModelState& state,
                   const RankGroups& groups);

  const ModelGraph& model_;
  const Scenario& sc_;
  RankLayout layout_;
  int t_, p_, v_, d_, cp_, ep_, m_, zero_;
  DType dtype_;
  DType grad_dtype_;     // training.grad_dtype, resolved
  double weight_bytes_;  // per parameter, stored and gathered (weight_bytes_per_parameter)
  std::vector<ChunkRange> chunks_;
  // Each layer's recomputation: training.recompute, except that under recompute full with
  // training.recompute_layers N only the first N recomputable layers of each chunk recompute.
  std::vector<Recompute> layer_recompute_;
  CompressionConfig compression_;
  std::vector<LayerMatrices> layer_matrices_;  // PowerSGD only, by layer
  double tied_parameters_ = 0;                 // the largest layer's tied (shared) parameters
  Bytes boundary_bytes_{0};                    // one send between stages, per TP rank
  Bytes boundary_full_bytes_{0};               // the whole tensor, which scatter/gather all-gathers
  bool scatter_gather_ = false;
  std::vector<EventId> kernel_waits_;  // events the next compute op must wait for
  std::map<std::pair<std::string, Rank>, GroupId> groups_;
  Job job_;
};

}  // namespace dtsim::strategy_internal
