// The training section's binder: batch sizes against the data-parallel size, and the precision
// against the GPU.
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {

// Micro-batches per replica per step: a bound far above real runs (Megatron-LM's GPT-3 175B runs
// 1536 / (1 x 8) = 192 per pipeline) and far below where a counter wraps (2^31).
constexpr int64_t kMaxMicroBatchesPerReplica = 1'000'000;

void bind_training(const Reader& r, const ParallelismConfig& par, TrainingConfig& t,
                   DiagnosticSink& sink) {
  t.micro_batch_size = {r.value<int64_t>("training.micro_batch_size"),
                        r.where("training.micro_batch_size")};
  t.global_batch_size = {
      r.get_or<int64_t>("training.global_batch_size", t.micro_batch_size.value * par.data.value),
      r.where("training.global_batch_size")};
  t.precision = kDTypeNames.from_valid(r.value<std::string>("training.precision"));
  t.recompute = kRecomputeNames.from_valid(r.value<std::string>("training.recompute"));
  t.optimizer = kOptimizerNames.from_valid(r.value<std::string>("training.optimizer"));
  t.gradient_bucket = r.value<Bytes>("training.gradient_bucket");
  t.first_gradient_bucket = r.value<Bytes>("training.first_gradient_bucket");
  const std::string grad_dtype = r.value<std::string>("training.grad_dtype");
  t.grad_dtype_auto = grad_dtype == "auto";
  t.grad_dtype =
      t.grad_dtype_auto ? default_grad_dtype(t.precision) : kDTypeNames.from_valid(grad_dtype);
  t.overlap_grad_reduce = r.value<bool>("training.overlap_grad_reduce");
  t.flash_attention = r.value<bool>("training.flash_attention");
  t.runtime_reserve = r.value<Bytes>("training.runtime_reserve");
  t.sync = r.value<std::string>("training.sync");
  t.compression = r.value<std::string>("training.compression");
  const int64_t per_step = t.micro_batch_size.value * par.data.value;
  if (per_step > 0 && t.global_batch_size.value % per_step != 0) {
    int64_t lo = t.global_batch_size.value / per_step * per_step;
    sink.add(
        t.global_batch_size.where.known() ? t.global_batch_size.where : t.micro_batch_size.where,
        "training.global_batch_size",
        "global batch " + std::to_string(t.global_batch_size.value) +
            " is not divisible by micro_batch_size x data = " +
            std::to_string(t.micro_batch_size.value) + " x " + std::to_string(par.data.value) +
            " = " + std::to_string(per_step) + "; use " +
            (lo > 0 ? std::to_string(lo) + " or " : std::string()) + std::to_string(lo + per_step));
  } else if (per_step > 0 && t.global_batch_size.value / per_step > kMaxMicroBatchesPerReplica) {
    sink.add(
        t.global_batch_size.where.known() ? t.global_batch_size.where : t.micro_batch_size.where,
        "training.global_batch_size",
        "global batch " + std::to_string(t.global_batch_size.value) + " makes " +
            std::to_string(t.global_batch_size.value / per_step) +
            " micro-batches per replica per step; dtsim simulates at most " +
            std::to_string(kMaxMicroBatchesPerReplica) +
            " (real runs use tens to thousands). Raise training.micro_batch_size or lower the "
            "global batch");
  }
}

void check_precision(const Reader& r, const ClusterConfig& c, const TrainingConfig& t,
                     DiagnosticSink& sink) {
  if (!c.gpu.name.empty() && !c.gpu.supports(t.precision) && !c.gpu.peak.empty()) {
    std::string supported;  // the formats with a peak, as `dtsim catalog gpus --json` lists them
    for (const auto& [dtype, rate] : c.gpu.peak)
      supported += (supported.empty() ? "" : ", ") + std::string(to_string(dtype));
    sink.add(r.where("training.precision"), "training.precision",
             c.gpu.name + " has no " + std::string(to_string(t.precision)) +
                 " peak in the catalog (the device lacks the format or its vendor publishes no "
                 "figure); choose one it has: " +
                 supported);
  }
}

}  // namespace dtsim::scenario_binding
