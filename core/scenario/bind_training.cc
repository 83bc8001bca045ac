// The training section's binder: batch sizes against the data-parallel size, the precision
// against the GPU, and the framework profile's defaults.
#include "core/scenario/internal/binders.h"

#include <algorithm>

namespace dtsim::scenario_binding {
namespace {

// What a framework does by default, for the keys it governs; empty: the schema's default. Each
// figure cites the code or documentation it comes from.
struct FrameworkDefaults {
  std::optional<bool> overlap_grad_reduce;
  std::optional<Bytes> gradient_bucket, first_gradient_bucket;
  std::optional<bool> flash_attention;
  std::optional<bool> moe_permute_fusion, moe_router_fusion;
};

// Megatron-LM's whole-model gradient buffer as one bucket: larger than any model's gradients.
constexpr double kWholeModel = 1e15;

FrameworkDefaults framework_defaults(Framework f, int data_parallel, int zero_stage,
                                     DType grad_dtype) {
  FrameworkDefaults d;
  switch (f) {
    case Framework::kCustom:
      break;
    case Framework::kMegatronLm2021:
      // NVIDIA/Megatron-LM at 9da6e975de (2021-12-30): megatron/training.py train_step calls
      // allreduce_gradients() after forward_backward_func returns (no overlap with backward);
      // megatron/model/distributed.py DistributedDataParallel.allreduce_gradients all-reduces
      // the one contiguous gradient buffer per dtype (--DDP-impl local, the default): a single
      // bucket. Attention is the unfused softmax path (FlashAttention appeared in 2022).
      d.overlap_grad_reduce = false;
      d.gradient_bucket = d.first_gradient_bucket = Bytes(kWholeModel);
      d.flash_attention = false;
      break;
    case Framework::kMegatronCore:
    case Framework::kNemo: {
      // NVIDIA/Megatron-LM at d98e8a64dd (2026-08-22): megatron/training/arguments.py
      // --overlap-grad-reduce defaults to False; megatron/core/distributed/
      // distributed_data_parallel_config.py bucket_size "defaults to max(40000000, 1000000 x
      // dp_size) parameters", with no smaller first bucket. Attention runs Transformer Engine's
      // fused kernels (--attention-backend auto).
      // NeMo 2 recipes run Megatron-core with the overlaps on: NVIDIA/NeMo at 0189a3b38d,
      // nemo/collections/llm/recipes/llama3_70b.py trainer(): DistributedDataParallelConfig(
      // grad_reduce_in_fp32=True, overlap_grad_reduce=True, overlap_param_gather=True), and the
      // distributed optimizer (ZeRO-1 here; recipes/optim/adam.py at 06cca550af,
      // use_distributed_optimizer=True; bind_parallelism.cc).
      const double params = std::max(40e6, 1e6 * data_parallel);
      d.overlap_grad_reduce = f == Framework::kNemo;
      d.gradient_bucket = d.first_gradient_bucket = Bytes(params * bytes_per_element(grad_dtype));
      d.flash_attention = true;
      // Megatron-core's MoE layer permutes tokens and routes with separate PyTorch operations
      // unless --moe-permute-fusion / --moe-router-fusion ask for Transformer Engine's fused
      // kernels; both flags default to off (TransformerConfig moe_permute_fusion and
      // moe_router_fusion = False) and neither existed before 2025 (Megatron-core v0.9,
      // tag core_r0.9.0, megatron/core/transformer/moe/moe_utils.py permute/unpermute and
      // router.py). NeMo's Mixtral configs leave them at Megatron's default (NVIDIA/NeMo at
      // 8cfedd7203, nemo/collections/llm/gpt/model/mixtral.py sets neither).
      d.moe_permute_fusion = false;
      d.moe_router_fusion = false;
      break;
    }
    case Framework::kPytorchDdp:
      // PyTorch DistributedDataParallel (pytorch.org/docs/1.7.0, torch.nn.parallel.
      // DistributedDataParallel: bucket_cap_mb=25; the reducer's first bucket is 1 MiB,
      // torch/csrc/distributed/c10d/reducer.hpp kDefaultFirstBucketBytes): buckets all-reduce
      // from autograd hooks as backward produces them, overlapped.
      d.overlap_grad_reduce = true;
      d.gradient_bucket = Bytes(25.0 * 1024 * 1024);
      d.first_gradient_bucket = Bytes(1.0 * 1024 * 1024);
      break;
    case Framework::kFsdp:
      // PyTorch FSDP (torch.distributed.fsdp.FullyShardedDataParallel: sharding_strategy
      // defaults to FULL_SHARD, ZeRO-3; backward_prefetch BACKWARD_PRE): gradients are
      // reduce-scattered per wrapped unit during backward, overlapped. dtsim's ZeRO-3 builds that
      // (core/strategy/parallel_step.cc); the bucket is PyTorch DDP's.
      d.overlap_grad_reduce = true;
      d.gradient_bucket = Bytes(25.0 * 1024 * 1024);
      d.first_gradient_bucket = Bytes(1.0 * 1024 * 1024);
      break;
    case Framework::kDeepspeed: {
      // microsoft/DeepSpeed at 03dc2b92f3, deepspeed/runtime/zero/config.py
      // DeepSpeedZeroConfig: stage defaults to 0; reduce_bucket_size 5e8 elements reduced at a
      // time; overlap_comm defaults to `stage == 3` (validator overlap_comm_valid), so ZeRO-0, 1
      // and 2 reduce the gradients after backward unless the config turns overlap_comm on. The
      // ZeRO stage itself is the config's (parallelism.zero_stage). Attention kernels are the
      // model code's, not DeepSpeed's: the schema default.
      constexpr double kReduceBucketElements = 5e8;
      d.overlap_grad_reduce = zero_stage == 3;
      d.gradient_bucket = d.first_gradient_bucket =
          Bytes(kReduceBucketElements * bytes_per_element(grad_dtype));
      break;
    }
  }
  return d;
}

// The scenario's value for `path`, else the framework's, else the schema's default.
template <class T>
T governed(const Reader& r, const std::string& path, const std::optional<T>& framework) {
  if (auto v = r.get<T>(path)) return *v;  // set in the file or by --set
  return framework ? *framework : Reader::schema_default<T>(path);
}

}  // namespace

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
  // Megatron-core's block method (--recompute-method block --recompute-num-layers N, with
  // --recompute-granularity full): the first N layers of each pipeline stage, or of each virtual
  // stage under interleaving, recompute; NVIDIA/NeMo docs/source/features/optimizations/
  // activation_recomputation.rst. It means nothing without full recomputation.
  if (const auto n = r.get<int64_t>("training.recompute_layers")) {
    if (t.recompute == Recompute::kFull)
      t.recompute_layers = static_cast<int>(*n);
    else
      sink.note(r.where("training.recompute_layers"), "training.recompute_layers",
                "applies to recompute full only (the layers recomputed in full); set aside under "
                "recompute " +
                    std::string(to_string(t.recompute)));
  }
  t.optimizer = kOptimizerNames.from_valid(r.value<std::string>("training.optimizer"));
  const std::string grad_dtype = r.value<std::string>("training.grad_dtype");
  t.grad_dtype_auto = grad_dtype == "auto";
  t.grad_dtype =
      t.grad_dtype_auto ? default_grad_dtype(t.precision) : kDTypeNames.from_valid(grad_dtype);
  t.framework = kFrameworkNames.from_valid(r.value<std::string>("training.framework"));
  const FrameworkDefaults fw =
      framework_defaults(t.framework, par.data.value, par.zero_stage, t.grad_dtype);
  t.gradient_bucket = governed(r, "training.gradient_bucket", fw.gradient_bucket);
  t.first_gradient_bucket = governed(r, "training.first_gradient_bucket", fw.first_gradient_bucket);
  t.overlap_grad_reduce = governed(r, "training.overlap_grad_reduce", fw.overlap_grad_reduce);
  t.flash_attention = governed(r, "training.flash_attention", fw.flash_attention);
  t.fp8_params = r.value<bool>("training.fp8_params");
  if (t.fp8_params && t.precision != DType::kFp8)
    sink.add(r.where("training.fp8_params"), "training.fp8_params",
             "FP8 parameters need FP8 training: precision is " +
                 std::string(to_string(t.precision)) +
                 "; set training.precision: fp8, or leave fp8_params false");
  t.moe_permute_fusion = governed(r, "training.moe_permute_fusion", fw.moe_permute_fusion);
  t.moe_router_fusion = governed(r, "training.moe_router_fusion", fw.moe_router_fusion);
  if (auto imbalance = r.get<double>("training.moe_load_imbalance"))
    t.moe_load_imbalance = *imbalance;
  t.runtime_reserve = r.value<Bytes>("training.runtime_reserve");
  t.sync = kSyncModeNames.from_valid(r.value<std::string>("training.sync"));
  t.sync_where = r.where("training.sync");
  t.staleness = static_cast<int>(r.value<int64_t>("training.staleness"));
  t.local_sgd_period = static_cast<int>(r.value<int64_t>("training.local_sgd_period"));
  t.easgd_period = static_cast<int>(r.value<int64_t>("training.easgd_period"));
  t.parameter_server.servers =
      static_cast<int>(r.value<int64_t>("training.parameter_server.servers"));
  t.parameter_server.where = r.where("training.parameter_server.servers");
  t.parameter_server.dedicated =
      r.value<std::string>("training.parameter_server.placement") == "dedicated";
  t.parameter_server.async = t.sync == SyncMode::kAsync ||
                             r.value<std::string>("training.parameter_server.updates") == "async";
  t.compression.method = kCompressionNames.from_valid(r.value<std::string>("training.compression"));
  t.compression.where = r.where("training.compression");
  t.compression.density = r.value<double>("training.compression_density");
  t.compression.rank = static_cast<int>(r.value<int64_t>("training.powersgd_rank"));
  t.compression.rank_where = r.where("training.powersgd_rank");
  const std::string feedback = r.value<std::string>("training.error_feedback");
  t.compression.error_feedback = feedback == "auto"
                                     ? t.compression.method == Compression::kTopK ||
                                           t.compression.method == Compression::kPowerSgd
                                     : feedback == "true";
  if (feedback == "true" && t.compression.method == Compression::kNone)
    sink.add(r.where("training.error_feedback"), "training.error_feedback",
             "error feedback keeps what gradient compression drops, but training.compression is "
             "none; choose a compression or drop error_feedback");
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

void check_training_modes(const Reader& r, const Scenario& s, DiagnosticSink& sink) {
  const auto& par = s.parallelism;
  const auto& t = s.training;
  // What the named framework cannot run. DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3
  // (microsoft/DeepSpeed, deepspeed/runtime/pipe/engine.py, PipelineEngine.__init__: "ZeRO-2 and
  // ZeRO-3 are incompatible with pipeline parallelism"). Like every check that involves the ZeRO
  // stage, it refuses a stage and every stage above it (dtsim plan relies on that).
  if (t.framework == Framework::kDeepspeed && par.pipeline.value > 1 && par.zero_stage >= 2)
    sink.add(r.where("parallelism.zero_stage").known() ? r.where("parallelism.zero_stage")
                                                       : r.where("training.framework"),
             "parallelism.zero_stage",
             "DeepSpeed's pipeline engine refuses ZeRO-" + std::to_string(par.zero_stage) +
                 " (ZeRO-2 and ZeRO-3 are incompatible with its pipeline parallelism); with "
                 "pipeline " +
                 std::to_string(par.pipeline.value) +
                 " use zero_stage 0 or 1, or another training.framework");
  // Context parallelism as dtsim models it (parallelism.context: Megatron-core's ring exchange
  // of keys and values, docs/models.md) where the named framework has none. Megatron-LM gained
  // it with Megatron-core 0.5 (2024, --context-parallel-size, megatron/core/parallel_state.py);
  // the 2021 code base (Narayanan et al. 2021, Korthikanti et al. 2022) splits by tensor,
  // sequence, pipeline and data only. PyTorch DDP replicates the whole model. DeepSpeed's long-
  // sequence parallelism is Ulysses (Jacobs et al. 2023: an all-to-all over attention heads),
  // not a ring over the sequence.
  if (par.context.value > 1 &&
      (t.framework == Framework::kMegatronLm2021 || t.framework == Framework::kPytorchDdp ||
       t.framework == Framework::kDeepspeed)) {
    const char* why = t.framework == Framework::kMegatronLm2021
                          ? "Megatron-LM added context parallelism in 2024 (Megatron-core 0.5)"
                      : t.framework == Framework::kPytorchDdp
                          ? "PyTorch DDP replicates the whole model on every GPU"
                          : "DeepSpeed splits long sequences with Ulysses (an all-to-all over "
                            "attention heads), not the ring over the sequence dtsim models";
    sink.add(r.where("parallelism.context").known() ? r.where("parallelism.context")
                                                    : r.where("training.framework"),
             "parallelism.context",
             "training.framework " + std::string(to_string(t.framework)) +
                 " has no context parallelism (" + why +
                 "); use context 1, or a framework "
                 "that has it (megatron-core, nemo, fsdp)");
  }
  if (is_pipedream(par.schedule) && par.zero_stage == 3)
    sink.add(r.where("parallelism.schedule"), "parallelism.schedule",
             std::string(to_string(par.schedule)) +
                 " stashes whole copies of each stage's weights (one per micro-batch in flight), "
                 "which ZeRO-3's sharded weights do not have: the two do not combine; use "
                 "zero_stage 0 or a flushed schedule (1f1b)");
  else if (is_pipedream(par.schedule) && par.zero_stage > 0)
    sink.add(r.where("parallelism.zero_stage"), "parallelism.zero_stage",
             "not supported yet: dtsim builds " + std::string(to_string(par.schedule)) +
                 " without ZeRO; use zero_stage 0");
  // Relaxed synchronisation is a closed form over the synchronous step (driver/relaxed_sync.h):
  // exact for pure data parallelism whose gradient reduction runs after backward, where the
  // step is the slowest replica's kernels plus the reduction. Elsewhere the reduction is not one
  // separable term, so refuse rather than misreport.
  if (t.sync != SyncMode::kSynchronous) {
    std::string why;
    if (par.tensor.value > 1 || par.pipeline.value > 1 || par.context.value > 1 ||
        par.expert.value > 1)
      why = "tensor, pipeline, context and expert parallelism (keep them at 1)";
    else if (par.zero_stage > 0)
      why = "ZeRO (use zero_stage 0)";
    else if (t.compression.method != Compression::kNone)
      why = "gradient compression (use compression none)";
    else if (t.overlap_grad_reduce)
      why = "gradient reduction overlapped with backward (set overlap_grad_reduce: false)";
    if (!why.empty())
      sink.add(t.sync_where, "training.sync",
               "not supported yet: training.sync " + std::string(to_string(t.sync)) +
                   " is modelled for pure data parallelism with the gradient all-reduce after "
                   "backward; dtsim does not combine it with " +
                   why);
  }
  // Parameter servers (core/strategy/parameter_server.h).
  const bool ps = t.sync == SyncMode::kParameterServer || t.sync == SyncMode::kAsync;
  for (const char* key :
       {"training.parameter_server.servers", "training.parameter_server.placement",
        "training.parameter_server.updates"})
    if (!ps && r.where(key).known())
      sink.add(r.where(key), key,
               std::string("applies to training.sync parameter-server or async, but sync is ") +
                   std::string(to_string(t.sync)) + "; remove it or set sync: parameter-server");
  if (ps && !t.parameter_server.dedicated && t.parameter_server.servers > par.data.value)
    sink.add(t.parameter_server.where, "training.parameter_server.servers",
             std::to_string(t.parameter_server.servers) +
                 " servers colocated with workers need as many workers, but there are " +
                 std::to_string(par.data.value) +
                 "; use at most that many servers or placement: dedicated");
  if (ps && par.data.value < 2)
    sink.add(t.sync_where, "training.sync",
             "training.sync " + std::string(to_string(t.sync)) +
                 " needs at least 2 data-parallel workers, but data is " +
                 std::to_string(par.data.value) + "; use more GPUs or sync: synchronous");
  if (t.sync == SyncMode::kAsync &&
      r.value<std::string>("training.parameter_server.updates") == "sync" &&
      r.where("training.parameter_server.updates").known())
    sink.add(r.where("training.parameter_server.updates"), "training.parameter_server.updates",
             "sync: async applies each push on arrival, but updates is sync; use updates: async "
             "or sync: parameter-server");
  if (ps && t.parameter_server.async && !t.parameter_server.dedicated)
    sink.add(r.where("training.parameter_server.placement").known()
                 ? r.where("training.parameter_server.placement")
                 : t.sync_where,
             "training.parameter_server.placement",
             "not supported yet: asynchronous updates are modelled with dedicated servers only "
             "(a colocated server's NIC also carries its worker's traffic); use placement: "
             "dedicated");
  if (t.compression.method == Compression::kNone) return;
  if (par.zero_stage > 0)
    sink.add(t.compression.where, "training.compression",
             "not supported yet: dtsim compresses all-reduced gradients only (zero_stage 0), not "
             "ZeRO's reduce-scatter; use zero_stage 0 or compression none");
  if (par.schedule == Schedule::kPipeDreamAsync)
    sink.add(t.compression.where, "training.compression",
             "not supported yet: gradient compression with the pipedream-async schedule's "
             "per-micro-batch updates; use pipedream-2bw or compression none");
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
