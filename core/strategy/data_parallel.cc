// Data parallelism with bucketed, overlapped gradient all-reduce (PyTorch DDP; Li et al.,
// VLDB 2020, "PyTorch Distributed"), gradient accumulation and activation recomputation.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/strategy/model_state.h"
#include "core/strategy/strategy.h"

namespace dtsim {

std::vector<GradientBucket> assign_gradient_buckets(const ModelGraph& model,
                                                    double grad_bytes_per_param, Bytes first_cap,
                                                    Bytes cap) {
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  bool has_open = false;
  for (int i = static_cast<int>(model.layers.size()) - 1; i >= 0; --i) {
    const double params = model.layers[static_cast<size_t>(i)].parameters;
    if (params <= 0) continue;
    if (!has_open) {
      open = GradientBucket{i, i, Bytes(0)};
      has_open = true;
    }
    open.first_layer = i;
    open.bytes += Bytes(params * grad_bytes_per_param);
    const Bytes limit = buckets.empty() ? first_cap : cap;
    if (open.bytes >= limit) {
      buckets.push_back(open);
      has_open = false;
    }
  }
  if (has_open) buckets.push_back(open);
  return buckets;
}

namespace {

void emit_kernels(Program& p, StreamId s, const std::vector<Kernel>& kernels, DType dtype,
                  int layer, int micro_batch, Phase phase, const std::string& layer_name) {
  for (const auto& k : kernels) {
    p.append(s, ComputeOp{k.kind, k.flops, k.bytes, dtype},
             Label{layer_name + "." + k.name, layer, micro_batch, phase});
  }
}

void emit_memory(Program& p, StreamId s, MemoryCategory c, Bytes bytes, const std::string& name,
                 int layer, int micro_batch, Phase phase) {
  if (bytes.value() == 0) return;
  p.append(s, MemoryOp{c, bytes}, Label{name, layer, micro_batch, phase});
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

}  // namespace

Job build_data_parallel_job(const ModelGraph& model, const Scenario& sc) {
  const auto& tr = sc.training;
  const int dp = sc.parallelism.data.value;
  const int64_t micro_batches = sc.micro_batches();
  const DType dtype = tr.precision;
  const double grad_bytes = weight_bytes_per_parameter(dtype);
  const double params = model.parameters();

  // Guard against inputs that are valid but would need gigabytes of ops (a global batch of a
  // million micro-batches): each op costs about 100 bytes and a microsecond to simulate.
  double kernels_per_micro_batch = 0;
  for (const auto& l : model.layers)
    kernels_per_micro_batch += static_cast<double>(l.forward.size() + l.backward.size() +
                                                   l.selective_recompute.size() + 3);
  const double ops = kernels_per_micro_batch * static_cast<double>(micro_batches);
  if (ops > kMaxOpsPerStep)
    throw InputError(Diagnostic{
        tr.global_batch_size.where, "training.global_batch_size",
        "each replica would run " + std::to_string(micro_batches) + " micro-batches of " +
            std::to_string(static_cast<int64_t>(kernels_per_micro_batch)) + " kernels, about " +
            std::to_string(static_cast<int64_t>(ops / 1e6)) +
            " M ops per step; dtsim simulates at most " +
            std::to_string(static_cast<int64_t>(kMaxOpsPerStep / 1e6)) +
            " M. Raise training.micro_batch_size or lower the global batch"});

  Job job;
  job.world_size = sc.cluster.total_gpus();
  Group dp_group{0, "dp", {}};
  dp_group.ranks.resize(static_cast<size_t>(dp));
  std::iota(dp_group.ranks.begin(), dp_group.ranks.end(), 0);
  job.groups.push_back(dp_group);

  Program p;
  p.rank = 0;
  const StreamId compute = p.add_stream("compute");
  const StreamId comm = p.add_stream("grad_comm");

  // Model state lives for the whole step.
  ModelStateBytes state =
      model_state_bytes(params, dtype, tr.optimizer, sc.parallelism.zero_stage, dp);
  emit_memory(p, compute, MemoryCategory::kWeights, state.weights, "weights", -1, -1,
              Phase::kOther);
  emit_memory(p, compute, MemoryCategory::kGradients, state.gradients, "gradients", -1, -1,
              Phase::kOther);
  emit_memory(p, compute, MemoryCategory::kOptimizer, state.optimizer, "optimizer_states", -1, -1,
              Phase::kOther);

  const auto buckets =
      assign_gradient_buckets(model, grad_bytes, tr.first_gradient_bucket, tr.gradient_bucket);
  // NCCL staging for one bucket in flight (an assumption, documented in docs/models.md).
  Bytes largest_bucket{0};
  for (const auto& b : buckets) largest_bucket = std::max(largest_bucket, b.bytes);
  if (dp > 1)
    emit_memory(p, compute, MemoryCategory::kBuffers, largest_bucket, "nccl_bucket_buffer", -1, -1,
                Phase::kOther);

  const int n_layers = static_cast<int>(model.layers.size());
  EventId last_comm_event = -1;
  EventId backward_done = -1;
  for (int64_t mb = 0; mb < micro_batches; ++mb) {
    const int m = static_cast<int>(mb);
    const bool last_micro_batch = mb + 1 == micro_batches;
    for (int i = 0; i < n_layers; ++i) {
      const Layer& l = model.layers[static_cast<size_t>(i)];
      emit_kernels(p, compute, l.forward, dtype, i, m, Phase::kForward, l.name);
      emit_memory(p, compute, MemoryCategory::kActivations, stashed_activations(l, tr.recompute),
                  l.name + ".activations", i, m, Phase::kForward);
    }
    // Buckets in the order they become ready; index of the next bucket to launch.
    size_t next_bucket = 0;
    for (int i = n_layers - 1; i >= 0; --i) {
      const Layer& l = model.layers[static_cast<size_t>(i)];
      Bytes transient{0};
      if (l.recomputable && tr.recompute == Recompute::kFull) {
        emit_kernels(p, compute, l.forward, dtype, i, m, Phase::kRecompute, l.name);
        transient = l.activation_bytes - l.activation_bytes_full;
      } else if (l.recomputable && tr.recompute == Recompute::kSelective) {
        emit_kernels(p, compute, l.selective_recompute, dtype, i, m, Phase::kRecompute, l.name);
        transient = l.activation_bytes - l.activation_bytes_selective;
      }
      emit_memory(p, compute, MemoryCategory::kActivations, transient, l.name + ".recomputed", i, m,
                  Phase::kRecompute);
      emit_kernels(p, compute, l.backward, dtype, i, m, Phase::kBackward, l.name);
      emit_memory(p, compute, MemoryCategory::kActivations,
                  -(stashed_activations(l, tr.recompute) + transient),
                  l.name + ".activations_freed", i, m, Phase::kBackward);
      // Gradients are reduced only after the last micro-batch (gradient accumulation).
      if (!last_micro_batch || dp <= 1 || !tr.overlap_grad_reduce) continue;
      while (next_bucket < buckets.size() && buckets[next_bucket].first_layer == i) {
        const auto& b = buckets[next_bucket];
        Op& producer = p.streams[static_cast<size_t>(compute)].ops.back();
        if (!producer.record) producer.record = p.new_event();
        const EventId ready = *producer.record;
        Op& ar = p.append(comm, CollectiveOp{CollectiveKind::kAllReduce, 0, b.bytes, dtype},
                          Label{"grad_bucket." + std::to_string(next_bucket), b.first_layer, m,
                                Phase::kGradientSync});
        ar.waits.push_back(ready);
        ++next_bucket;
      }
    }
    if (last_micro_batch && dp > 1 && !tr.overlap_grad_reduce) {
      Op& producer = p.streams[static_cast<size_t>(compute)].ops.back();
      backward_done =
          producer.record ? *producer.record : (producer.record = p.new_event(), *producer.record);
      for (size_t k = 0; k < buckets.size(); ++k) {
        Op& ar =
            p.append(comm, CollectiveOp{CollectiveKind::kAllReduce, 0, buckets[k].bytes, dtype},
                     Label{"grad_bucket." + std::to_string(k), buckets[k].first_layer, m,
                           Phase::kGradientSync});
        if (k == 0) ar.waits.push_back(backward_done);
      }
    }
  }
  if (!p.streams[static_cast<size_t>(comm)].ops.empty()) {
    Op& last = p.streams[static_cast<size_t>(comm)].ops.back();
    last.record = p.new_event();
    last_comm_event = *last.record;
  }

  // Optimizer step: reads gradients, master weights and states, writes them back.
  const double state_bytes = params * (2 * weight_bytes_per_parameter(dtype) +
                                       2 * optimizer_bytes_per_parameter(dtype, tr.optimizer));
  Op& opt = p.append(compute,
                     ComputeOp{KernelKind::kOptimizer, Flops(0), Bytes(state_bytes), DType::kFp32},
                     Label{"optimizer_step", -1, -1, Phase::kOptimizer});
  if (last_comm_event >= 0) opt.waits.push_back(last_comm_event);

  job.programs.push_back(std::move(p));
  return job;
}

Job build_job(const ModelGraph& model, const Scenario& scenario) {
  // Tensor, pipeline, context and expert parallelism arrive with the parallel-strategies
  // issue; the scenario loader rejects them until then.
  return build_data_parallel_job(model, scenario);
}

}  // namespace dtsim
