// One training step under data, tensor, sequence, context, expert and pipeline parallelism with
// ZeRO: the Program of any rank (tp, cp, pp, dp). With folding (strategy.h) only those of one
// data-parallel replica are built: the other replicas are identical and folded by symmetry
// (core/ir/program.h); their data-parallel collectives are still simulated in full, so the
// network sees all their traffic.
//
// Per rank (tp rank i, stage s) the program has these streams:
// - compute: kernels, tensor-parallel collectives (Megatron-LM runs them in line, on the
//   compute stream, unless tp_comm_overlap), and memory events;
// - grad_comm: the data-parallel gradient collectives, bucketed (PyTorch DDP / Megatron-LM's
//   DDP buckets) and launched when the last micro-batch's backward has produced a bucket;
// - param_comm (ZeRO-3 only): parameter all-gathers, prefetched one layer ahead;
// - pp_send_next, pp_send_prev, pp_recv_prev, pp_recv_next: pipeline activations (tag 0) and
//   gradients (tag 1). Receives are posted as early as their stream allows and compute waits
//   for them; each (peer, direction) pair keeps one order on both sides, so nothing deadlocks.
//
// Pipeline schedules (Narayanan et al. 2021, section 2.2; Megatron-LM schedules.py):
// - GPipe: all forwards, then all backwards;
// - 1F1B (PipeDream-Flush): min(p - s - 1, m) warm-up forwards, then one forward and one
//   backward alternately, then the remaining backwards;
// - interleaved 1F1B: v chunks per stage, units taken p micro-batches at a time per chunk,
//   (p - s - 1)·2 + (v - 1)·p warm-up forwards (all of them when m = p).
//
// Gradient groups (Megatron-LM): a layer's dense parameters are reduced over the data- and
// context-parallel ranks that share them (d·cp ranks); expert weights over the ranks that hold
// the same experts (d·cp/ep, "expert data parallel"). Each is one Part below, with its buckets.
//
// ZeRO (Rajbhandari et al. 2020): stage 0 all-reduces gradients; stages 1 and 2 reduce-scatter
// them and all-gather the updated weights after the optimizer step (Megatron-LM's distributed
// optimizer): the same 2Ψ of traffic with 16-bit gradients; stage 3 also all-gathers each
// layer's weights before its forward and its backward, for every micro-batch, and
// reduce-scatters its gradients after every backward: 3Ψ per micro-batch (DeepSpeed's ZeRO-3
// keeps gradients sharded throughout; its unit is one layer, not a DDP bucket).
//
// Gradient precision (training.grad_dtype): gradients are stored and reduced in it, so with fp32
// gradients the all-reduce and reduce-scatter carry 4 B per parameter while the weight
// all-gathers stay in the training precision.
#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/base/checked.h"
#include "core/base/error.h"
#include "core/strategy/layout.h"
#include "core/strategy/model_state.h"
#include "core/strategy/parameter_server.h"
#include "core/strategy/strategy.h"

