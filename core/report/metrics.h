// Metrics: from a Trace to the result keys of docs/design.md section 5.
//
// Contract:
// - step_time_s is the mean time of one optimizer step over the global batch.
// - The breakdown is taken on the slowest simulated rank and sums to the step time:
//   compute = time any compute kernel runs; exposed_communication = time a collective runs
//   while no compute does; pipeline_bubble = time send/recv waits while nothing else runs, plus
//   idle time on pipelined jobs; straggler_wait = time the rank spends, outside its own
//   kernels and collectives, waiting at a collective for a slower member (Trace::straggler_waits,
//   recorded only when the run has perturbations; the breakdown is then taken on the rank that
//   waits longest); other = the rest
//   (idle gaps, launch latency between dependent ops).
// - Communication: per group kind (the Job's group names: tp, cp, pp, dp, ep, ...) and per
//   collective kind, the bytes one GPU issues per step, read from the Programs (exact, not
//   estimated): `size` is the operation's size in the nccl-tests sense (CollectiveOp::bytes);
//   `bus` is what each GPU moves on its links for it, size x nccl-tests' bus-bandwidth factor
//   (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast, reduce 1;
//   nccl-tests doc/PERFORMANCE.md). Pipeline sends count under the group "pp" as "send".
//   Byte values are the mean per GPU over the simulated ranks (each stands for its symmetric
//   peers; a GPU outside the groups that talk counts as 0); `count` is the operations per step
//   of the GPU that issues the most.
// - Layers: `blocks` counts the repeated blocks (transformer layers; conv or fc layers for
//   ResNet's residual and Inception's mixed blocks, VGG's conv and fc layers, an MLP's hidden
//   layers); the stem, embedding, final norm, pooling and the head are listed apart.
// - FLOPs: model FLOPs are the architecture's forward+backward GEMM and attention FLOPs over
//   the global batch (Narayanan et al. 2021); hardware FLOPs add recomputation. MFU and HFU
//   divide by step time x GPUs x dense peak at the training precision.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/reliability/timeline.h"
#include "core/report/energy.h"

