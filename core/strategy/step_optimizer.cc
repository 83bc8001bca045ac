// The step builder's optimizer step (core/strategy/internal/step_builder.h): the kernels after
// the gradient collectives, and what waits for the backward pass.
#include "core/strategy/internal/step_builder.h"

namespace dtsim::strategy_internal {

int StepBuilder::weight_versions(int s) const {
  return dtsim::weight_versions(sc_.parallelism.schedule, p_, s, m_);
}

// The optimizer step after the gradient collectives (mb: the micro-batch whose gradients it
// applies under pipedream-async, else -1).
void StepBuilder::optimizer_step(RankState& r, const ModelStateBytes& state, double optimizer_shard,
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
  const bool mixed = weight_bytes_ < 4;
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
    const double updated_bytes =
        optimizer_bytes_per_parameter(dtype_, tr.optimizer) + (mixed ? 0 : weight_bytes_);
    step_kernel("optimizer_step", KernelKind::kOptimizer,
                optimizer_shard * (4 + 2 * updated_bytes));
    // Mixed precision: the updated fp32 master weights are copied into the 16-bit weights
    // (optimizer.py / distrib_optimizer.py `_copy_main_params_to_model_params`): read 4,
    // write 2.
    if (mixed)
      step_kernel("main_params_to_model_params", KernelKind::kElementwise,
                  optimizer_shard * (4 + weight_bytes_));
  } else {
    step_kernel("optimizer_step", KernelKind::kOptimizer,
                optimizer_shard * (grad_bytes_per_param + weight_bytes_ +
                                   2 * optimizer_bytes_per_parameter(dtype_, tr.optimizer)));
  }
}

// The decompression queued by bucket_sync, after the last backward, pass by pass.
void StepBuilder::run_after_backward(RankState& r) {
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
bool StepBuilder::megatron_optimizer() const {
  const Framework f = sc_.training.framework;
  return f == Framework::kMegatronLm2021 || f == Framework::kMegatronCore || f == Framework::kNemo;
}

}  // namespace dtsim::strategy_internal