namespace dtsim {
namespace {

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

std::vector<Unit> schedule_for_stage(Schedule schedule, int p, int s, int v, int m) {
  std::vector<Unit> units;
  auto fwd = [&](int mb) { units.push_back({UnitKind::kForward, 0, mb}); };
  auto bwd = [&](int mb) { units.push_back({UnitKind::kBackward, 0, mb}); };
  if (schedule == Schedule::kGpipe) {
    for (int mb = 0; mb < m; ++mb) fwd(mb);
    for (int mb = 0; mb < m; ++mb) bwd(mb);
    return units;
  }
  if (is_pipedream(schedule)) {
    // 1F1B without a flush (Narayanan et al. 2019, section 3.3, Figure 8; 2BW, Narayanan et al.
    // 2021, Figure 3): in the steady state stage s runs one forward and one backward in turn, its
    // backwards w = p - s - 1 micro-batches behind its forwards. A step is one period of that
    // steady state: the forwards of micro-batches 0..m-1 paired with the backwards w behind, the
    // first w of which are the previous step's last micro-batches. Within a step every forward
    // send has its receive in the same step; the gradient of stage s's first carried backward
    // was sent by stage s + 1 at the end of the previous step, so that backward does not wait
    // for a receive, and the receive that matches stage s + 1's last send is posted last.
    const int w = std::min(p - s - 1, m);
    const bool deferred = s + 1 < p && p - s - 1 <= m;
    for (int i = 0; i < m; ++i) {
      fwd(i);
      const int j = i - w;
      units.push_back(
          {UnitKind::kBackward, 0, j < 0 ? m + j : j, j < 0, deferred && i == 0 && j < 0});
    }
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
  // Interleaved: unit k of a direction runs micro-batch (k / (p·v))·p + k mod p on chunk
  // (k / p) mod v, counted from the last chunk backwards for backward units.
  const int total = m * v;
  auto unit = [&](UnitKind kind, int k) {
    const int group = k / p;
    int chunk = group % v;
    if (kind == UnitKind::kBackward) chunk = v - 1 - chunk;
    return Unit{kind, chunk, (k / (p * v)) * p + k % p};
  };
  const int warmup = m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  for (int k = 0; k < warmup; ++k) units.push_back(unit(UnitKind::kForward, k));
  for (int i = 0; i < total - warmup; ++i) {
    units.push_back(unit(UnitKind::kForward, warmup + i));
    units.push_back(unit(UnitKind::kBackward, i));
  }
  for (int k = total - warmup; k < total; ++k) units.push_back(unit(UnitKind::kBackward, k));
  return units;
}

Bytes stashed_activations(const Layer& l, Recompute r) {
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

// Tensor- and context-parallel ranks of a stage run the same program on different GPUs. One
// can stand for the others when the traffic of theirs that is not simulated (their
// data-parallel and expert collectives; the TP, CP and pipeline traffic is simulated with every
// member anyway) would use no link the simulated traffic uses: every GPU has its own NIC (a
// multi-node ring leaves a node through the NICs of the group's own GPUs), GPUs talk through
// NVSwitch or NVLink rather than a PCIe link shared with the NIC, and the network between nodes
// is a non-blocking switched one (no oversubscribed uplink, no torus cable or dragonfly router link
// to share).
bool folding_is_exact(const ClusterConfig& c) {
  const auto& net = c.network;
  return net.nics_per_node >= c.gpus_per_node && c.intra_node.kind != FabricKind::kPcie &&
         net.topology != Topology::kTorus && net.topology != Topology::kDragonfly &&
         net.topology != Topology::kRailOnly && net.oversubscription <= 1 &&
         net.pod_oversubscription <= 1;
}

// Everything one rank's program needs to know, and the job's groups.
class StepBuilder {
 public:
  StepBuilder(const ModelGraph& model, const Scenario& sc)
      : model_(model),
        sc_(sc),
        layout_(layout_from_scenario(sc)),
        t_(sc.parallelism.tensor.value),
        p_(sc.parallelism.pipeline.value),
        v_(sc.parallelism.schedule == Schedule::kInterleaved && sc.parallelism.pipeline.value > 1
               ? sc.parallelism.virtual_stages
               : 1),
        d_(sc.parallelism.data.value),
        cp_(sc.parallelism.context.value),
        ep_(sc.parallelism.expert.value),
        m_(narrow<int>(sc.micro_batches(), "micro-batches per replica")),
        zero_(sc.parallelism.zero_stage),
        dtype_(sc.training.precision),
        grad_dtype_(sc.training.grad_dtype),
        chunks_(pipeline_chunks(model, p_, v_, sc.parallelism.layers_per_stage)),
        compression_(sc.training.compression) {
    job_.world_size = sc.cluster.total_gpus();
    for (const auto& l : model.layers)
      tied_parameters_ = std::max(tied_parameters_, l.tied_parameters);
    // Pipeline send/recv: one hidden-state tensor per micro-batch (b·s·h elements), its
    // sequence shard under sequence parallelism (docs/reference.md, communication volume) and its
    // context shard under context parallelism.
    const auto& shape = model.shape;
    const double e = training_bytes_per_element(dtype_);
    const double full = e * model.micro_batch_size * shape.seq_length * shape.hidden_size / cp_;
    // Scatter/gather (Narayanan et al. 2021, section 4.1): each TP rank sends its 1/t and the
    // receivers all-gather the whole tensor over their TP group (NVLink).
    scatter_gather_ = sc.parallelism.pipeline_scatter_gather && t_ > 1;
    boundary_full_bytes_ = Bytes(full);
    boundary_bytes_ = Bytes(full / (sc.parallelism.sequence_parallel || scatter_gather_ ? t_ : 1));
    collect_layer_matrices();
  }

  Job build(const JobOptions& options) {
    create_groups();
    max_job_ops_ = options.max_ops;
    segments_ = options.segments;
    if (options.folding == Folding::kNone) {
      ranks_to_build_ = world();
      for (Rank r = 0; r < world(); ++r) job_.programs.push_back(build_rank(r));
      return std::move(job_);
    }
    const bool fold = sc_.simulate.symmetry_folding && folding_is_exact(sc_.cluster);
    const std::array<int, 2> at = options.perturbed_position.value_or(std::array<int, 2>{0, 0});
    const bool whole = !fold || !options.perturbed_position;  // perturbed replicas
    std::vector<int> perturbed;
    for (int d : options.perturbed_replicas)
      if (d >= 0 && d < d_ && std::find(perturbed.begin(), perturbed.end(), d) == perturbed.end())
        perturbed.push_back(d);
    // The replica that stands for the unperturbed ones: the first one no perturbation touches.
    int nominal = 0;
    while (nominal < d_ &&
           std::find(perturbed.begin(), perturbed.end(), nominal) != perturbed.end())
      ++nominal;
    const int extra = static_cast<int>(perturbed.size());
    ranks_to_build_ =
        (nominal < d_ ? p_ * (fold ? 1 : cp_ * t_) : 0) + p_ * extra * (whole ? cp_ * t_ : 1);
    auto build_replica = [&](int d, bool all_positions) {
      for (int s = 0; s < p_; ++s)
        for (int c = 0; c < (all_positions ? cp_ : 1); ++c)
          for (int i = 0; i < (all_positions ? t_ : 1); ++i)
            job_.programs.push_back(build_rank(all_positions ? layout_.rank(i, c, s, d)
                                                             : layout_.rank(at[0], at[1], s, d)));
    };
    if (nominal < d_) build_replica(nominal, !fold);
    for (int d : perturbed) build_replica(d, whole);
    std::sort(job_.programs.begin(), job_.programs.end(),
              [](const Program& a, const Program& b) { return a.rank < b.rank; });
    return std::move(job_);
  }

  Program build_one(Rank rank) {
    if (rank < 0 || rank >= world())
      throw RuntimeError("rank " + std::to_string(rank) + " is not in a world of " +
                         std::to_string(world()) + " ranks");
    create_groups();
    return build_rank(rank);
  }

 private:
  int world() const { return t_ * cp_ * p_ * d_; }

  // The Job's op budget (JobOptions::max_ops) and what is spent of it.
  double max_job_ops_ = 0;
  bool segments_ = false;
  double job_ops_ = 0;
  int ranks_to_build_ = 1, ranks_built_ = 0;

  // A group, created once: `name` and the ranks.
  GroupId group(const std::string& name, std::vector<Rank> ranks) {
    std::sort(ranks.begin(), ranks.end());
    auto key = std::make_pair(name, ranks.front());
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    const auto id = static_cast<GroupId>(job_.groups.size());
    job_.groups.push_back(Group{id, name, std::move(ranks)});
    groups_.emplace(key, id);
    return id;
  }

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
  RankGroups rank_groups(int tp, int cp, int s, int dp) {
    RankGroups g;
    g.tp = cached(5, cp, s, dp,
                  [&] { return group("tp", layout_.group(ParallelDim::kTensor, tp, cp, s, dp)); });
    g.cp = cached(6, tp, s, dp,
                  [&] { return group("cp", layout_.group(ParallelDim::kContext, tp, cp, s, dp)); });
    // Expert parallelism groups consecutive data-parallel replicas (Megatron-LM carves the
    // expert-parallel group out of the data-parallel one).
    // The groups that span replicas are built once per distinct group (cached by the
    // coordinates that define them): building them for every rank was quadratic in the world.
    g.ep = cached(0, tp, s, cp * d_ + dp / ep_, [&] {
      std::vector<Rank> ranks;
      for (int d = dp / ep_ * ep_; d < std::min(d_, (dp / ep_ + 1) * ep_); ++d)
        ranks.push_back(layout_.rank(tp, cp, s, d));
      return group("ep", std::move(ranks));
    });
    g.dp = cached(1, tp, s, 0,
                  [&] { return group("dp", ranks_where(tp, s, [](int, int) { return true; })); });
    g.dp_size = d_ * cp_;
    // Expert weights: with expert parallelism every tensor-parallel rank holds the same E/ep
    // experts at full width (expert TP = 1) for its own tokens, so their gradients are reduced
    // over the tensor-parallel ranks too; without it they are split like the dense weights. The
    // replicas that hold the same experts are those with the same dp mod ep.
    const bool experts_replicated_over_tp = ep_ > 1 && t_ > 1;
    g.edp_size = (experts_replicated_over_tp ? t_ : 1) * cp_ * ((d_ - dp % ep_ + ep_ - 1) / ep_);
    g.edp = cached(2, experts_replicated_over_tp ? -1 : tp, s, dp % ep_, [&] {
      std::vector<Rank> edp;
      for (int i = 0; i < t_; ++i) {
        if (!experts_replicated_over_tp && i != tp) continue;
        const auto ranks = ranks_where(i, s, [&](int, int d) { return d % ep_ == dp % ep_; });
        edp.insert(edp.end(), ranks.begin(), ranks.end());
      }
      return group("edp", std::move(edp));
    });
    g.amax = cached(3, s, 0, 0, [&] {
      std::vector<Rank> ranks;
      for (int i = 0; i < t_; ++i) {
        const auto replicas = ranks_where(i, s, [](int, int) { return true; });
        ranks.insert(ranks.end(), replicas.begin(), replicas.end());
      }
      return group("amax", std::move(ranks));
    });
    g.amax_size = t_ * cp_ * d_;
    if (zero_ >= 1) {
      g.grad_stats = cached(4, 0, 0, 0, [&] {
        std::vector<Rank> ranks;
        for (Rank r = 0; r < world(); ++r) ranks.push_back(r);
        return group("grad_stats", std::move(ranks));
      });
      g.grad_stats_size = world();
    } else {
      g.grad_stats = cached(4, cp, dp, 1, [&] {
        std::vector<Rank> ranks;
        for (int stage = 0; stage < p_; ++stage)
          for (int i = 0; i < t_; ++i) ranks.push_back(layout_.rank(i, cp, stage, dp));
        return group("grad_stats", std::move(ranks));
      });
      g.grad_stats_size = t_ * p_;
    }
    // Tied weights: the first and last stage of a replica share the embedding matrix.
    if (p_ > 1 && (s == 0 || s == p_ - 1) && tied_parameters_ > 0)
      g.embedding = cached(7, tp, cp, dp, [&] {
        return group("embedding", {layout_.rank(tp, cp, 0, dp), layout_.rank(tp, cp, p_ - 1, dp)});
      });
    return g;
  }

  // Every group of the world, in one order (replica by replica, then stage, context and tensor
  // rank), so that a GroupId is the same whichever ranks are built.
  void create_groups() {
    for (int dp = 0; dp < d_; ++dp)
      for (int s = 0; s < p_; ++s)
        for (int c = 0; c < cp_; ++c)
          for (int i = 0; i < t_; ++i) rank_groups(i, c, s, dp);
  }

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
  // Dense parameters; with a pipeline the last stage also holds its copy of tied weights
  // (Megatron-LM's output head shares the word embedding and keeps a copy there).
  double dense_parameters(const Layer& l) const {
    return l.parameters - l.expert_parameters + (p_ > 1 ? l.tied_parameters : 0);
  }

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

  int weight_versions(int s) const {
    return dtsim::weight_versions(sc_.parallelism.schedule, p_, s, m_);
  }

  // The optimizer step after the gradient collectives (mb: the micro-batch whose gradients it
  // applies under pipedream-async, else -1).
  void optimizer_step(RankState& r, const ModelStateBytes& state, double optimizer_shard,
                      const RankGroups& groups, int mb) {
    // The optimizer's kernels after every gradient collective, each over the parameters whose
    // update this rank runs (its shard under ZeRO). Megatron's (megatron_optimizer()) in its
    // order (Megatron-LM d98e8a64dd, megatron/core/optimizer/optimizer.py,
    // MixedPrecisionOptimizer / DistributedOptimizer `step`: prepare_grads, clip_grad_norm,
    // step_with_ready_grads). Other frameworks run one optimizer step kernel that reads the
    // gradients, writes the 16-bit weights and reads and writes the states (master weights
    // included); gradient clipping is a user's choice there, not a framework default.
    const auto& tr = sc_.training;
    const bool megatron = megatron_optimizer();
    auto& comm_ops = r.p.streams[static_cast<size_t>(r.grad_comm)].ops;
    const EventId comm_done = comm_ops.empty() ? -1 : mark_end(r.p, r.grad_comm);
    bool waited = false;
    auto step_kernel = [&](const std::string& name, KernelKind kind, double bytes) {
      Op& op = r.p.append(r.compute, ComputeOp{kind, Flops(0), Bytes(bytes), DType::kFp32},
                          Label{name, -1, mb, Phase::kOptimizer});
      if (comm_done >= 0 && !waited) op.waits.push_back(comm_done);
      waited = true;
    };
    const double grad_bytes_per_param = gradient_bytes_per_parameter(grad_dtype_);
    const bool mixed = weight_bytes_per_parameter(dtype_) < 4;
    // The optimizer works on fp32 main gradients: 16-bit gradients are first copied into fp32
    // ones (optimizer.py `_copy_model_grads_to_main_grads`: main_grad.float(); a no-op view
    // when the gradient buffer is fp32 already, Megatron's bf16 default): read g, write 4.
    if (megatron && mixed && grad_bytes_per_param < 4)
      step_kernel("main_grad_cast", KernelKind::kElementwise,
                  optimizer_shard * (grad_bytes_per_param + 4));
    // fp16 needs dynamic loss scaling (Micikevicius et al. 2018): before the step every local
    // gradient is checked for inf/NaN and unscaled (PyTorch's fused
    // _amp_foreach_non_finite_check_and_unscale_: one read and one write), and the overflow
    // flag is agreed on by an all-reduce so that every rank skips the same steps. bf16 and fp8
    // (with bf16 gradients) train without it.
    if (dtype_ == DType::kFp16) {
      step_kernel("loss_scale_unscale_and_check", KernelKind::kElementwise,
                  state.gradients.value() * 2.0);
      if (r.parts.front().size > 1)
        r.p.append(
            r.compute,
            CollectiveOp{CollectiveKind::kAllReduce, r.parts.front().group, Bytes(4), DType::kFp32},
            Label{"loss_scale_overflow_flag", -1, mb, Phase::kOptimizer});
    }
    // Gradient clipping by the global norm (clip_grad 1.0 is Megatron's default,
    // optimizer_config.py): clip_grads.py `get_grad_norm_fp32` sums the squares of the fp32
    // main gradients in one multi_tensor_l2norm kernel (read 4 bytes each) and all-reduces that
    // one fp32 over the gradient-statistics group; `clip_grad_by_total_norm_fp32` then scales
    // every gradient in place (multi_tensor_scale_tensor, which runs whatever the norm when
    // Transformer Engine provides it: read 4, write 4). The parameters Megatron leaves out of the
    // norm (tensor-parallel duplicates, shared embeddings off the first stage) are not told apart.
    // Megatron-LM 2021 (9da6e975de, megatron/optimizer/clip_grads.py) scaled only when the norm
    // exceeded clip_grad, which depends on the run; it is left out there.
    if (megatron) {
      step_kernel("grad_norm_squares", KernelKind::kElementwise, optimizer_shard * 4);
      if (groups.grad_stats_size > 1)
        r.p.append(
            r.compute,
            CollectiveOp{CollectiveKind::kAllReduce, groups.grad_stats, Bytes(4), DType::kFp32},
            Label{"grad_norm_all_reduce", -1, mb, Phase::kOptimizer});
      if (tr.framework != Framework::kMegatronLm2021)
        step_kernel("grad_clip_scale", KernelKind::kElementwise, optimizer_shard * 8);
    }
    if (megatron) {
      // The optimizer step (multi_tensor_adam and its kin): reads the fp32 main gradient and
      // reads and writes the fp32 parameter it updates (the master weight in mixed precision,
      // which optimizer_bytes_per_parameter counts with the states) and the states.
      const double updated_bytes = optimizer_bytes_per_parameter(dtype_, tr.optimizer) +
                                   (mixed ? 0 : weight_bytes_per_parameter(dtype_));
      step_kernel("optimizer_step", KernelKind::kOptimizer,
                  optimizer_shard * (4 + 2 * updated_bytes));
      // Mixed precision: the updated fp32 master weights are copied into the 16-bit weights
      // (optimizer.py / distrib_optimizer.py `_copy_main_params_to_model_params`): read 4,
      // write 2.
      if (mixed)
        step_kernel("main_params_to_model_params", KernelKind::kElementwise,
                    optimizer_shard * (4 + weight_bytes_per_parameter(dtype_)));
    } else {
      step_kernel("optimizer_step", KernelKind::kOptimizer,
                  optimizer_shard * (grad_bytes_per_param + weight_bytes_per_parameter(dtype_) +
                                     2 * optimizer_bytes_per_parameter(dtype_, tr.optimizer)));
    }
  }

  // The decompression queued by bucket_sync, after the last backward, pass by pass.
  void run_after_backward(RankState& r) {
    std::vector<EventId> then_done;
    size_t next_then = 0;
    for (int order = 0; order < 2; ++order)
      for (const AfterBackward& a : r.after_backward) {
        if (a.order != order) continue;
        Op& op = r.p.append(r.compute, a.op, a.label);
        const EventId after =
            a.after >= 0 ? a.after
                         : (next_then < then_done.size() ? then_done[next_then++] : EventId{-1});
        if (after >= 0) op.waits.push_back(after);
        if (!a.then) continue;
        const EventId computed = mark_end(r.p, r.compute);
        Op& c = r.p.append(r.grad_comm, *a.then,
                           Label{a.label.name + "_all_reduce", a.label.layer, a.label.micro_batch,
                                 Phase::kGradientSync});
        c.waits.push_back(computed);
        then_done.push_back(mark_end(r.p, r.grad_comm));
      }
    r.after_backward.clear();
  }

  // The event recorded at the end of the last op on a stream (creating it if needed).
  static EventId mark_end(Program& p, StreamId s) {
    Op& op = p.streams[static_cast<size_t>(s)].ops.back();
    if (!op.record) op.record = p.new_event();
    return *op.record;
  }

  void memory(RankState& r, MemoryCategory c, Bytes bytes, const std::string& name, int layer,
              int mb, Phase phase) {
    if (bytes.value() == 0) return;
    r.p.append(r.compute, MemoryOp{c, bytes}, Label{name, layer, mb, phase});
  }

  // TP communication overlap (parallelism.tp_comm_overlap, Transformer Engine's userbuffers as
  // Megatron-LM's --tp-comm-overlap uses them): a TP collective next to the GEMM it feeds or
  // drains runs on its own stream at the same time as that GEMM, and the kernel after the pair
  // waits for both, so the pair costs the longer of the two, the GEMM on the SMs the
  // collective's NCCL blocks leave (lowering charges that: core/exec/overlap_contention.h).
  // Optimistic: the chunked pipeline's first or last chunk is not charged. A collective at either
  // end of a kernel list stays in line (nothing after it to join).
  //
  // Without it, the Megatron profiles still run a column-parallel GEMM's backward collectives
  // asynchronously: the input-gradient all-reduce (sequence parallel: reduce-scatter) is launched
  // after the dgrad GEMM and waited for after the wgrad GEMM, and under sequence parallelism the
  // re-gather of the input is launched before the dgrad GEMM and waited for before the wgrad
  // GEMM. NVIDIA/Megatron-LM at 9da6e975de (2021-12-30), megatron/mpu/layers.py
  // ColumnParallelLinearWithAsyncAllreduce.backward (on unless
  // --no-async-tensor-model-parallel-allreduce); at 739cb43dae (2022-05-24, sequence parallelism)
  // LinearWithGradAccumulationAndAsyncCommunication.backward, both collectives with
  // async_op=True; Transformer Engine's Linear and LayerNormLinear backward ("Overlap
  // dgrad-RS/AR with wgrad", transformer_engine/pytorch/module/linear.py), which Megatron-core
  // runs. The block builder records those kernels in that order
  // (LayerBuilder::order_column_parallel_backward), so each collective is paired with the GEMM
  // after it.
  bool async_tp_backward() const {
    const Framework f = sc_.training.framework;
    return f == Framework::kMegatronLm2021 || f == Framework::kMegatronCore ||
           f == Framework::kNemo;
  }

  bool overlaps_gemm(const std::vector<Kernel>& ks, size_t j, size_t* gemm, Phase phase) const {
    if (ks[j].group != CommGroup::kTensor) return false;
    if (!sc_.parallelism.tp_comm_overlap) {
      if (!async_tp_backward() || phase != Phase::kBackward) return false;
      const bool column_parallel_input = ks[j].name.ends_with("_tp_enter.backward") ||
                                         ks[j].name.ends_with("_sp_regather.backward");
      if (!column_parallel_input || j + 2 >= ks.size() || ks[j + 1].kind != KernelKind::kGemm)
        return false;
      *gemm = j + 1;
      return true;
    }
    if (j + 2 < ks.size() && ks[j + 1].kind == KernelKind::kGemm) {
      *gemm = j + 1;  // the collective feeds the next GEMM (all-gather before column-parallel)
      return true;
    }
    if (j > 0 && j + 1 < ks.size() && ks[j - 1].kind == KernelKind::kGemm) {
      *gemm = j - 1;  // it drains the previous GEMM (reduce-scatter after row-parallel)
      return true;
    }
    return false;
  }

  void kernels(RankState& r, const std::vector<Kernel>& ks, int layer, int mb, Phase phase,
               const Layer& l) {
    const std::string& layer_name = l.name;
    // FP8 training (Transformer Engine) runs the transformer blocks' GEMMs in FP8 and attention
    // in BF16. The embedding and the output layer are Megatron-core's own modules, not TE ones
    // (megatron/core/models/gpt/gpt_model.py: the output layer is a
    // tensor_parallel.ColumnParallelLinear), so their GEMMs stay BF16.
    const bool fp8_layer = dtype_ == DType::kFp8 && l.kind == "transformer";
    auto& compute_ops = r.p.streams[static_cast<size_t>(r.compute)].ops;
    // Overlapped collectives: (index of the kernel that waits for it, its end event).
    std::vector<std::pair<size_t, EventId>> joins;
    auto append_in_line = [&](size_t j, OpBody body, Label label) {
      Op& op = r.p.append(r.compute, std::move(body), std::move(label));
      for (auto it = joins.begin(); it != joins.end();)
        if (it->first <= j) {
          op.waits.push_back(it->second);
          it = joins.erase(it);
        } else {
          ++it;
        }
    };
    for (size_t j = 0; j < ks.size(); ++j) {
      const Kernel& k = ks[j];
      Label label{layer_name + "." + k.name, layer, mb, phase};
      if (k.kind != KernelKind::kCommunication) {
        const DType dtype = dtype_ != DType::kFp8                           ? dtype_
                            : fp8_layer && k.kind != KernelKind::kAttention ? DType::kFp8
                                                                            : DType::kBf16;
        append_in_line(j, compute_op_of(k, dtype), std::move(label));
        continue;
      }
      const GroupId g = k.group == CommGroup::kTensor    ? r.tp_group
                        : k.group == CommGroup::kContext ? r.cp_group
                                                         : r.ep_group;
      const CollectiveOp collective{collective_kind(k.pattern), g, k.bytes, dtype_};
      size_t gemm = 0;
      if (!overlaps_gemm(ks, j, &gemm, phase)) {
        append_in_line(j, collective, std::move(label));
        continue;
      }
      // Start with the GEMM: after the compute op before it (and what this layer waits for).
      Op& comm = r.p.append(r.tp_comm, collective, std::move(label));
      const size_t before_gemm = gemm < j ? compute_ops.size() - 1 : compute_ops.size();
      if (before_gemm > 0) {
        Op& prior = compute_ops[before_gemm - 1];
        if (!prior.record) prior.record = r.p.new_event();
        comm.waits.push_back(*prior.record);
      }
      comm.waits.insert(comm.waits.end(), kernel_waits_.begin(), kernel_waits_.end());
      joins.emplace_back(std::max(gemm, j) + 1, mark_end(r.p, r.tp_comm));
    }
  }

  // FP8 delayed scaling (Transformer Engine, Megatron-core's default FP8 recipe): the amaxes
  // recorded by every FP8 cast of a model chunk's blocks are concatenated and all-reduced (MAX)
  // over the amax group once per forward pass of the chunk, when the fp8_autocast that wraps
  // the whole TransformerBlock exits, and once per backward pass, in the backward of the
  // region's first FP8 module, which runs last; then one fused kernel turns the amaxes into the
  // next scales (TransformerEngine d0067d0da6, transformer_engine/pytorch/quantization.py
  // `reduce_and_update_fp8_tensors` and `autocast_exit`; module/linear.py `backward`;
  // Megatron-LM megatron/core/transformer/transformer_block.py wraps the pass in one context
  // for the delayed recipe). TE keeps 3 FP8 tensors per GEMM forward (input, weight, output)
  // and 2 backward (module/base.py, num_fp8_tensors): one fp32 amax each. The update kernel
  // (tex.fused_amax_and_scale_update_after_reduction) reads each amax, rolls its history
  // (length 1, Megatron's fp8_amax_history_len default) and reads and writes its scale: 4 + 8 +
  // 8 bytes per tensor. The reduction is skipped where the group has one rank, as TE does.
  // Megatron's optimizer path (its own DDP gradient buffer, fp32 main parameters, gradient
  // clipping on by default) under the Megatron framework profiles; the others keep PyTorch's.
  bool megatron_optimizer() const {
    const Framework f = sc_.training.framework;
    return f == Framework::kMegatronLm2021 || f == Framework::kMegatronCore ||
           f == Framework::kNemo;
  }

  ChunkRange fp8_blocks(const ChunkRange& range) const {
    ChunkRange blocks{range.last + 1, range.first - 1};
    if (dtype_ != DType::kFp8) return blocks;
    for (int i = range.first; i <= range.last; ++i)
      if (model_.layers[static_cast<size_t>(i)].kind == "transformer") {
        blocks.first = std::min(blocks.first, i);
        blocks.last = std::max(blocks.last, i);
      }
    return blocks;
  }

  // The FP8 GEMMs of a chunk's blocks; a grouped expert GEMM counts once per local expert (TE's
  // GroupedLinear keeps the tensors of each).
  double fp8_gemms(const ChunkRange& range) const {
    double gemms = 0;
    for (int i = range.first; i <= range.last; ++i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      if (l.kind != "transformer") continue;
      for (const Kernel& k : l.forward)
        if (k.kind == KernelKind::kGemm) gemms += std::max(1.0, k.shape.batch);
    }
    return gemms;
  }

  void fp8_amax_reduction(RankState& r, double gemms, double tensors_per_gemm,
                          const std::string& direction, int layer, int mb, Phase phase) {
    const double amaxes = gemms * tensors_per_gemm;
    if (r.amax_size > 1)
      r.p.append(
          r.compute,
          CollectiveOp{CollectiveKind::kAllReduce, r.amax_group, Bytes(4 * amaxes), DType::kFp32},
          Label{"fp8_amax_reduction_" + direction, layer, mb, phase});
    r.p.append(r.compute,
               ComputeOp{KernelKind::kElementwise, Flops(0), Bytes(20 * amaxes), DType::kFp32},
               Label{"fp8_scale_update_" + direction, layer, mb, phase});
  }

  // ZeRO-3 shards a layer's weights where some part of them is reduced over several ranks.
  bool sharded_layer(const RankState& r, const Layer& l) const {
    if (zero_ != 3) return false;
    for (const auto& part : r.parts)
      if (part.size > 1 && part.params(l) > 0) return true;
    return false;
  }

  Bytes gathered_bytes(const Layer& l) const {
    return Bytes(l.parameters * weight_bytes_per_parameter(dtype_));
  }

  // ZeRO-3: all-gathers a layer's weights on param_comm, at most one layer ahead of compute.
  EventId gather_parameters(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
    for (const auto& part : r.parts) {
      if (part.size <= 1 || part.params(l) <= 0) continue;
      const Bytes bytes(part.params(l) * weight_bytes_per_parameter(dtype_));
      Op& ag = r.p.append(r.param_comm,
                          CollectiveOp{CollectiveKind::kAllGather, part.group, bytes, dtype_},
                          Label{l.name + ".zero3_gather", layer, mb, phase});
      if (r.gather_gate >= 0) ag.waits.push_back(r.gather_gate);
    }
    return mark_end(r.p, r.param_comm);
  }

  // ZeRO-3 around one layer's forward or backward: gather its weights (the layer's first
  // kernel waits for them) and account the gathered copy; afterwards free it and open the
  // prefetch gate. Returns whether the layer is sharded.
  bool gather_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
    if (!sharded_layer(r, l)) return false;
    kernel_waits_.push_back(gather_parameters(r, l, layer, mb, phase));
    memory(r, MemoryCategory::kBuffers, gathered_bytes(l), l.name + ".gathered_weights", layer, mb,
           phase);
    return true;
  }

  void release_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
    memory(r, MemoryCategory::kBuffers, -gathered_bytes(l), l.name + ".gathered_weights_freed",
           layer, mb, phase);
    r.gather_gate = r.last_layer_end;
    r.last_layer_end = mark_end(r.p, r.compute);
  }

  // The all-gather that rebuilds a scattered activation or gradient, in line on the compute
  // stream after the receive it completes.
  void gather_boundary(RankState& r, int layer, int mb, Phase phase) {
    Op& ag = r.p.append(
        r.compute,
        CollectiveOp{CollectiveKind::kAllGather, r.tp_group, boundary_full_bytes_, dtype_},
        Label{"pp.tp_all_gather", layer, mb, phase});
    ag.waits.insert(ag.waits.end(), kernel_waits_.begin(), kernel_waits_.end());
    kernel_waits_.clear();
  }

  void forward_layers(RankState& r, const ChunkRange& range, int mb) {
    const auto& tr = sc_.training;
    for (int i = range.first; i <= range.last; ++i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      const bool sharded = gather_layer(r, l, i, mb, Phase::kForward);
      const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
      // FP8: Transformer Engine casts each weight to FP8 and transposes it (for the dgrad GEMM)
      // on the first micro-batch of a step only and reuses the copy for the others
      // (Megatron-LM d98e8a64dd, megatron/core/extensions/transformer_engine.py: TELinear passes
      // is_first_microbatch to TE, which caches the FP8 weight; schedules.py sets it for the
      // first micro-batch). Read 2 bytes, write 1 + 1 per weight; the layer's norm gains and
      // biases (under 0.1% of its parameters) are counted with the GEMM weights.
      if (dtype_ == DType::kFp8 && l.kind == "transformer" && mb == 0)
        r.p.append(
            r.compute,
            ComputeOp{KernelKind::kElementwise, Flops(0),
                      Bytes((weight_bytes_per_parameter(dtype_) + 2) * l.parameters), dtype_},
            Label{l.name + ".fp8_weight_cast_transpose", i, mb, Phase::kForward});
      kernels(r, l.forward, i, mb, Phase::kForward, l);
      attach_waits(r, before);
      memory(r, MemoryCategory::kActivations, stashed_activations(l, tr.recompute),
             l.name + ".activations", i, mb, Phase::kForward);
      if (sharded) {
        release_layer(r, l, i, mb, Phase::kForward);
      }
      if (i == fp8_blocks(range).last)
        fp8_amax_reduction(r, fp8_gemms(range), 3, "forward", i, mb, Phase::kForward);
    }
  }

  void forward_unit(RankState& r, int chunk_global, int mb) {
    const auto& range = chunks_[static_cast<size_t>(chunk_global)];
    if (chunk_global > 0) {
      r.p.append(r.recv_prev, RecvOp{r.prev, boundary_bytes_, kActivationTag},
                 Label{"pp.recv_activation", range.first, mb, Phase::kPipeline});
      kernel_waits_.push_back(mark_end(r.p, r.recv_prev));
      if (scatter_gather_) gather_boundary(r, range.first, mb, Phase::kForward);
    }
    // Only FP8's weight casts set the first micro-batch apart.
    layer_loop(r, {true, chunk_global, mb == 0 && dtype_ == DType::kFp8, false},
               Label{"layers.forward", range.first, mb, Phase::kForward},
               [&] { forward_layers(r, range, mb); });
    if (chunk_global + 1 < p_ * v_) {
      const EventId produced = mark_end(r.p, r.compute);
      Op& send = r.p.append(r.send_next, SendOp{r.next, boundary_bytes_, kActivationTag},
                            Label{"pp.send_activation", range.last, mb, Phase::kPipeline});
      send.waits.push_back(produced);
    }
  }

  void backward_layers(RankState& r, int chunk_global, int mb, bool last_micro_batch) {
    const auto& range = chunks_[static_cast<size_t>(chunk_global)];
    const auto& tr = sc_.training;
    std::vector<size_t> next_bucket(r.parts.size(), 0);
    for (int i = range.last; i >= range.first; --i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      const bool sharded = gather_layer(r, l, i, mb, Phase::kBackward);
      const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
      Bytes transient{0};
      if (l.recomputable && tr.recompute == Recompute::kFull) {
        kernels(r, l.forward, i, mb, Phase::kRecompute, l);
        transient = l.activation_bytes - l.activation_bytes_full;
      } else if (l.recomputable && tr.recompute == Recompute::kSelective) {
        kernels(r, l.selective_recompute, i, mb, Phase::kRecompute, l);
        transient = l.activation_bytes - l.activation_bytes_selective;
      }
      memory(r, MemoryCategory::kActivations, transient, l.name + ".recomputed", i, mb,
             Phase::kRecompute);
      kernels(r, l.backward, i, mb, Phase::kBackward, l);
      attach_waits(r, before);
      if (i == fp8_blocks(range).first)
        fp8_amax_reduction(r, fp8_gemms(range), 2, "backward", i, mb, Phase::kBackward);
      memory(r, MemoryCategory::kActivations, -(stashed_activations(l, tr.recompute) + transient),
             l.name + ".activations_freed", i, mb, Phase::kBackward);
      if (sharded) {
        release_layer(r, l, i, mb, Phase::kBackward);
        // Gradients leave as soon as they exist, every micro-batch, to stay sharded.
        for (const auto& part : r.parts) {
          if (part.size <= 1 || part.params(l) <= 0) continue;
          Op& rs = r.p.append(
              r.grad_comm,
              CollectiveOp{CollectiveKind::kReduceScatter, part.group,
                           Bytes(part.params(l) * gradient_bytes_per_parameter(grad_dtype_)),
                           grad_dtype_},
              Label{l.name + ".zero3_reduce_scatter", i, mb, Phase::kGradientSync});
          rs.waits.push_back(r.last_layer_end);
        }
        continue;
      }
      // Gradients are reduced only after the last micro-batch (gradient accumulation).
      if (!last_micro_batch || !tr.overlap_grad_reduce) continue;
      for (size_t k = 0; k < r.parts.size(); ++k) {
        const Part& part = r.parts[k];
        const auto& buckets = part.buckets[static_cast<size_t>(chunk_global)];
        size_t& next = next_bucket[k];
        while (part.size > 1 && next < buckets.size() && buckets[next].first_layer == i) {
          bucket_sync(r, part, chunk_global, next, buckets[next], mb);
          ++next;
        }
      }
    }
  }

  // recv_carried: the gradient arrived in the previous step (PipeDream schedules); its receive is
  // posted at the end of this step instead (schedule_for_stage).
  void backward_unit(RankState& r, int chunk_global, int mb, bool last_micro_batch,
                     bool recv_carried = false) {
    const auto& range = chunks_[static_cast<size_t>(chunk_global)];
    const auto& tr = sc_.training;
    if (chunk_global + 1 < p_ * v_) {
      if (!recv_carried) {
        r.p.append(r.recv_next, RecvOp{r.next, boundary_bytes_, kGradientTag},
                   Label{"pp.recv_gradient", range.last, mb, Phase::kPipeline});
        kernel_waits_.push_back(mark_end(r.p, r.recv_next));
      }
      if (scatter_gather_) gather_boundary(r, range.last, mb, Phase::kBackward);
    }
    // Only the gradient buckets launched between layers set the last micro-batch apart.
    layer_loop(r, {false, chunk_global, false, last_micro_batch && tr.overlap_grad_reduce},
               Label{"layers.backward", range.last, mb, Phase::kBackward},
               [&] { backward_layers(r, chunk_global, mb, last_micro_batch); });
    if (last_micro_batch && !tr.overlap_grad_reduce && zero_ < 3) {
      const bool compressed = compression_.method != Compression::kNone;
      const EventId done = mark_end(r.p, r.compute);
      bool first = true;
      for (const auto& part : r.parts) {
        if (part.size <= 1) continue;
        const auto& buckets = part.buckets[static_cast<size_t>(chunk_global)];
        for (size_t k = 0; k < buckets.size(); ++k) {
          if (compressed) {
            bucket_sync(r, part, chunk_global, k, buckets[k], mb);
            continue;
          }
          const Label label = bucket_label(part, chunk_global, k, buckets[k], mb);
          const bool prepared = prepare_bucket(r, buckets[k].bytes, label);
          Op& op = r.p.append(r.grad_comm, gradient_collective(part, buckets[k].bytes), label);
          if (prepared)
            op.waits.push_back(mark_end(r.p, r.compute));
          else if (first)
            op.waits.push_back(done);
          first = false;
        }
      }
    }
    if (chunk_global > 0) {
      const EventId produced = mark_end(r.p, r.compute);
      Op& send = r.p.append(r.send_prev, SendOp{r.prev, boundary_bytes_, kGradientTag},
                            Label{"pp.send_gradient", range.first, mb, Phase::kPipeline});
      send.waits.push_back(produced);
    }
  }

  // Megatron's data-parallel wrapper prepares each gradient bucket on the compute stream just
  // before its collective, so the collective waits for these kernels:
  // - the NaN check: the L2 norm of the bucket's gradients (one read of the bucket; the result
  //   is one scalar), under megatron-core and nemo. NVIDIA/Megatron-LM at f2e5db402c and at
  //   d98e8a64dd, megatron/core/distributed/param_and_grad_buffer.py (`start_grad_sync`:
  //   `self.grad_data.norm(p=2)`; `check_grads` at d98e8a64dd), on because
  //   megatron/training/arguments.py defaults check_for_nan_in_loss_and_grad to true
  //   (`--no-check-for-nan-in-loss-and-grad`) and training.py passes it as check_for_nan_in_grad;
  //   NVIDIA/NeMo at 0189a3b38d, nemo/collections/llm/recipes/llama3_70b.py `trainer()` sets
  //   check_for_nan_in_grad=True;
  // - the scaling by 1/(data-parallel size) (`grad_data *= gradient_scaling_factor`, a read
  //   and a write of the bucket), since the collective sums (average_in_collective is off by
  //   default: `--ddp-average-in-collective`; distributed_data_parallel.py sets the factor to
  //   1/dp when it is off; the NeMo recipe leaves it off); Megatron-LM at 9da6e975de
  //   (megatron-lm-2021), megatron/model/distributed.py `allreduce_gradients`:
  //   `buffer_.data /= mpu.get_data_parallel_world_size()` before the all-reduce.
  // The NaN check's host synchronisation (`assert not norm.isnan()`) is not charged. Returns
  // whether it appended anything.
  bool prepare_bucket(RankState& r, Bytes bucket, const Label& label) {
    if (!megatron_optimizer() || bucket.value() <= 0) return false;
    const Framework f = sc_.training.framework;
    if (f == Framework::kMegatronCore || f == Framework::kNemo)
      r.p.append(r.compute, ComputeOp{KernelKind::kElementwise, Flops(0), bucket, grad_dtype_},
                 Label{label.name + ".nan_check_norm", label.layer, label.micro_batch,
                       Phase::kGradientSync});
    r.p.append(r.compute, ComputeOp{KernelKind::kElementwise, Flops(0), bucket * 2.0, grad_dtype_},
               Label{label.name + ".scale", label.layer, label.micro_batch, Phase::kGradientSync});
    return true;
  }

  // Stage 0 all-reduces a bucket; stages 1-2 reduce-scatter it (the distributed optimizer).
  CollectiveOp gradient_collective(const Part& part, Bytes bytes) const {
    return CollectiveOp{zero_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
                        part.group, bytes, grad_dtype_};
  }

  // One bucket's data-parallel reduction once backward has produced it: the collective, or under
  // training.compression the compress kernels (on the compute stream, in line with backward, as
  // a DDP communication hook runs), the compressed collectives, and the decompression that the
  // optimizer waits for (queued in r.after_backward, run after the last backward).
  void bucket_sync(RankState& r, const Part& part, int chunk, size_t k, const GradientBucket& b,
                   int mb) {
    const Label label = bucket_label(part, chunk, k, b, mb);
    const Compression method = compression_.method;
    if (method == Compression::kNone) {
      prepare_bucket(r, b.bytes, label);
      const EventId ready = mark_end(r.p, r.compute);
      Op& op = r.p.append(r.grad_comm, gradient_collective(part, b.bytes), label);
      op.waits.push_back(ready);
      return;
    }
    const double eb = gradient_bytes_per_parameter(grad_dtype_);
    const double n = b.bytes.value() / eb;  // gradients in the bucket
    const double ranks = part.size;
    auto kernel = [&](KernelKind kind, double flops, double bytes, const std::string& what) {
      r.p.append(r.compute, ComputeOp{kind, Flops(flops), Bytes(bytes), grad_dtype_},
                 Label{label.name + "." + what, label.layer, mb, Phase::kGradientSync});
    };
    auto collective = [&](CollectiveKind kind, double bytes, DType dtype, const std::string& what,
                          EventId after) -> Op& {
      Op& op = r.p.append(r.grad_comm, CollectiveOp{kind, part.group, Bytes(bytes), dtype},
                          Label{label.name + "." + what, label.layer, mb, Phase::kGradientSync});
      op.waits.push_back(after);
      return op;
    };
    auto deferred = [&](int order, KernelKind kind, double flops, double bytes,
                        const std::string& what, EventId after) {
      r.after_backward.push_back(AfterBackward{
          order, after, ComputeOp{kind, Flops(flops), Bytes(bytes), grad_dtype_},
          Label{label.name + "." + what, label.layer, mb, Phase::kGradientSync}, std::nullopt});
    };
    // Error feedback: g += e before compressing, e = g - decompress(compress(g)) after: read g
    // and e, write g and e (Karimireddy et al. 2019, Algorithm 2).
    if (compression_.error_feedback)
      kernel(KernelKind::kElementwise, 0, 4 * n * eb, "error_feedback");
    switch (method) {
      case Compression::kNone:
        break;
      case Compression::kFp16:
      case Compression::kBf16:
      case Compression::kFp8: {
        const DType wire = method == Compression::kFp16   ? DType::kFp16
                           : method == Compression::kBf16 ? DType::kBf16
                                                          : DType::kFp8;
        const double wb = bytes_per_element(wire);
        // Casting to the format the gradients already have is no work.
        const bool cast = wire != grad_dtype_;
        if (cast) kernel(KernelKind::kElementwise, 0, n * (eb + wb), "cast");
        const EventId ready = mark_end(r.p, r.compute);
        collective(CollectiveKind::kAllReduce, n * wb, wire, "all_reduce", ready);
        if (cast)
          deferred(0, KernelKind::kElementwise, 0, n * (wb + eb), "uncast",
                   mark_end(r.p, r.grad_comm));
        break;
      }
      case Compression::kInt8: {
        // One scale per bucket: the bucket's absolute maximum (one read), agreed by a MAX
        // all-reduce of one fp32 so that every rank quantizes alike, then a read of g and a
        // write of one byte each; the int8 values travel as one byte each (carried as an 8-bit
        // type: the IR's dtypes are the training formats).
        kernel(KernelKind::kElementwise, 0, n * eb, "absmax");
        collective(CollectiveKind::kAllReduce, 4, DType::kFp32, "scale_all_reduce",
                   mark_end(r.p, r.compute));
        kernel(KernelKind::kElementwise, 0, n * (eb + 1), "quantize");
        r.p.streams[static_cast<size_t>(r.compute)].ops.back().waits.push_back(
            mark_end(r.p, r.grad_comm));
        collective(CollectiveKind::kAllReduce, n, DType::kFp8, "int8_all_reduce",
                   mark_end(r.p, r.compute));
        deferred(0, KernelKind::kElementwise, 0, n * (1 + eb), "dequantize",
                 mark_end(r.p, r.grad_comm));
        break;
      }
      case Compression::kTopK: {
        // Deep Gradient Compression (Lin et al. 2018): each rank sends its k = ceil(d·n)
        // largest gradients as (value, int32 index) pairs; the sets differ between ranks, so
        // they are all-gathered (sum of sparse vectors is not an all-reduce) and every rank
        // scatter-adds the ranks' pairs into a dense buffer. Selection reads the bucket twice
        // (a sampled threshold, then the compaction) and writes the pairs.
        const double kept = std::ceil(compression_.density * n);
        const double pair = eb + 4;
        kernel(KernelKind::kElementwise, 0, 2 * n * eb + kept * pair, "topk_select");
        collective(CollectiveKind::kAllGather, ranks * kept * pair, grad_dtype_, "topk_all_gather",
                   mark_end(r.p, r.compute));
        deferred(0, KernelKind::kElementwise, 0, n * eb + ranks * kept * (pair + 2 * eb),
                 "topk_scatter_add", mark_end(r.p, r.grad_comm));
        break;
      }
      case Compression::kPowerSgd: {
        // PowerSGD (Vogels et al. 2019, Algorithm 1), per weight matrix M (rows x cols) of the
        // bucket's layers: P = M Q, all-reduce P, orthogonalize P, Q = M^T P, all-reduce Q,
        // M ~ P Q^T; vectors (biases, norms) are all-reduced uncompressed, as PyTorch's
        // powerSGD_hook does. Each product is 2·r FLOPs per matrix element; Gram-Schmidt on P
        // is 2·r FLOPs per element of P.
        const LowRank lr = low_rank(b);
        const double rank = compression_.rank;
        const double matrix = lr.matrix_share * n, vectors = n - matrix;
        const double p_elems = lr.p_per_element * n, q_elems = lr.q_per_element * n;
        if (vectors > 0)
          collective(CollectiveKind::kAllReduce, vectors * eb, grad_dtype_, "vector_all_reduce",
                     mark_end(r.p, r.compute));
        kernel(KernelKind::kGemm, 2 * rank * matrix, (matrix + p_elems + q_elems) * eb,
               "powersgd_p");
        collective(CollectiveKind::kAllReduce, p_elems * eb, grad_dtype_, "powersgd_p_all_reduce",
                   mark_end(r.p, r.compute));
        r.after_backward.push_back(AfterBackward{
            0, mark_end(r.p, r.grad_comm),
            ComputeOp{KernelKind::kGemm, Flops(2 * rank * matrix + 2 * rank * p_elems),
                      Bytes((matrix + 2 * p_elems + q_elems) * eb), grad_dtype_},
            Label{label.name + ".powersgd_q", label.layer, mb, Phase::kGradientSync},
            CollectiveOp{CollectiveKind::kAllReduce, part.group, Bytes(q_elems * eb),
                         grad_dtype_}});
        deferred(1, KernelKind::kGemm, 2 * rank * matrix, (matrix + p_elems + q_elems) * eb,
                 "powersgd_decompress", -1);
        break;
      }
    }
  }

  // PowerSGD's shape of a bucket: the share of its gradients that are weight matrices and the
  // elements of P and Q per gradient, from the layers the bucket spans (its ends may hold part
  // of a layer: the layers' average stands for the bucket).
  struct LowRank {
    double matrix_share = 0, p_per_element = 0, q_per_element = 0;
  };
  LowRank low_rank(const GradientBucket& b) const {
    double total = 0, matrix = 0, p = 0, q = 0;
    for (int i = b.first_layer; i <= b.last_layer; ++i) {
      const LayerMatrices& m = layer_matrices_[static_cast<size_t>(i)];
      total += m.parameters;
      matrix += m.matrix_elements;
      p += m.p_elements;
      q += m.q_elements;
    }
    if (total <= 0) return {};
    return {matrix / total, p / total, q / total};
  }

  // The weight matrices of each layer, for PowerSGD: the weights of its forward GEMMs (k x n,
  // one per batch entry for grouped expert GEMMs), an embedding table as (parameters / hidden)
  // x hidden; GEMMs are taken in order while they fit in the layer's own parameters (a tied
  // output head multiplies by a matrix another layer owns). The rest are vectors.
  struct LayerMatrices {
    double parameters = 0, matrix_elements = 0, p_elements = 0, q_elements = 0;
  };
  void collect_layer_matrices() {
    if (compression_.method != Compression::kPowerSgd) return;
    const double rank = compression_.rank;
    layer_matrices_.resize(model_.layers.size());
    std::pair<double, std::string> widest{0, ""};  // the largest min(rows, cols), and its layer
    for (size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      LayerMatrices& m = layer_matrices_[i];
      m.parameters = l.parameters;
      double claimed = 0;  // elements of the layer's parameters taken by its matrices so far
      auto add = [&](double rows, double cols, double count) {
        if (rows < 1 || cols < 1 || claimed + rows * cols * count > l.parameters + 0.5) return;
        claimed += rows * cols * count;
        if (std::min(rows, cols) > widest.first) widest = {std::min(rows, cols), l.name};
        // PyTorch's powerSGD_hook sends a matrix uncompressed unless its compression rate
        // rows·cols / ((rows + cols)·r) reaches min_compression_rate, 2 by default
        // (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py, PowerSGDState).
        if (rows * cols < 2 * (rows + cols) * rank) return;
        m.matrix_elements += rows * cols * count;
        m.p_elements += rows * rank * count;
        m.q_elements += cols * rank * count;
      };
      if (l.kind == "embedding" && model_.shape.hidden_size > 0) {
        const double h = model_.shape.hidden_size;
        add(std::floor(l.parameters / h), h, 1);
        continue;
      }
      for (const Kernel& k : l.forward)
        if (k.kind == KernelKind::kGemm && k.shape.known())
          add(k.shape.k, k.shape.n, std::max(1.0, k.shape.batch));
    }
    // A rank above every matrix's smaller side leaves nothing to compress.
    if (widest.first > 0 && rank > widest.first)
      throw InputError(Diagnostic{
          compression_.rank_where.known() ? compression_.rank_where : compression_.where,
          "training.powersgd_rank",
          "PowerSGD rank " + std::to_string(compression_.rank) +
              " is above the size of every weight matrix (the largest, in " + widest.second +
              ", has a smaller side of " + format_number("%.0f", widest.first) +
              "; a rank-r approximation needs r <= min(rows, cols)); use a rank of at most " +
              format_number("%.0f", widest.first)});
  }

  static Label bucket_label(const Part& part, int chunk, size_t k, const GradientBucket& b,
                            int mb) {
    return Label{std::string(part.expert ? "expert_grad_bucket." : "grad_bucket.") +
                     std::to_string(chunk) + "." + std::to_string(k),
                 b.first_layer, mb, Phase::kGradientSync};
  }

  // The first compute op appended since `before` waits for everything queued in kernel_waits_.
  void attach_waits(RankState& r, size_t before) {
    auto& ops = r.p.streams[static_cast<size_t>(r.compute)].ops;
    if (kernel_waits_.empty() || ops.size() <= before) return;
    auto& w = ops[before].waits;
    w.insert(w.end(), kernel_waits_.begin(), kernel_waits_.end());
    kernel_waits_.clear();
  }

  Program build_rank(Rank rank) {
    const auto [tp, cp, s, dp] = layout_.coordinates(rank);
    const auto& tr = sc_.training;
    RankState r;
    kernel_waits_.clear();
    r.p.rank = rank;
    r.compute = r.p.add_stream("compute");
    r.grad_comm = r.p.add_stream("grad_comm");
    if (zero_ == 3 && d_ * cp_ > 1) r.param_comm = r.p.add_stream("param_comm");
    if (sc_.parallelism.tp_comm_overlap ||
        (async_tp_backward() && sc_.parallelism.tensor.value > 1))
      r.tp_comm = r.p.add_stream("tp_comm");
    if (p_ > 1) {
      r.send_next = r.p.add_stream("pp_send_next");
      r.send_prev = r.p.add_stream("pp_send_prev");
      r.recv_prev = r.p.add_stream("pp_recv_prev");
      r.recv_next = r.p.add_stream("pp_recv_next");
      r.prev = layout_.rank(tp, cp, (s + p_ - 1) % p_, dp);
      r.next = layout_.rank(tp, cp, (s + 1) % p_, dp);
    }
    const RankGroups groups = rank_groups(tp, cp, s, dp);
    r.tp_group = groups.tp;
    r.cp_group = groups.cp;
    r.ep_group = groups.ep;
    r.amax_group = groups.amax;
    r.amax_size = groups.amax_size;
    r.parts.push_back(Part{groups.dp,
                           groups.dp_size,
                           [this](const Layer& l) { return dense_parameters(l); },
                           false,
                           {}});
    r.parts.push_back(Part{groups.edp, groups.edp_size, &StepBuilder::expert_parameters, true, {}});

    // This rank's layers, its gradient buckets and its model state.
    double kernels_per_micro_batch = 0;
    const double grad_bytes = gradient_bytes_per_parameter(grad_dtype_);
    Bytes largest_bucket{0};
    std::vector<double> part_params(r.parts.size(), 0.0);
    for (auto& part : r.parts) part.buckets.assign(chunks_.size(), {});
    for (int j = 0; j < v_; ++j) {
      const int c = j * p_ + s;
      const auto& range = chunks_[static_cast<size_t>(c)];
      for (int i = range.first; i <= range.last; ++i) {
        const Layer& l = model_.layers[static_cast<size_t>(i)];
        for (size_t k = 0; k < r.parts.size(); ++k) part_params[k] += r.parts[k].params(l);
        kernels_per_micro_batch += static_cast<double>(l.forward.size() + l.backward.size() +
                                                       l.selective_recompute.size() +
                                                       3);  // + stash, recompute, free events
      }
      for (auto& part : r.parts) {
        double chunk_bytes = 0;
        for (int i = range.first; i <= range.last; ++i)
          chunk_bytes += std::max(0.0, part.params(model_.layers[static_cast<size_t>(i)]));
        chunk_bytes *= grad_bytes;
        const double count =
            gradient_bucket_count(chunk_bytes, tr.first_gradient_bucket, tr.gradient_bucket);
        if (count > kMaxGradientBuckets)
          throw InputError(
              Diagnostic{sc_.entries.count("training.gradient_bucket")
                             ? sc_.entries.at("training.gradient_bucket").where
                             : SourceLocation{sc_.file, 0, 0},
                         "training.gradient_bucket",
                         format_bytes(Bytes(chunk_bytes)) + " of gradients in buckets of " +
                             format_bytes(tr.gradient_bucket) + " would make about " +
                             std::to_string(static_cast<int64_t>(count)) +
                             " buckets on one rank; dtsim handles at most " +
                             std::to_string(static_cast<int64_t>(kMaxGradientBuckets)) +
                             ". Raise training.gradient_bucket"});
        auto& buckets = part.buckets[static_cast<size_t>(c)];
        buckets =
            assign_gradient_buckets(model_, range.first, range.last, grad_bytes,
                                    tr.first_gradient_bucket, tr.gradient_bucket, part.params);
        if (part.size > 1)
          for (const auto& b : buckets) largest_bucket = std::max(largest_bucket, b.bytes);
      }
    }
    const double ops = kernels_per_micro_batch * m_;
    if (ops > kMaxOpsPerStep)
      throw InputError(
          Diagnostic{tr.global_batch_size.where, "training.global_batch_size",
                     "each simulated rank would run " + std::to_string(m_) + " micro-batches of " +
                         std::to_string(static_cast<int64_t>(kernels_per_micro_batch)) +
                         " kernels, about " + std::to_string(static_cast<int64_t>(ops / 1e6)) +
                         " M ops per step; dtsim simulates at most " +
                         std::to_string(static_cast<int64_t>(kMaxOpsPerStep / 1e6)) +
                         " M. Raise training.micro_batch_size or lower the global batch"});
    // The whole Job: what is built so far, and this rank's count for each rank still to build.
    const double job_estimate = job_ops_ + ops * (ranks_to_build_ - ranks_built_);
    if (max_job_ops_ > 0 && job_estimate > max_job_ops_)
      throw InputError(
          Diagnostic{sc_.parallelism.pipeline.where.known() ? sc_.parallelism.pipeline.where
                                                            : tr.global_batch_size.where,
                     sc_.parallelism.pipeline.where.known() ? "parallelism.pipeline"
                                                            : "training.global_batch_size",
                     std::to_string(ranks_to_build_) + " simulated ranks of about " +
                         std::to_string(static_cast<int64_t>(ops)) + " ops each make about " +
                         format_number("%.3g", job_estimate / 1e6) + " M ops, more than the " +
                         format_number("%.3g", max_job_ops_ / 1e6) +
                         " M that fit the memory limit (--max-memory). Fewer pipeline stages or "
                         "micro-batches (a larger training.micro_batch_size) shrink it"});
    job_ops_ += ops;
    ++ranks_built_;

    ModelStateBytes state;
    double optimizer_shard = 0;  // parameters whose optimizer step this rank runs
    for (size_t k = 0; k < r.parts.size(); ++k) {
      const ModelStateBytes s_k = model_state_bytes(part_params[k], dtype_, grad_dtype_,
                                                    tr.optimizer, zero_, r.parts[k].size);
      state.weights += s_k.weights;
      state.gradients += s_k.gradients;
      state.optimizer += s_k.optimizer;
      optimizer_shard += zero_ >= 1 ? part_params[k] / r.parts[k].size : part_params[k];
    }
    memory(r, MemoryCategory::kWeights, state.weights, "weights", -1, -1, Phase::kOther);
    memory(r, MemoryCategory::kGradients, state.gradients, "gradients", -1, -1, Phase::kOther);
    memory(r, MemoryCategory::kOptimizer, state.optimizer, "optimizer_states", -1, -1,
           Phase::kOther);
    // Weight stashing (PipeDream, Narayanan et al. 2019, section 3.3): each micro-batch in flight
    // on a stage runs its backward with the weights its forward used, so the stage keeps one
    // version per micro-batch in flight; 2BW keeps two (Narayanan et al. 2021, section 3.1).
    const int versions = weight_versions(s);
    if (versions > 1)
      memory(r, MemoryCategory::kWeights, state.weights * static_cast<double>(versions - 1),
             "stashed_weight_versions", -1, -1, Phase::kOther);
    // Error feedback's residual: one gradient's worth for every reduced parameter.
    if (compression_.error_feedback) {
      double reduced = 0;
      for (size_t k = 0; k < r.parts.size(); ++k)
        if (r.parts[k].size > 1) reduced += part_params[k];
      memory(r, MemoryCategory::kGradients,
             Bytes(reduced * gradient_bytes_per_parameter(grad_dtype_)), "error_feedback_residual",
             -1, -1, Phase::kOther);
    }
    // The runtime's own memory (docs/models.md): CUDA context, library workspaces, allocator
    // slack; an assumed figure until measured.
    memory(r, MemoryCategory::kBuffers, tr.runtime_reserve, "runtime_reserve", -1, -1,
           Phase::kOther);
    // NCCL staging for one bucket in flight (an assumption, documented in docs/models.md).
    if (zero_ < 3)
      memory(r, MemoryCategory::kBuffers, largest_bucket, "nccl_bucket_buffer", -1, -1,
             Phase::kOther);

    // Each step starts by zeroing the gradient buffer the backward passes accumulate into
    // (Megatron-LM d98e8a64dd, megatron/training/training.py `train_step`: zero_grad_buffer() on
    // every model chunk; param_and_grad_buffer.py `reset`: grad_data.zero_()): a write of every
    // local gradient. ZeRO-3 has no persistent gradient buffer (each layer's gradients leave as
    // they are made). PyTorch's optimizer.zero_grad() sets gradients to None (the default since
    // torch 2.0) and launches nothing.
    if (megatron_optimizer() && zero_ < 3) {
      double local_params = 0;
      for (double params : part_params) local_params += params;
      r.p.append(r.compute,
                 ComputeOp{KernelKind::kElementwise, Flops(0), Bytes(local_params * grad_bytes),
                           grad_dtype_},
                 Label{"zero_grad_buffer", -1, -1, Phase::kOther});
    }
    const Schedule schedule = sc_.parallelism.schedule;
    const auto units = schedule_for_stage(schedule, p_, s, v_, m_);
    // PipeDream: the previous step's micro-batches still in flight hold their stashed
    // activations when the step starts; they are handed to the next step at its end.
    int carried = 0;
    for (const Unit& u : units) carried += u.carried ? 1 : 0;
    Bytes stage_activations{0};
    for (int i = chunks_[static_cast<size_t>(s)].first; i <= chunks_[static_cast<size_t>(s)].last;
         ++i)
      stage_activations += stashed_activations(model_.layers[static_cast<size_t>(i)], tr.recompute);
    if (carried > 0)
      memory(r, MemoryCategory::kActivations, stage_activations * carried,
             "activations_in_flight_from_previous_step", -1, -1, Phase::kPipeline);
    size_t last_backward = 0;
    for (size_t k = 0; k < units.size(); ++k)
      if (units[k].kind == UnitKind::kBackward) last_backward = k;
    const bool update_per_micro_batch = schedule == Schedule::kPipeDreamAsync;
    for (size_t k = 0; k < units.size(); ++k) {
      const Unit& u = units[k];
      const int c = u.chunk * p_ + s;
      if (u.kind == UnitKind::kForward) {
        forward_unit(r, c, u.micro_batch);
        continue;
      }
      // Gradients are reduced after the step's last backward (PipeDream-2BW accumulates over
      // the step's m backwards too, whichever step their micro-batches started in); PipeDream's
      // asynchronous schedule reduces and applies each micro-batch's gradients at once.
      const bool reduce = update_per_micro_batch ||
                          (is_pipedream(schedule) ? k == last_backward : u.micro_batch == m_ - 1);
      backward_unit(r, c, u.micro_batch, reduce, u.recv_carried);
      if (update_per_micro_batch) optimizer_step(r, state, optimizer_shard, groups, u.micro_batch);
    }
    if (p_ > 1 &&
        std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.recv_carried; })) {
      const auto& range = chunks_[static_cast<size_t>(s)];
      r.p.append(r.recv_next, RecvOp{r.next, boundary_bytes_, kGradientTag},
                 Label{"pp.recv_gradient_for_next_step", range.last, -1, Phase::kPipeline});
    }
    if (carried > 0)
      memory(r, MemoryCategory::kActivations, -(stage_activations * carried),
             "activations_in_flight_to_next_step", -1, -1, Phase::kPipeline);
    run_after_backward(r);

