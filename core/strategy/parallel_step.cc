// One training step under data, tensor, sequence and pipeline parallelism with ZeRO: the
// Programs of one data-parallel replica (every tensor-parallel rank of every pipeline stage).
// The other replicas are identical and folded by symmetry (core/program.h); their
// data-parallel collectives are still simulated in full, so the network sees all their traffic.
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
// ZeRO (Rajbhandari et al. 2020): stage 0 all-reduces gradients; stages 1 and 2 reduce-scatter
// them and all-gather the updated weights after the optimizer step (Megatron-LM's distributed
// optimizer): the same 2Ψ of traffic; stage 3 also all-gathers each layer's weights before its
// forward and its backward, for every micro-batch, and reduce-scatters its gradients after
// every backward: 3Ψ per micro-batch (DeepSpeed's ZeRO-3 keeps gradients sharded throughout).
#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.h"
#include "core/strategy/layout.h"
#include "core/strategy/model_state.h"
#include "core/strategy/strategy.h"

namespace dtsim {
namespace {

enum class UnitKind { kForward, kBackward };
struct Unit {
  UnitKind kind = UnitKind::kForward;
  int chunk = 0;  // local chunk index j; the global chunk is j·p + s
  int micro_batch = 0;
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

CollectiveKind collective_of(CommPattern pattern) {
  switch (pattern) {
    case CommPattern::kAllReduce:
      return CollectiveKind::kAllReduce;
    case CommPattern::kAllGather:
      return CollectiveKind::kAllGather;
    case CommPattern::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case CommPattern::kAllToAll:
      return CollectiveKind::kAllToAll;
  }
  return CollectiveKind::kAllReduce;
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
        v_(sc.parallelism.schedule == Schedule::kInterleaved ? sc.parallelism.virtual_stages : 1),
        d_(sc.parallelism.data.value),
        m_(static_cast<int>(sc.micro_batches())),
        zero_(sc.parallelism.zero_stage),
        dtype_(sc.training.precision),
        chunks_(pipeline_chunks(model, p_, v_, sc.parallelism.layers_per_stage)) {
    job_.world_size = sc.cluster.total_gpus();
    // Pipeline send/recv: one hidden-state tensor per micro-batch (b·s·h elements), its
    // sequence shard under sequence parallelism (reference.md, communication volume).
    const auto& shape = model.shape;
    const double e = dtype_ == DType::kFp32 || dtype_ == DType::kTf32 ? 4.0 : 2.0;
    boundary_bytes_ = Bytes(e * model.micro_batch_size * shape.seq_length * shape.hidden_size /
                            (sc.parallelism.sequence_parallel ? t_ : 1));
  }

  Job build() {
    for (int s = 0; s < p_; ++s)
      for (int i = 0; i < t_; ++i) job_.programs.push_back(build_rank(i, s));
    std::sort(job_.programs.begin(), job_.programs.end(),
              [](const Program& a, const Program& b) { return a.rank < b.rank; });
    return std::move(job_);
  }

 private:
  GroupId group(ParallelDim dim, int tp, int pp, const char* name) {
    std::vector<Rank> ranks = layout_.group(dim, tp, 0, pp, 0);
    auto key = std::make_pair(static_cast<int>(dim), ranks.front());
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    const auto id = static_cast<GroupId>(job_.groups.size());
    job_.groups.push_back(Group{id, name, std::move(ranks)});
    groups_.emplace(key, id);
    return id;
  }

  struct RankState {
    Program p;
    StreamId compute = 0, grad_comm = 0, param_comm = -1;
    StreamId send_next = -1, send_prev = -1, recv_prev = -1, recv_next = -1;
    GroupId tp_group = 0, dp_group = 0;
    Rank prev = -1, next = -1;  // pipeline neighbours (the interleaved schedule wraps)
    int stage = 0;
    // ZeRO-3 prefetch: a layer's gather may start once the layer two before it has finished,
    // so it overlaps the previous layer's compute and at most two layers are gathered at once.
    EventId gather_gate = -1, last_layer_end = -1;
    std::vector<EventId> gradient_events;  // grad_comm ops the optimizer must wait for
  };

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

  void kernels(RankState& r, const std::vector<Kernel>& ks, int layer, int mb, Phase phase,
               const std::string& layer_name) {
    for (const auto& k : ks) {
      Label label{layer_name + "." + k.name, layer, mb, phase};
      if (k.kind == KernelKind::kCommunication)
        r.p.append(r.compute, CollectiveOp{collective_of(k.pattern), r.tp_group, k.bytes, dtype_},
                   label);
      else
        r.p.append(r.compute, ComputeOp{k.kind, k.flops, k.bytes, dtype_, k.shape}, label);
    }
  }

  // ZeRO-3: all-gathers a layer's weights on param_comm, at most one layer ahead of compute.
  EventId gather_parameters(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
    const Bytes shard_weights(l.parameters * weight_bytes_per_parameter(dtype_));
    Op& ag = r.p.append(r.param_comm,
                        CollectiveOp{CollectiveKind::kAllGather, r.dp_group, shard_weights, dtype_},
                        Label{l.name + ".zero3_gather", layer, mb, phase});
    if (r.gather_gate >= 0) ag.waits.push_back(r.gather_gate);
    return mark_end(r.p, r.param_comm);
  }

  void layer_done(RankState& r) {
    r.gather_gate = r.last_layer_end;
    r.last_layer_end = mark_end(r.p, r.compute);
  }

  void forward_unit(RankState& r, int chunk_global, int mb) {
    const auto& range = chunks_[static_cast<size_t>(chunk_global)];
    const auto& tr = sc_.training;
    if (chunk_global > 0) {
      r.p.append(r.recv_prev, RecvOp{r.prev, boundary_bytes_, 0},
                 Label{"pp.recv_activation", range.first, mb, Phase::kPipeline});
      const EventId arrived = mark_end(r.p, r.recv_prev);
      kernel_waits_.push_back(arrived);
    }
    for (int i = range.first; i <= range.last; ++i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      if (zero_ == 3 && d_ > 1 && l.parameters > 0) {
        kernel_waits_.push_back(gather_parameters(r, l, i, mb, Phase::kForward));
        memory(r, MemoryCategory::kBuffers, gathered_bytes(l), l.name + ".gathered_weights", i, mb,
               Phase::kForward);
      }
      const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
      kernels(r, l.forward, i, mb, Phase::kForward, l.name);
      attach_waits(r, before);
      memory(r, MemoryCategory::kActivations, stashed_activations(l, tr.recompute),
             l.name + ".activations", i, mb, Phase::kForward);
      if (zero_ == 3 && d_ > 1 && l.parameters > 0) {
        memory(r, MemoryCategory::kBuffers, -gathered_bytes(l), l.name + ".gathered_weights_freed",
               i, mb, Phase::kForward);
        layer_done(r);
      }
    }
    if (chunk_global + 1 < p_ * v_) {
      const EventId produced = mark_end(r.p, r.compute);
      Op& send = r.p.append(r.send_next, SendOp{r.next, boundary_bytes_, 0},
                            Label{"pp.send_activation", range.last, mb, Phase::kPipeline});
      send.waits.push_back(produced);
    }
  }

  void backward_unit(RankState& r, int chunk_global, int mb, bool last_micro_batch) {
    const auto& range = chunks_[static_cast<size_t>(chunk_global)];
    const auto& tr = sc_.training;
    if (chunk_global + 1 < p_ * v_) {
      r.p.append(r.recv_next, RecvOp{r.next, boundary_bytes_, 1},
                 Label{"pp.recv_gradient", range.last, mb, Phase::kPipeline});
      kernel_waits_.push_back(mark_end(r.p, r.recv_next));
    }
    const auto& buckets = buckets_[static_cast<size_t>(chunk_global)];
    size_t next_bucket = 0;
    for (int i = range.last; i >= range.first; --i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      if (zero_ == 3 && d_ > 1 && l.parameters > 0) {
        kernel_waits_.push_back(gather_parameters(r, l, i, mb, Phase::kBackward));
        memory(r, MemoryCategory::kBuffers, gathered_bytes(l), l.name + ".gathered_weights", i, mb,
               Phase::kBackward);
      }
      const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
      Bytes transient{0};
      if (l.recomputable && tr.recompute == Recompute::kFull) {
        kernels(r, l.forward, i, mb, Phase::kRecompute, l.name);
        transient = l.activation_bytes - l.activation_bytes_full;
      } else if (l.recomputable && tr.recompute == Recompute::kSelective) {
        kernels(r, l.selective_recompute, i, mb, Phase::kRecompute, l.name);
        transient = l.activation_bytes - l.activation_bytes_selective;
      }
      memory(r, MemoryCategory::kActivations, transient, l.name + ".recomputed", i, mb,
             Phase::kRecompute);
      kernels(r, l.backward, i, mb, Phase::kBackward, l.name);
      attach_waits(r, before);
      memory(r, MemoryCategory::kActivations, -(stashed_activations(l, tr.recompute) + transient),
             l.name + ".activations_freed", i, mb, Phase::kBackward);
      if (zero_ == 3 && d_ > 1 && l.parameters > 0) {
        memory(r, MemoryCategory::kBuffers, -gathered_bytes(l), l.name + ".gathered_weights_freed",
               i, mb, Phase::kBackward);
        layer_done(r);
        // Gradients leave as soon as they exist, every micro-batch, to stay sharded.
        const EventId ready = r.last_layer_end;
        Op& rs = r.p.append(
            r.grad_comm,
            CollectiveOp{CollectiveKind::kReduceScatter, r.dp_group,
                         Bytes(l.parameters * weight_bytes_per_parameter(dtype_)), dtype_},
            Label{l.name + ".zero3_reduce_scatter", i, mb, Phase::kGradientSync});
        rs.waits.push_back(ready);
        continue;
      }
      // Gradients are reduced only after the last micro-batch (gradient accumulation).
      if (!last_micro_batch || d_ <= 1 || !tr.overlap_grad_reduce) continue;
      while (next_bucket < buckets.size() && buckets[next_bucket].first_layer == i) {
        const auto& b = buckets[next_bucket];
        const EventId ready = mark_end(r.p, r.compute);
        Op& op = r.p.append(
            r.grad_comm, gradient_collective(r, b.bytes),
            Label{"grad_bucket." + std::to_string(chunk_global) + "." + std::to_string(next_bucket),
                  b.first_layer, mb, Phase::kGradientSync});
        op.waits.push_back(ready);
        ++next_bucket;
      }
    }
    if (last_micro_batch && d_ > 1 && !tr.overlap_grad_reduce && zero_ < 3) {
      const EventId done = mark_end(r.p, r.compute);
      for (size_t k = 0; k < buckets.size(); ++k) {
        Op& op = r.p.append(
            r.grad_comm, gradient_collective(r, buckets[k].bytes),
            Label{"grad_bucket." + std::to_string(chunk_global) + "." + std::to_string(k),
                  buckets[k].first_layer, mb, Phase::kGradientSync});
        if (k == 0) op.waits.push_back(done);
      }
    }
    if (chunk_global > 0) {
      const EventId produced = mark_end(r.p, r.compute);
      Op& send = r.p.append(r.send_prev, SendOp{r.prev, boundary_bytes_, 1},
                            Label{"pp.send_gradient", range.first, mb, Phase::kPipeline});
      send.waits.push_back(produced);
    }
  }

  // Stage 0 all-reduces a bucket; stages 1-2 reduce-scatter it (the distributed optimizer).
  CollectiveOp gradient_collective(const RankState& r, Bytes bytes) const {
    return CollectiveOp{zero_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
                        r.dp_group, bytes, dtype_};
  }

  Bytes gathered_bytes(const Layer& l) const {
    return Bytes(l.parameters * weight_bytes_per_parameter(dtype_));
  }

  // The first compute op appended since `before` waits for everything queued in kernel_waits_.
  void attach_waits(RankState& r, size_t before) {
    auto& ops = r.p.streams[static_cast<size_t>(r.compute)].ops;
    if (kernel_waits_.empty() || ops.size() <= before) return;
    auto& w = ops[before].waits;
    w.insert(w.end(), kernel_waits_.begin(), kernel_waits_.end());
    kernel_waits_.clear();
  }

  Program build_rank(int tp, int s) {
    const auto& tr = sc_.training;
    RankState r;
    kernel_waits_.clear();
    r.stage = s;
    r.p.rank = layout_.rank(tp, 0, s, 0);
    r.compute = r.p.add_stream("compute");
    r.grad_comm = r.p.add_stream("grad_comm");
    if (zero_ == 3 && d_ > 1) r.param_comm = r.p.add_stream("param_comm");
    if (p_ > 1) {
      r.send_next = r.p.add_stream("pp_send_next");
      r.send_prev = r.p.add_stream("pp_send_prev");
      r.recv_prev = r.p.add_stream("pp_recv_prev");
      r.recv_next = r.p.add_stream("pp_recv_next");
      r.prev = layout_.rank(tp, 0, (s + p_ - 1) % p_, 0);
      r.next = layout_.rank(tp, 0, (s + 1) % p_, 0);
    }
    r.tp_group = group(ParallelDim::kTensor, tp, s, "tp");
    r.dp_group = group(ParallelDim::kData, tp, s, "dp");

    // This rank's layers and its model state.
    double params = 0;
    double kernels_per_micro_batch = 0;
    buckets_.assign(chunks_.size(), {});
    const double grad_bytes = weight_bytes_per_parameter(dtype_);
    Bytes largest_bucket{0};
    for (int j = 0; j < v_; ++j) {
      const int c = j * p_ + s;
      const auto& range = chunks_[static_cast<size_t>(c)];
      for (int i = range.first; i <= range.last; ++i) {
        const Layer& l = model_.layers[static_cast<size_t>(i)];
        params += l.parameters;
        kernels_per_micro_batch += static_cast<double>(l.forward.size() + l.backward.size() +
                                                       l.selective_recompute.size() + 3);
      }
      buckets_[static_cast<size_t>(c)] =
          assign_gradient_buckets(model_, range.first, range.last, grad_bytes,
                                  tr.first_gradient_bucket, tr.gradient_bucket);
      for (const auto& b : buckets_[static_cast<size_t>(c)])
        largest_bucket = std::max(largest_bucket, b.bytes);
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

    const ModelStateBytes state = model_state_bytes(params, dtype_, tr.optimizer, zero_, d_);
    memory(r, MemoryCategory::kWeights, state.weights, "weights", -1, -1, Phase::kOther);
    memory(r, MemoryCategory::kGradients, state.gradients, "gradients", -1, -1, Phase::kOther);
    memory(r, MemoryCategory::kOptimizer, state.optimizer, "optimizer_states", -1, -1,
           Phase::kOther);
    // NCCL staging for one bucket in flight (an assumption, documented in docs/models.md).
    if (d_ > 1 && zero_ < 3)
      memory(r, MemoryCategory::kBuffers, largest_bucket, "nccl_bucket_buffer", -1, -1,
             Phase::kOther);

    const auto units = schedule_for_stage(sc_.parallelism.schedule, p_, s, v_, m_);
    for (const Unit& u : units) {
      const int c = u.chunk * p_ + s;
      if (u.kind == UnitKind::kForward)
        forward_unit(r, c, u.micro_batch);
      else
        backward_unit(r, c, u.micro_batch, u.micro_batch == m_ - 1);
    }

    // Optimizer step after every gradient collective: it reads gradients, master weights and
    // states of this rank's shard and writes them back.
    auto& comm_ops = r.p.streams[static_cast<size_t>(r.grad_comm)].ops;
    const EventId comm_done = comm_ops.empty() ? -1 : mark_end(r.p, r.grad_comm);
    const double shard = zero_ >= 1 ? params / d_ : params;
    const double state_bytes = shard * (2 * weight_bytes_per_parameter(dtype_) +
                                        2 * optimizer_bytes_per_parameter(dtype_, tr.optimizer));
    Op& opt = r.p.append(
        r.compute, ComputeOp{KernelKind::kOptimizer, Flops(0), Bytes(state_bytes), DType::kFp32},
        Label{"optimizer_step", -1, -1, Phase::kOptimizer});
    if (comm_done >= 0) opt.waits.push_back(comm_done);
    // Stages 1-2: the updated weight shards are all-gathered (2 bytes per parameter).
    if ((zero_ == 1 || zero_ == 2) && d_ > 1) {
      const EventId stepped = mark_end(r.p, r.compute);
      Op& ag = r.p.append(r.grad_comm,
                          CollectiveOp{CollectiveKind::kAllGather, r.dp_group,
                                       Bytes(params * weight_bytes_per_parameter(dtype_)), dtype_},
                          Label{"zero_weight_all_gather", -1, -1, Phase::kOptimizer});
      ag.waits.push_back(stepped);
    }
    return std::move(r.p);
  }

  const ModelGraph& model_;
  const Scenario& sc_;
  RankLayout layout_;
  int t_, p_, v_, d_, m_, zero_;
  DType dtype_;
  std::vector<ChunkRange> chunks_;
  std::vector<std::vector<GradientBucket>> buckets_;  // by global chunk, for the current rank
  Bytes boundary_bytes_{0};
  std::vector<EventId> kernel_waits_;  // events the next compute op must wait for
  std::map<std::pair<int, Rank>, GroupId> groups_;
  Job job_;
};

}  // namespace

Job build_job(const ModelGraph& model, const Scenario& scenario) {
  return StepBuilder(model, scenario).build();
}

}  // namespace dtsim