namespace dtsim {

struct Breakdown {
  double compute = 0;
  double exposed_communication = 0;
  double pipeline_bubble = 0;
  double straggler_wait = 0;
  double other = 0;
};

// The bytes of one collective kind (or "send") one GPU issues per step.
struct CommVolume {
  std::string kind;   // "all-reduce", ..., "send"
  int64_t count = 0;  // operations per step on the GPU that issues the most of them
  double size_bytes = 0;
  double bus_bytes = 0;
};

// One kind of communication group (all the "dp" groups, all the "tp" groups, ...).
struct CommGroupVolume {
  std::string name;    // the Job's group name: "tp", "cp", "pp", "dp", "ep", "edp", ...
  int ranks = 0;       // members of one such group
  int64_t groups = 0;  // how many such groups the world has
  std::vector<CommVolume> per_kind;
  double size_bytes = 0;  // sums over per_kind
  double bus_bytes = 0;
};

// A layer of the graph that is not a repeated block (embedding, final norm, pool, head).
struct OtherLayer {
  std::string name;
  std::string kind;
  double parameters = 0;
};

// The layers users count: blocks, and the rest by name.
struct LayerCounts {
  int64_t blocks = 0;
  std::string block_kind;  // "transformer", "residual", "inception", "conv", "fc"; or "mixed"
  std::vector<std::pair<std::string, int64_t>> per_kind;  // blocks by kind, in graph order
  std::vector<OtherLayer> other;
};
// Whether a layer of this kind is a repeated block (see the contract above).
bool is_block(const Layer& layer);
LayerCounts count_layers(const ModelGraph& model);
// The index of layer `index` among the graph's blocks, or -1 when it is not a block.
int block_index(const ModelGraph& model, int index);

// The memory of one pipeline stage: its simulated rank with the highest peak. A rank's stage is
// its pipeline coordinate in the placement (core/strategy/layout.h; 0 without a pipeline). Stages
// differ: the first holds activations for more micro-batches in flight under 1F1B, the first and
// the last hold the embedding and the head.
struct StageMemory {
  int stage = 0;
  Rank rank = 0;
  double peak_bytes = 0;
  std::array<double, kMemoryCategories> per_category_bytes{};  // at that rank's peak
  // Weight versions the stage holds and the staleness of its updates (core/strategy/strategy.h,
  // weight_versions): 1 and 0 under the flushed schedules, more under pipedream-async and -2bw.
  int weight_versions = 1;
  // Updates of the stage's weights between a micro-batch's forward and the update its gradient
  // makes: PipeDream's p - s - 1 (Narayanan et al. 2019, section 3.3), 2BW's 1, the flushed
  // schedules' 0; one fewer than the versions held.
  int weight_update_staleness() const { return weight_versions - 1; }
};

// Other jobs' traffic on the cluster's network (scenario key background.link_fraction): the
// share of every network link each job holds, and one NIC's usable rate per direction as each
// sees it (core/hardware/cluster.h, "Background traffic").
struct BackgroundShare {
  double link_fraction = 0;      // other jobs' share of every network link, in [0, 1)
  double this_job_share = 1;     // 1 - link_fraction
  double nic_bandwidth_Bps = 0;  // this job's usable rate of one NIC (B/s, per direction)
  double other_jobs_nic_bandwidth_Bps = 0;  // what the other jobs hold of it (B/s)
};

// Parameter servers (training.sync parameter-server and async; core/strategy/parameter_server.h):
// each server's load per step, and under asynchronous updates the staleness of the updates.
struct ServerLoad {
  int server = 0;
  Rank rank = 0;  // the device and NIC it uses
  int node = 0;
  double bytes_in_per_step = 0;      // gradient shards received (B)
  double bytes_out_per_step = 0;     // parameter shards sent (B)
  double nic_in_busy_fraction = 0;   // time receiving / step time
  double nic_out_busy_fraction = 0;  // time sending / step time
  double update_busy_fraction = 0;   // time in its update kernels / step time
};
struct ParameterServerResults {
  int servers = 0;
  int workers = 0;
  std::string placement;  // dedicated | colocated
  std::string updates;    // sync | async
  std::vector<ServerLoad> per_server;
  // Asynchronous updates only: updates applied per second over all workers, and how many
  // updates of other workers each one missed (staleness_histogram[k]: updates of staleness k).
  double updates_per_s = 0;
  std::vector<int64_t> staleness_histogram;
  double mean_staleness = 0;
};

// A second job on the same cluster (scenario key background.scenario, driver/shared_cluster.h),
// simulated together with this one on one platform.
struct BackgroundJob {
  std::string scenario;   // the other job's scenario file, as loaded
  std::string placement;  // background.placement: after | interleaved
  int nodes = 0, gpus = 0;
  double step_time_s = 0;  // the other job's step time in the shared run
  double samples_per_s = 0, tokens_per_s = 0;
  double this_job_alone_step_time_s = 0;  // this job on its own cluster, same engine
  double this_job_slowdown = 1;           // step_time_s / this_job_alone_step_time_s
};

// How sure a prediction is (driver/prediction_interval.h): the step time's interval from
// dtsim's errors on comparable published runs. runs == 0: no comparable runs, no interval, and
// basis says why.
struct StepTimeInterval {
  double low_s = 0, high_s = 0;
  double coverage = 0;  // the fraction of comparable runs' outcomes the interval is built to hold
  int runs = 0;         // the comparable published runs it rests on
  std::string basis;    // which runs (GPU, parallelism family, scale), or why none
};

// How undisturbed a measurement was (real mode; driver/measurement_conditions.h): the host's
// load and the CPU time its hypervisor took during the run, and how much the same compute op's
// time varied from one timed step to the next. A prediction compared with a disturbed
// measurement can be off by as much as the measurement varied.
struct MeasurementConditions {
  int cpus = 0;                  // online CPUs of rank 0's host
  double load_before = -1;       // 1-minute load average before the run (-1: unknown)
  double load_after = -1;        // and after it
  double steal_fraction = -1;    // CPU time the hypervisor took during the run (-1: unknown)
  int compute_ops_compared = 0;  // compute ops timed in two or more steps (at least 50 us each)
  double spread_median = 0;      // their (slowest - fastest) / fastest time across steps: median
  double spread_p90 = 0;         // and 90th percentile
  bool disturbed = false;        // beyond the thresholds of driver/measurement_conditions.h
  std::string summary;           // one sentence for people
};

struct Results {
  std::string engine;
  std::string source = "predicted";  // "measured" for real mode (docs/design.md section 5)
  std::string scenario;
  double step_time_s = 0;
  // Predictions only (measured results have none); set by the driver after the engine runs.
  std::optional<StepTimeInterval> step_time_interval;
  // Measurements only (dtsim real): how disturbed the machine was while it measured.
  std::optional<MeasurementConditions> measurement_conditions;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  Breakdown breakdown_s;
  double peak_bytes_per_gpu = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::array<double, kMemoryCategories> per_category_bytes{};
  std::vector<StageMemory> memory_per_stage;  // by stage; only the stages simulated
  double parameters = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  // Context for readers of the report.
  int gpus = 1;
  int data_parallel = 1;
  std::string parallelism;  // "TP 8 (SP) x PP 8 (interleaved, v 2) x DP 16, ZeRO-1", for people
  int64_t micro_batches = 1;
  int64_t global_batch_size = 1;
  int iterations = 1;
  std::string gpu;
  std::string profile;  // the hardware profile applied (cluster.profile); "" for the catalog's
  // The fabrics as resolved (catalog, inline spec, --set and profile applied), for config.
  struct Fabric {
    std::string name;                  // catalog name or preset ("custom" for an inline spec)
    double bandwidth_bytes_per_s = 0;  // per GPU (intra-node) or per NIC (network), one direction
    double latency_s = 0;              // per hop (intra-node) or end to end (network)
    int nics_per_node = 0;             // network only
    std::string kind, topology;        // network only: ib, roce, ethernet; fat-tree, ...
    double oversubscription = 1;       // network only
  };
  Fabric intra_node, network;
  std::string precision;
  std::string grad_dtype;  // gradients' accumulation and reduction precision, resolved
  // The approximations the engine made that change this answer (Trace::notes), for every reader.
  std::vector<std::string> notes;
  // Every resolved parallel and training setting, for scripts that sweep configs.
  int tp = 1, pp = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
  std::string schedule;
  int virtual_stages = 1;
  int64_t micro_batch_size = 1;
  int64_t seq_length = 1;
  std::string recompute;
  std::string optimizer;
  std::string framework;  // training.framework
  std::string fidelity;
  std::string model_name;
  LayerCounts layers;
  std::vector<CommGroupVolume> communication;
  // Busy time per step by op kind on the rank that finishes last (the breakdown's rank): compute
  // kernels by kind (gemm, attention, elementwise, optimizer, communication for a TP collective
  // folded into a kernel), collectives by kind, send and recv. Overlapping ops each count, so
  // the sum can exceed the step time. The per-op-kind rows of `dtsim compare`.
  std::map<std::string, double> time_by_kind_s;
  double communication_size_bytes = 0;  // all groups, per GPU per step
  double communication_bus_bytes = 0;
  // The whole run with failures and checkpoints (driver/reliability.h), when the scenario asks
  // for one; empty otherwise (every step counts: goodput 1).
  std::optional<reliability::RunReport> reliability;
  // Only when other jobs share the network (link_fraction > 0), so results without them keep
  // their shape.
  std::optional<BackgroundShare> background;
  // Only under training.sync parameter-server or async.
  std::optional<ParameterServerResults> parameter_server;
  // Only when a second job shares the cluster (background.scenario).
  std::optional<BackgroundJob> background_job;
  // Power and energy per step (core/report/energy.h); not modelled without the GPU's power.
  StepEnergy energy;
  // The whole run, when the scenario gives its size (training.steps or training.tokens): set by
  // the driver after the whole-run model.
  std::optional<RunTotals> run;
};

Results compute_results(const Scenario& scenario, const ModelGraph& model, const Job& job,
                        const Trace& trace);

}  // namespace dtsim
