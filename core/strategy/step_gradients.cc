// The step builder's gradient synchronisation (core/strategy/internal/step_builder.h): buckets,
// their preparation and collectives, and gradient compression.
#include "core/strategy/internal/step_builder.h"

namespace dtsim::strategy_internal {

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
bool StepBuilder::prepare_bucket(RankState& r, Bytes bucket, const Label& label) {
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
CollectiveOp StepBuilder::gradient_collective(const Part& part, Bytes bytes) const {
  return CollectiveOp{zero_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
                      part.group, bytes, grad_dtype_};
}

// One bucket's data-parallel reduction once backward has produced it: the collective, or under
// training.compression the compress kernels (on the compute stream, in line with backward, as
// a DDP communication hook runs), the compressed collectives, and the decompression that the
// optimizer waits for (queued in r.after_backward, run after the last backward).
void StepBuilder::bucket_sync(RankState& r, const Part& part, int chunk, size_t k,
                              const GradientBucket& b, int mb) {
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
      kernel(KernelKind::kGemm, 2 * rank * matrix, (matrix + p_elems + q_elems) * eb, "powersgd_p");
      collective(CollectiveKind::kAllReduce, p_elems * eb, grad_dtype_, "powersgd_p_all_reduce",
                 mark_end(r.p, r.compute));
      r.after_backward.push_back(AfterBackward{
          0, mark_end(r.p, r.grad_comm),
          ComputeOp{KernelKind::kGemm, Flops(2 * rank * matrix + 2 * rank * p_elems),
                    Bytes((matrix + 2 * p_elems + q_elems) * eb), grad_dtype_},
          Label{label.name + ".powersgd_q", label.layer, mb, Phase::kGradientSync},
          CollectiveOp{CollectiveKind::kAllReduce, part.group, Bytes(q_elems * eb), grad_dtype_}});
      deferred(1, KernelKind::kGemm, 2 * rank * matrix, (matrix + p_elems + q_elems) * eb,
               "powersgd_decompress", -1);
      break;
    }
  }
}

StepBuilder::LowRank StepBuilder::low_rank(const GradientBucket& b) const {
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

void StepBuilder::collect_layer_matrices() {
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

Label StepBuilder::bucket_label(const Part& part, int chunk, size_t k, const GradientBucket& b,
                                int mb) {
  return Label{std::string(part.expert ? "expert_grad_bucket." : "grad_bucket.") +
                   std::to_string(chunk) + "." + std::to_string(k),
               b.first_layer, mb, Phase::kGradientSync};
}

}  // namespace dtsim::strategy_internal
