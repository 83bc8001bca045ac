// The step builder's pipeline units (core/strategy/internal/step_builder.h): a chunk's layers
// forward and backward, their kernels and TP collectives, ZeRO-3 gathers, FP8 scaling, and the
// boundaries between stages.
#include "core/strategy/internal/step_builder.h"

namespace dtsim::strategy_internal {

// The event recorded at the end of the last op on a stream (creating it if needed).
EventId StepBuilder::mark_end(Program& p, StreamId s) {
  Op& op = p.streams[static_cast<size_t>(s)].ops.back();
  if (!op.record) op.record = p.new_event();
  return *op.record;
}

void StepBuilder::memory(RankState& r, MemoryCategory c, Bytes bytes, const std::string& name,
                         int layer, int mb, Phase phase) {
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
bool StepBuilder::async_tp_backward() const {
  const Framework f = sc_.training.framework;
  return f == Framework::kMegatronLm2021 || f == Framework::kMegatronCore || f == Framework::kNemo;
}

bool StepBuilder::overlaps_gemm(const std::vector<Kernel>& ks, size_t j, size_t* gemm,
                                Phase phase) const {
  if (ks[j].group != CommGroup::kTensor) return false;
  if (!sc_.parallelism.tp_comm_overlap) {
    if (!async_tp_backward() || phase != Phase::kBackward) return false;
    const bool column_parallel_input =
        ks[j].name.ends_with("_tp_enter.backward") || ks[j].name.ends_with("_sp_regather.backward");
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

void StepBuilder::kernels(RankState& r, const std::vector<Kernel>& ks, int layer, int mb,
                          Phase phase, const Layer& l) {
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

ChunkRange StepBuilder::fp8_blocks(const ChunkRange& range) const {
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
double StepBuilder::fp8_gemms(const ChunkRange& range) const {
  double gemms = 0;
  for (int i = range.first; i <= range.last; ++i) {
    const Layer& l = model_.layers[static_cast<size_t>(i)];
    if (l.kind != "transformer") continue;
    for (const Kernel& k : l.forward)
      if (k.kind == KernelKind::kGemm) gemms += std::max(1.0, k.shape.batch);
  }
  return gemms;
}

void StepBuilder::fp8_amax_reduction(RankState& r, double gemms, double tensors_per_gemm,
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
bool StepBuilder::sharded_layer(const RankState& r, const Layer& l) const {
  if (zero_ != 3) return false;
  for (const auto& part : r.parts)
    if (part.size > 1 && part.params(l) > 0) return true;
  return false;
}

Bytes StepBuilder::gathered_bytes(const Layer& l) const {
  return Bytes(l.parameters * weight_bytes_);
}

// ZeRO-3: all-gathers a layer's weights on param_comm, at most one layer ahead of compute.
EventId StepBuilder::gather_parameters(RankState& r, const Layer& l, int layer, int mb,
                                       Phase phase) {
  for (const auto& part : r.parts) {
    if (part.size <= 1 || part.params(l) <= 0) continue;
    const Bytes bytes(part.params(l) * weight_bytes_);
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
bool StepBuilder::gather_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
  if (!sharded_layer(r, l)) return false;
  kernel_waits_.push_back(gather_parameters(r, l, layer, mb, phase));
  memory(r, MemoryCategory::kBuffers, gathered_bytes(l), l.name + ".gathered_weights", layer, mb,
         phase);
  return true;
}

void StepBuilder::release_layer(RankState& r, const Layer& l, int layer, int mb, Phase phase) {
  memory(r, MemoryCategory::kBuffers, -gathered_bytes(l), l.name + ".gathered_weights_freed", layer,
         mb, phase);
  r.gather_gate = r.last_layer_end;
  r.last_layer_end = mark_end(r.p, r.compute);
}

// The all-gather that rebuilds a scattered activation or gradient, in line on the compute
// stream after the receive it completes.
void StepBuilder::gather_boundary(RankState& r, int layer, int mb, Phase phase) {
  Op& ag = r.p.append(
      r.compute, CollectiveOp{CollectiveKind::kAllGather, r.tp_group, boundary_full_bytes_, dtype_},
      Label{"pp.tp_all_gather", layer, mb, phase});
  ag.waits.insert(ag.waits.end(), kernel_waits_.begin(), kernel_waits_.end());
  kernel_waits_.clear();
}

void StepBuilder::forward_layers(RankState& r, const ChunkRange& range, int mb) {
  for (int i = range.first; i <= range.last; ++i) {
    const Layer& l = model_.layers[static_cast<size_t>(i)];
    const bool sharded = gather_layer(r, l, i, mb, Phase::kForward);
    const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
    // FP8: Transformer Engine casts each weight to FP8 and transposes it (for the dgrad GEMM)
    // on the first micro-batch of a step only and reuses the copy for the others
    // (Megatron-LM d98e8a64dd, megatron/core/extensions/transformer_engine.py: TELinear passes
    // is_first_microbatch to TE, which caches the FP8 weight; schedules.py sets it for the
    // first micro-batch). Read 2 bytes, write 1 + 1 per weight; the layer's norm gains and
    // biases (under 0.1% of its parameters) are counted with the GEMM weights. With FP8
    // parameters the weight is FP8 already and only its transpose is made: read 1, write 1.
    if (dtype_ == DType::kFp8 && l.kind == "transformer" && mb == 0)
      r.p.append(
          r.compute,
          ComputeOp{KernelKind::kElementwise, Flops(0),
                    Bytes((sc_.training.fp8_params ? 2.0 : weight_bytes_ + 2) * l.parameters),
                    dtype_},
          Label{l.name + ".fp8_weight_cast_transpose", i, mb, Phase::kForward});
    kernels(r, l.forward, i, mb, Phase::kForward, l);
    attach_waits(r, before);
    memory(r, MemoryCategory::kActivations,
           stashed_activations(l, layer_recompute_[static_cast<size_t>(i)]),
           l.name + ".activations", i, mb, Phase::kForward);
    if (sharded) {
      release_layer(r, l, i, mb, Phase::kForward);
    }
    if (i == fp8_blocks(range).last)
      fp8_amax_reduction(r, fp8_gemms(range), 3, "forward", i, mb, Phase::kForward);
  }
}

void StepBuilder::forward_unit(RankState& r, int chunk_global, int mb) {
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

void StepBuilder::backward_layers(RankState& r, int chunk_global, int mb, bool last_micro_batch) {
  const auto& range = chunks_[static_cast<size_t>(chunk_global)];
  const auto& tr = sc_.training;
  std::vector<size_t> next_bucket(r.parts.size(), 0);
  for (int i = range.last; i >= range.first; --i) {
    const Layer& l = model_.layers[static_cast<size_t>(i)];
    const bool sharded = gather_layer(r, l, i, mb, Phase::kBackward);
    const size_t before = r.p.streams[static_cast<size_t>(r.compute)].ops.size();
    Bytes transient{0};
    const Recompute recompute = layer_recompute_[static_cast<size_t>(i)];
    if (l.recomputable && recompute == Recompute::kFull) {
      kernels(r, l.forward, i, mb, Phase::kRecompute, l);
      transient = l.activation_bytes - l.activation_bytes_full;
    } else if (l.recomputable && recompute == Recompute::kSelective) {
      kernels(r, l.selective_recompute, i, mb, Phase::kRecompute, l);
      transient = l.activation_bytes - l.activation_bytes_selective;
    }
    memory(r, MemoryCategory::kActivations, transient, l.name + ".recomputed", i, mb,
           Phase::kRecompute);
    kernels(r, l.backward, i, mb, Phase::kBackward, l);
    attach_waits(r, before);
    if (i == fp8_blocks(range).first)
      fp8_amax_reduction(r, fp8_gemms(range), 2, "backward", i, mb, Phase::kBackward);
    memory(r, MemoryCategory::kActivations, -(stashed_activations(l, recompute) + transient),
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
void StepBuilder::backward_unit(RankState& r, int chunk_global, int mb, bool last_micro_batch,
                                bool recv_carried) {
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

// The first compute op appended since `before` waits for everything queued in kernel_waits_.
void StepBuilder::attach_waits(RankState& r, size_t before) {
  auto& ops = r.p.streams[static_cast<size_t>(r.compute)].ops;
  if (kernel_waits_.empty() || ops.size() <= before) return;
  auto& w = ops[before].waits;
  w.insert(w.end(), kernel_waits_.begin(), kernel_waits_.end());
  kernel_waits_.clear();
}

}  // namespace dtsim::strategy_internal
