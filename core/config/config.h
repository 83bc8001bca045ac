// The scenario's configuration as plain values: the cluster, parallelism, training, simulate,
// straggler and reliability sections, typed, with units, and located where a file gave them.
//
// The stages below the driver (strategy, exec, report) read these structs and nothing of the
// YAML schema or the loader: core/scenario validates a file against the schema and its binders
// fill a Scenario (core/scenario/scenario.h); the model section is kept as located raw values
// that models/ resolves.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/enum_table.h"
#include "core/base/error.h"
#include "core/base/units.h"
#include "core/config/entry.h"
#include "core/hardware/catalog.h"
#include "core/hardware/cluster_config.h"
#include "core/reliability/failures.h"
#include "core/reliability/timeline.h"

namespace dtsim {

template <class T>
struct Located {
  Located(T v = T{}, SourceLocation w = {}) : value(std::move(v)), where(std::move(w)) {}
  T value;
  SourceLocation where;  // unknown when the value is a default
};

// kPipeDreamAsync: PipeDream's 1F1B without flush, a weight update after every micro-batch and
// weight stashing (Narayanan et al., SOSP 2019); kPipeDream2BW: the same order with gradients
// accumulated over the step's micro-batches and two weight versions (Narayanan et al., ICML 2021).
enum class Schedule { kGpipe, k1F1B, kInterleaved, kPipeDreamAsync, kPipeDream2BW };
inline constexpr auto kScheduleNames =
    make_enum_table<Schedule>({{Schedule::kGpipe, "gpipe"},
                               {Schedule::k1F1B, "1f1b"},
                               {Schedule::kInterleaved, "interleaved"},
                               {Schedule::kPipeDreamAsync, "pipedream-async"},
                               {Schedule::kPipeDream2BW, "pipedream-2bw"}});
constexpr bool is_pipedream(Schedule s) {
  return s == Schedule::kPipeDreamAsync || s == Schedule::kPipeDream2BW;
}
constexpr std::string_view to_string(Schedule s) {
  return kScheduleNames.to_string(s);
}

enum class Recompute { kNone, kSelective, kFull };
inline constexpr auto kRecomputeNames = make_enum_table<Recompute>(
    {{Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}});
constexpr std::string_view to_string(Recompute r) {
  return kRecomputeNames.to_string(r);
}

enum class Optimizer { kAdam, kSgd, kAdafactor };
inline constexpr auto kOptimizerNames = make_enum_table<Optimizer>(
    {{Optimizer::kAdam, "adam"}, {Optimizer::kSgd, "sgd"}, {Optimizer::kAdafactor, "adafactor"}});
constexpr std::string_view to_string(Optimizer o) {
  return kOptimizerNames.to_string(o);
}

// Model keys as written, with locations, for models/ to resolve (preset + overrides).
struct ModelSection {
  EntryMap entries;  // "model.preset", "model.hidden_size", ... as validated
  std::optional<Located<std::string>> preset;
  std::optional<Located<std::string>> family;
};

// Parallel dimensions, for rank placement (core/strategy/layout.h).
enum class ParallelDim { kTensor = 0, kContext = 1, kPipeline = 2, kData = 3 };
// Their names in parallelism.order.
inline constexpr auto kParallelDimNames =
    make_enum_table<ParallelDim>({{ParallelDim::kTensor, "tp"},
                                  {ParallelDim::kContext, "cp"},
                                  {ParallelDim::kPipeline, "pp"},
                                  {ParallelDim::kData, "dp"}});
// Innermost first: TP inside a node, then context, pipeline and data parallel.
inline constexpr std::array<ParallelDim, 4> kDefaultPlacementOrder{
    ParallelDim::kTensor, ParallelDim::kContext, ParallelDim::kPipeline, ParallelDim::kData};
// Parses "tp-cp-pp-dp" (any permutation, innermost first); false on anything else.
bool parse_placement_order(const std::string& text, std::array<ParallelDim, 4>* order);
std::string to_string(const std::array<ParallelDim, 4>& order);  // "tp-cp-pp-dp"

struct ParallelismConfig {
  Located<int> tensor{1};
  Located<int> pipeline{1};
  Located<int> data{1};  // resolved from "auto" by load_scenario
  bool data_auto = true;
  Located<int> context{1};
  Located<int> expert{1};
  bool sequence_parallel = false;
  Schedule schedule = Schedule::k1F1B;
  int virtual_stages = 1;
  int zero_stage = 0;
  std::vector<int64_t> layers_per_stage;
  bool tp_comm_overlap = false;
  bool pipeline_scatter_gather = false;
  std::array<ParallelDim, 4> placement_order = kDefaultPlacementOrder;
};

// The framework whose documented behaviour sets the defaults of the keys it governs
// (training.framework; core/scenario/bind_training.cc cites each behaviour's source). custom: the
// schema's own defaults, which are PyTorch DDP's figures.
enum class Framework {
  kCustom,
  kMegatronLm2021,
  kMegatronCore,
  kNemo,
  kPytorchDdp,
  kFsdp,
  kDeepspeed
};
inline constexpr auto kFrameworkNames =
    make_enum_table<Framework>({{Framework::kCustom, "custom"},
                                {Framework::kMegatronLm2021, "megatron-lm-2021"},
                                {Framework::kMegatronCore, "megatron-core"},
                                {Framework::kNemo, "nemo"},
                                {Framework::kPytorchDdp, "pytorch-ddp"},
                                {Framework::kFsdp, "fsdp"},
                                {Framework::kDeepspeed, "deepspeed"}});
constexpr std::string_view to_string(Framework f) {
  return kFrameworkNames.to_string(f);
}

// Gradient compression (training.compression; docs/models.md, "Gradient compression"): how the
// data-parallel gradients travel. Casts send each gradient in a narrower float; int8 sends one
// byte per gradient and one fp32 scale per bucket; top-k sends the largest `density` share of
// each bucket as (value, 4-byte index) pairs over an all-gather (Lin et al., ICLR 2018); PowerSGD
// sends two rank-`rank` factors of each weight matrix over two all-reduces (Vogels et al.,
// NeurIPS 2019).
enum class Compression { kNone, kFp16, kBf16, kFp8, kInt8, kTopK, kPowerSgd };
inline constexpr auto kCompressionNames =
    make_enum_table<Compression>({{Compression::kNone, "none"},
                                  {Compression::kFp16, "fp16"},
                                  {Compression::kBf16, "bf16"},
                                  {Compression::kFp8, "fp8"},
                                  {Compression::kInt8, "int8"},
                                  {Compression::kTopK, "topk"},
                                  {Compression::kPowerSgd, "powersgd"}});
constexpr std::string_view to_string(Compression c) {
  return kCompressionNames.to_string(c);
}

struct CompressionConfig {
  Compression method = Compression::kNone;
  double density = 0.01;  // top-k: the share of each bucket's gradients sent, in (0, 1]
  int rank = 4;           // PowerSGD: the rank of the low-rank factors
  // Error feedback (Seide et al. 2014; Karimireddy et al. 2019): the part compression dropped is
  // kept in a residual buffer (one gradient's worth of memory) and added to the next gradient.
  bool error_feedback = false;
  SourceLocation where, rank_where;
};

// How data-parallel replicas synchronise (training.sync; docs/models.md, "Relaxed
// synchronisation" and "Parameter servers").
enum class SyncMode { kSynchronous, kParameterServer, kAsync, kSsp, kLocalSgd, kEasgd };
inline constexpr auto kSyncModeNames =
    make_enum_table<SyncMode>({{SyncMode::kSynchronous, "synchronous"},
                               {SyncMode::kParameterServer, "parameter-server"},
                               {SyncMode::kAsync, "async"},
                               {SyncMode::kSsp, "ssp"},
                               {SyncMode::kLocalSgd, "local-sgd"},
                               {SyncMode::kEasgd, "easgd"}});
constexpr std::string_view to_string(SyncMode m) {
  return kSyncModeNames.to_string(m);
}

struct TrainingConfig {
  Framework framework = Framework::kCustom;
  Located<int64_t> global_batch_size{1};
  Located<int64_t> micro_batch_size{1};
  DType precision = DType::kBf16;
  Recompute recompute = Recompute::kNone;
  // training.recompute_layers under recompute full: the first N transformer layers of each
  // pipeline chunk are recomputed, the others keep their activations (Megatron-core's
  // recompute_method block); -1: every layer.
  int recompute_layers = -1;
  Optimizer optimizer = Optimizer::kAdam;
  Bytes gradient_bucket{25.0 * 1024 * 1024};
  Bytes first_gradient_bucket{1.0 * 1024 * 1024};
  // Precision gradients are accumulated, stored and reduced in (training.grad_dtype), resolved:
  // `auto` is default_grad_dtype(precision) and sets grad_dtype_auto.
  DType grad_dtype = DType::kFp32;
  bool grad_dtype_auto = true;
  bool overlap_grad_reduce = true;
  bool flash_attention = false;
  // training.fp8_params: the weights stored, and all-gathered, in FP8 (1 byte per parameter;
  // FP8 training only).
  bool fp8_params = false;
  // Mixture-of-experts kernels (docs/models.md, kernel inventory, "Mixture-of-experts layer"):
  // whether the token
  // permutation around the expert all-to-alls and the router's top-k, softmax and auxiliary-loss
  // statistics each run as one fused kernel, or as the framework's separate PyTorch operations.
  bool moe_permute_fusion = true;
  bool moe_router_fusion = true;
  // The busiest expert-parallel rank's routed tokens over the mean, per layer and micro-batch;
  // nullopt: `auto`, the expected maximum under uniformly random top-k routing.
  std::optional<double> moe_load_imbalance = std::nullopt;
  // CUDA context, library workspaces and allocator slack held outside the modelled tensors.
  Bytes runtime_reserve{1024.0 * 1024 * 1024};
  SyncMode sync = SyncMode::kSynchronous;
  int staleness = 0;         // sync ssp: the bound s, in steps
  int local_sgd_period = 1;  // sync local-sgd: H, steps between parameter averagings
  int easgd_period = 1;      // sync easgd: tau, steps between elastic exchanges
  SourceLocation sync_where;
  // training.parameter_server (sync parameter-server and async).
  struct ParameterServer {
    int servers = 1;
    bool dedicated = true;  // placement: dedicated nodes, or colocated with workers
    bool async = false;     // updates: async (always under sync: async)
    SourceLocation where;   // training.parameter_server.servers
  } parameter_server;
  CompressionConfig compression;
};

// What `grad_dtype: auto` resolves to: fp16 training keeps fp16 gradients; every other precision
// accumulates and reduces them in fp32. Sources: Megatron-LM (megatron/training/arguments.py,
// validate_args: --bf16 forces accumulate_allreduce_grads_in_fp32; fp16 leaves it off) and
// NeMo's bf16_mixed / fp16_mixed recipes (grad_reduce_in_fp32 true / false); PyTorch AMP keeps
// fp32 parameters, so their gradients are fp32; fp8 runs with bf16 parameters (Transformer
// Engine under Megatron-LM's --bf16), so it follows bf16; fp32 and tf32 training has fp32
// gradients.
constexpr DType default_grad_dtype(DType precision) {
  return precision == DType::kFp16 ? DType::kFp16 : DType::kFp32;
}

// simulate.fidelity: how the SimGrid engine times collectives (sim/simgrid_executor.h): chunk by
// chunk, one activity per collective step, or chunk where the flow count allows it.
enum class FidelitySetting { kAuto, kChunk, kCollective };
inline constexpr auto kFidelitySettingNames =
    make_enum_table<FidelitySetting>({{FidelitySetting::kAuto, "auto"},
                                      {FidelitySetting::kChunk, "chunk"},
                                      {FidelitySetting::kCollective, "collective"}});
constexpr std::string_view to_string(FidelitySetting f) {
  return kFidelitySettingNames.to_string(f);
}

struct SimulateConfig {
  std::string engine = "simgrid";  // a registered engine (core/config/engine_choices.h)
  FidelitySetting fidelity = FidelitySetting::kAuto;
  bool symmetry_folding = true;  // "auto"; false for "off"
  int iterations = 1;
  uint64_t seed = 0;
};

// The `stragglers:` list (docs/design.md section 4), bound by core/scenario/bind_stragglers.cc with
// ranks and nodes checked against the cluster; the driver turns it into RunOptions::perturbations.
struct StragglerEntry {
  enum class Kind {
    kSlow,      // {ranks: [...]} or {nodes: [...]}, slowdown: every kernel of those ranks
    kRandom,    // {random: {p, slowdown, per, duration}}: transient, sampled per rank
    kLink,      // {link: {node, nic | uplink}, fraction}: a link at a fraction of its rate
    kThrottle,  // {throttle: {ranks | nodes | all, period, slowdown, duty}}: periodic factor
  };
  Kind kind = Kind::kSlow;
  std::vector<int> ranks;  // kSlow, kThrottle: the ranks (nodes expanded); empty = all for kRandom
  double slowdown = 1;     // kSlow, kRandom, kThrottle: kernels take this many times as long
  double probability = 0;  // kRandom: per rank and step (or op)
  bool per_op = false;     // kRandom: sampled per compute op instead of per step
  int duration = 1;        // kRandom: steps (or ops) a slowdown lasts once it starts
  int node = 0;            // kLink
  int nic = -1;            // kLink: the node's NIC index, or -1 for the node's switch uplink
  double fraction = 1;     // kLink: the rate left, in (0, 1]
  Seconds period{0};       // kThrottle: one cycle
  double duty = 0.5;       // kThrottle: the share of each cycle spent slowed, from its start
  SourceLocation where;
};

struct StragglerConfig {
  std::vector<StragglerEntry> entries;
};

// A whole training run with failures and checkpoints (training.steps / tokens, failures:,
// checkpoint:), bound by core/scenario/bind_reliability.cc; driver/reliability.cc runs it.
struct ReliabilityConfig {
  Located<int64_t> steps{1};              // training.steps
  std::optional<Located<double>> tokens;  // training.tokens: steps from the global batch and
                                          // the model's seq_length, in the driver
  bool failures_given = false;            // any failures.* key
  bool checkpoint_given = false;          // any checkpoint.* key
  // One entry per *_mtbf key given, per component.
  std::vector<std::pair<reliability::ComponentClass, Located<Seconds>>> mtbf;
  reliability::FailureDistribution distribution = reliability::FailureDistribution::kExponential;
  double shape = 1;
  std::vector<Located<reliability::ScriptedFailure>> events;  // where: the events key
  Seconds detection_timeout{600};
  std::optional<Located<Seconds>> interval;  // empty: the Young/Daly optimum
  BytesPerSecond write_bandwidth{2e12};
  reliability::CheckpointMode mode = reliability::CheckpointMode::kSync;
  BytesPerSecond snapshot_bandwidth{63e9};
  Seconds restart_overhead{300};
  int64_t spare_nodes = -1;  // -1: unlimited
  Seconds repair_time{86400};
  bool elastic = false;
  // Whether the whole-run model runs: failures or checkpoint given, or more than one step.
  bool whole_run() const { return failures_given || checkpoint_given || steps.value > 1 || tokens; }
};

struct Scenario {
  std::string file;  // path it was loaded from ("<string>" for in-memory text)
  std::string name;
  std::string description;
  ClusterConfig cluster;
  ModelSection model;
  ParallelismConfig parallelism;
  TrainingConfig training;
  SimulateConfig simulate;
  StragglerConfig stragglers;
  ReliabilityConfig reliability;
  EntryMap entries;  // every validated key, for reports and for later features
  // What the loader accepted but set aside, or assumed ("KEY: why"; DiagnosticSink::note): the
  // result's notes list them, and validate prints them.
  std::vector<std::string> notes;

  // Micro-batches per pipeline per step: B / (b * d) (Narayanan et al. 2021 notation m).
  int64_t micro_batches() const;
};

}  // namespace dtsim
