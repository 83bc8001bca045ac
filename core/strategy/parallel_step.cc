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
#include "core/strategy/internal/step_builder.h"

#include "core/hardware/network_topology.h"

namespace dtsim {
namespace strategy_internal {

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
         !network_topology(c).shares_links_between_replicas() && net.oversubscription <= 1 &&
         net.pod_oversubscription <= 1;
}

StepBuilder::StepBuilder(const ModelGraph& model, const Scenario& sc)
    : model_(model),
      sc_(sc),
      layout_(rank_layout(sc.parallelism)),
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
      weight_bytes_(weight_bytes_per_parameter(dtype_, sc.training.fp8_params)),
      chunks_(pipeline_chunks(model, p_, v_, sc.parallelism.layers_per_stage)),
      compression_(sc.training.compression) {
  job_.world_size = sc.cluster.total_gpus();
  for (const auto& l : model.layers)
    tied_parameters_ = std::max(tied_parameters_, l.tied_parameters);
  layer_recompute_.assign(model.layers.size(), sc.training.recompute);
  if (sc.training.recompute == Recompute::kFull && sc.training.recompute_layers >= 0)
    for (const auto& chunk : chunks_) {
      int recomputable = 0;
      for (int i = chunk.first; i <= chunk.last; ++i)
        if (model.layers[static_cast<size_t>(i)].recomputable &&
            recomputable++ >= sc.training.recompute_layers)
          layer_recompute_[static_cast<size_t>(i)] = Recompute::kNone;
    }
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

Job StepBuilder::build(const JobOptions& options) {
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
  while (nominal < d_ && std::find(perturbed.begin(), perturbed.end(), nominal) != perturbed.end())
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

Program StepBuilder::build_one(Rank rank) {
  if (rank < 0 || rank >= world())
    throw RuntimeError("rank " + std::to_string(rank) + " is not in a world of " +
                       std::to_string(world()) + " ranks");
  create_groups();
  return build_rank(rank);
}

// A group, created once: `name` and the ranks.
GroupId StepBuilder::group(const std::string& name, std::vector<Rank> ranks) {
  std::sort(ranks.begin(), ranks.end());
  auto key = std::make_pair(name, ranks.front());
  auto it = groups_.find(key);
  if (it != groups_.end()) return it->second;
  const auto id = static_cast<GroupId>(job_.groups.size());
  job_.groups.push_back(Group{id, name, std::move(ranks)});
  groups_.emplace(key, id);
  return id;
}

StepBuilder::RankGroups StepBuilder::rank_groups(int tp, int cp, int s, int dp) {
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
void StepBuilder::create_groups() {
  for (int dp = 0; dp < d_; ++dp)
    for (int s = 0; s < p_; ++s)
      for (int c = 0; c < cp_; ++c)
        for (int i = 0; i < t_; ++i) rank_groups(i, c, s, dp);
}

// Dense parameters; with a pipeline the last stage also holds its copy of tied weights
// (Megatron-LM's output head shares the word embedding and keeps a copy there).
double StepBuilder::dense_parameters(const Layer& l) const {
  return l.parameters - l.expert_parameters + (p_ > 1 ? l.tied_parameters : 0);
}

// The rank's streams, neighbours and groups, and the parts its gradients are reduced over.
StepBuilder::RankGroups StepBuilder::open_rank(RankState& r, int tp, int cp, int s, int dp) {
  r.compute = r.p.add_stream("compute");
  r.grad_comm = r.p.add_stream("grad_comm");
  if (zero_ == 3 && d_ * cp_ > 1) r.param_comm = r.p.add_stream("param_comm");
  if (sc_.parallelism.tp_comm_overlap || (async_tp_backward() && sc_.parallelism.tensor.value > 1))
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

  return groups;
}

// This rank's layers: its parameters in each part, its gradient buckets, its kernels.
StepBuilder::RankParameters StepBuilder::assign_parameters(RankState& r, int s) {
  const auto& tr = sc_.training;
  RankParameters out;
  out.part_params.assign(r.parts.size(), 0.0);
  // This rank's layers, its gradient buckets and its model state.
  const double grad_bytes = gradient_bytes_per_parameter(grad_dtype_);
  for (auto& part : r.parts) part.buckets.assign(chunks_.size(), {});
  for (int j = 0; j < v_; ++j) {
    const int c = j * p_ + s;
    const auto& range = chunks_[static_cast<size_t>(c)];
    for (int i = range.first; i <= range.last; ++i) {
      const Layer& l = model_.layers[static_cast<size_t>(i)];
      for (size_t k = 0; k < r.parts.size(); ++k) out.part_params[k] += r.parts[k].params(l);
      out.kernels_per_micro_batch +=
          static_cast<double>(l.forward.size() + l.backward.size() + l.selective_recompute.size() +
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
        throw InputError(Diagnostic{sc_.entries.count("training.gradient_bucket")
                                        ? sc_.entries.at("training.gradient_bucket").where
                                        : SourceLocation{sc_.file, 0, 0},
                                    "training.gradient_bucket",
                                    format_bytes(Bytes(chunk_bytes)) +
                                        " of gradients in buckets of " +
                                        format_bytes(tr.gradient_bucket) + " would make about " +
                                        std::to_string(static_cast<int64_t>(count)) +
                                        " buckets on one rank; dtsim handles at most " +
                                        std::to_string(static_cast<int64_t>(kMaxGradientBuckets)) +
                                        ". Raise training.gradient_bucket"});
      auto& buckets = part.buckets[static_cast<size_t>(c)];
      buckets = assign_gradient_buckets(model_, range.first, range.last, grad_bytes,
                                        tr.first_gradient_bucket, tr.gradient_bucket, part.params);
      if (part.size > 1)
        for (const auto& b : buckets) out.largest_bucket = std::max(out.largest_bucket, b.bytes);
    }
  }
  return out;
}

// Refuses a rank, or a Job, of more ops than dtsim simulates, and counts this rank's.
void StepBuilder::check_op_budget(double kernels_per_micro_batch) {
  const auto& tr = sc_.training;
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
}

// The rank's weights, gradients, optimizer states and buffers, as memory events.
StepBuilder::RankModelState StepBuilder::place_model_state(RankState& r,
                                                           const RankParameters& params, int s) {
  const auto& tr = sc_.training;
  RankModelState out;
  for (size_t k = 0; k < r.parts.size(); ++k) {
    const ModelStateBytes s_k =
        model_state_bytes(params.part_params[k], dtype_, grad_dtype_, tr.optimizer, zero_,
                          r.parts[k].size, tr.fp8_params);
    out.state.weights += s_k.weights;
    out.state.gradients += s_k.gradients;
    out.state.optimizer += s_k.optimizer;
    out.optimizer_shard +=
        zero_ >= 1 ? params.part_params[k] / r.parts[k].size : params.part_params[k];
  }
  memory(r, MemoryCategory::kWeights, out.state.weights, "weights", -1, -1, Phase::kOther);
  memory(r, MemoryCategory::kGradients, out.state.gradients, "gradients", -1, -1, Phase::kOther);
  memory(r, MemoryCategory::kOptimizer, out.state.optimizer, "optimizer_states", -1, -1,
         Phase::kOther);
  // Weight stashing (PipeDream, Narayanan et al. 2019, section 3.3): each micro-batch in flight
  // on a stage runs its backward with the weights its forward used, so the stage keeps one
  // version per micro-batch in flight; 2BW keeps two (Narayanan et al. 2021, section 3.1).
  const int versions = weight_versions(s);
  if (versions > 1)
    memory(r, MemoryCategory::kWeights, out.state.weights * static_cast<double>(versions - 1),
           "stashed_weight_versions", -1, -1, Phase::kOther);
  // Error feedback's residual: one gradient's worth for every reduced parameter.
  if (compression_.error_feedback) {
    double reduced = 0;
    for (size_t k = 0; k < r.parts.size(); ++k)
      if (r.parts[k].size > 1) reduced += params.part_params[k];
    memory(r, MemoryCategory::kGradients,
           Bytes(reduced * gradient_bytes_per_parameter(grad_dtype_)), "error_feedback_residual",
           -1, -1, Phase::kOther);
  }
  // The runtime's own memory (docs/models.md): CUDA context, library workspaces, allocator
  // slack; an assumed figure until measured.
  memory(r, MemoryCategory::kBuffers, tr.runtime_reserve, "runtime_reserve", -1, -1, Phase::kOther);
  // NCCL staging for one bucket in flight (an assumption, documented in docs/models.md).
  if (zero_ < 3)
    memory(r, MemoryCategory::kBuffers, params.largest_bucket, "nccl_bucket_buffer", -1, -1,
           Phase::kOther);

  return out;
}

// The stage's forward and backward units in its schedule's order, and what runs after the last.
void StepBuilder::run_schedule(RankState& r, int s, const RankModelState& state,
                               const RankGroups& groups) {
  const Schedule schedule = sc_.parallelism.schedule;
  const auto units = schedule_for_stage(schedule, p_, s, v_, m_);
  // PipeDream: the previous step's micro-batches still in flight hold their stashed
  // activations when the step starts; they are handed to the next step at its end.
  int carried = 0;
  for (const Unit& u : units) carried += u.carried ? 1 : 0;
  Bytes stage_activations{0};
  for (int i = chunks_[static_cast<size_t>(s)].first; i <= chunks_[static_cast<size_t>(s)].last;
       ++i)
    stage_activations += stashed_activations(model_.layers[static_cast<size_t>(i)],
                                             layer_recompute_[static_cast<size_t>(i)]);
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
    if (update_per_micro_batch)
      optimizer_step(r, state.state, state.optimizer_shard, groups, u.micro_batch);
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
}

// After the backward passes: the tied embedding's gradients, the optimizer step (once per step
// unless PipeDream's asynchronous schedule ran one per micro-batch) and ZeRO's weight gathers.
void StepBuilder::finish_step(RankState& r, const RankParameters& params,
                              const RankModelState& state, const RankGroups& groups) {
  // Tied weights: the first and last stage all-reduce the shared matrix's gradients after
  // the data-parallel reduction (Megatron-LM's _allreduce_embedding_grads), full size.
  if (groups.embedding >= 0) {
    const EventId done = mark_end(r.p, r.compute);
    Op& ar =
        r.p.append(r.grad_comm,
                   CollectiveOp{CollectiveKind::kAllReduce, groups.embedding,
                                Bytes(tied_parameters_ * gradient_bytes_per_parameter(grad_dtype_)),
                                grad_dtype_},
                   Label{"tied_embedding_grad_all_reduce", -1, -1, Phase::kGradientSync});
    ar.waits.push_back(done);
  }

  if (sc_.parallelism.schedule != Schedule::kPipeDreamAsync)
    optimizer_step(r, state.state, state.optimizer_shard, groups, -1);
  // Stages 1-2: the updated weight shards are all-gathered (2 bytes per parameter, 1 with FP8
  // parameters).
  if (zero_ == 1 || zero_ == 2) {
    const EventId stepped = mark_end(r.p, r.compute);
    for (size_t k = 0; k < r.parts.size(); ++k) {
      if (r.parts[k].size <= 1 || params.part_params[k] <= 0) continue;
      Op& ag = r.p.append(r.grad_comm,
                          CollectiveOp{CollectiveKind::kAllGather, r.parts[k].group,
                                       Bytes(params.part_params[k] * weight_bytes_), dtype_},
                          Label{"zero_weight_all_gather", -1, -1, Phase::kOptimizer});
      ag.waits.push_back(stepped);
    }
  }
}

Program StepBuilder::build_rank(Rank rank) {
  const auto [tp, cp, s, dp] = layout_.coordinates(rank);
  RankState r;
  kernel_waits_.clear();
  r.p.rank = rank;
  const RankGroups groups = open_rank(r, tp, cp, s, dp);
  const RankParameters params = assign_parameters(r, s);
  check_op_budget(params.kernels_per_micro_batch);
  const RankModelState state = place_model_state(r, params, s);
  // Each step starts by zeroing the gradient buffer the backward passes accumulate into
  // (Megatron-LM d98e8a64dd, megatron/training/training.py `train_step`: zero_grad_buffer() on
  // every model chunk; param_and_grad_buffer.py `reset`: grad_data.zero_()): a write of every
  // local gradient. ZeRO-3 has no persistent gradient buffer (each layer's gradients leave as
  // they are made). PyTorch's optimizer.zero_grad() sets gradients to None (the default since
  // torch 2.0) and launches nothing.
  if (megatron_optimizer() && zero_ < 3) {
    double local_params = 0;
    for (double n : params.part_params) local_params += n;
    r.p.append(
        r.compute,
        ComputeOp{KernelKind::kElementwise, Flops(0),
                  Bytes(local_params * gradient_bytes_per_parameter(grad_dtype_)), grad_dtype_},
        Label{"zero_grad_buffer", -1, -1, Phase::kOther});
  }
  run_schedule(r, s, state, groups);
  finish_step(r, params, state, groups);
  return std::move(r.p);
}

}  // namespace strategy_internal

using strategy_internal::StepBuilder;

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