    // Tied weights: the first and last stage all-reduce the shared matrix's gradients after
    // the data-parallel reduction (Megatron-LM's _allreduce_embedding_grads), full size.
    if (groups.embedding >= 0) {
      const EventId done = mark_end(r.p, r.compute);
      Op& ar = r.p.append(
          r.grad_comm,
          CollectiveOp{CollectiveKind::kAllReduce, groups.embedding,
                       Bytes(tied_parameters_ * gradient_bytes_per_parameter(grad_dtype_)),
                       grad_dtype_},
          Label{"tied_embedding_grad_all_reduce", -1, -1, Phase::kGradientSync});
      ar.waits.push_back(done);
    }

    if (!update_per_micro_batch) optimizer_step(r, state, optimizer_shard, groups, -1);
    // Stages 1-2: the updated weight shards are all-gathered (2 bytes per parameter).
    if (zero_ == 1 || zero_ == 2) {
      const EventId stepped = mark_end(r.p, r.compute);
      for (size_t k = 0; k < r.parts.size(); ++k) {
        if (r.parts[k].size <= 1 || part_params[k] <= 0) continue;
        Op& ag = r.p.append(
            r.grad_comm,
            CollectiveOp{CollectiveKind::kAllGather, r.parts[k].group,
                         Bytes(part_params[k] * weight_bytes_per_parameter(dtype_)), dtype_},
            Label{"zero_weight_all_gather", -1, -1, Phase::kOptimizer});
        ag.waits.push_back(stepped);
      }
    }
    return std::move(r.p);
  }

  const ModelGraph& model_;
  const Scenario& sc_;
  RankLayout layout_;
  int t_, p_, v_, d_, cp_, ep_, m_, zero_;
  DType dtype_;
  DType grad_dtype_;  // training.grad_dtype, resolved
  std::vector<ChunkRange> chunks_;
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

}  // namespace

Job build_job(const ModelGraph& model, const Scenario& scenario, const JobOptions& options) {
  // Parameter servers exchange with every worker: the unfolded step, rewritten.
  if (uses_parameter_servers(scenario.training)) {
    JobOptions unfolded = options;
    unfolded.folding = Folding::kNone;
    return parameter_server_job(StepBuilder(model, scenario).build(unfolded), scenario);
  }
  return StepBuilder(model, scenario).build(options);
}

Program build_program(const ModelGraph& model, const Scenario& scenario, Rank rank) {
  if (uses_parameter_servers(scenario.training)) {
    const Job job = build_job(model, scenario);
    if (const Program* p = job.program_for(rank)) return *p;
    throw RuntimeError("rank " + std::to_string(rank) + " has no Program in a world of " +
                       std::to_string(job.world_size) + " ranks");
  }
  return StepBuilder(model, scenario).build_one(rank);
}

}  // namespace dtsim
