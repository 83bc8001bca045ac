// Parallel strategies: (layer graph, scenario) -> Job of per-rank Programs.
//
// Contract:
// - build_job() emits the Programs for one training step. Strategies never talk to an executor;
//   the same Job runs on the analytic, SimGrid and real executors (docs/design.md section 1).
// - Folding (JobOptions::folding). kExact, the default and what predictions use: the Programs
//   of one data-parallel replica (replica 0), and of one tensor- and context-parallel rank per
//   stage where that is exact (simulate.symmetry_folding auto on a cluster where the folded
//   ranks' traffic shares no link with the simulated traffic; `off` keeps every TP/CP rank).
//   The other ranks are identical and stand folded (core/ir/program.h); their collectives are
//   still simulated with all members. kNone: every rank's Program, for checks, real mode and
//   per-rank perturbations.
// - Groups: a Job lists every group of the world (tp, cp, ep, dp, edp, embedding), in one
//   canonical order, whichever ranks it builds; a GroupId means the same group in the folded
//   Job, the unfolded Job and in build_program()'s Program.
// - build_program(shard, scenario, r) is rank r's unfolded Program: exactly the Program the
//   unfolded Job holds for r, with the group ids of build_job().
// - `model` is one tensor-parallel shard's graph (models::BuildOptions::tensor_parallel); its
//   kCommunication kernels become collectives on the rank's TP group.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <vector>

#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/config/config.h"

namespace dtsim {

// One gradient bucket: the layers whose gradients it holds and its size.
struct GradientBucket {
  int first_layer = 0;  // lowest layer index in the bucket; backward reaches it last
  int last_layer = 0;   // highest layer index; backward reaches it first
  Bytes bytes{0};
};

// PyTorch DDP's bucketing (torch/nn/parallel/distributed.py: bucket_cap_mb = 25 and
// _DEFAULT_FIRST_BUCKET_BYTES = 1 MiB; torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size): parameters are taken in reverse order, the order their
// gradients become ready in backward, and packed into buckets of `cap` bytes, the first one of
// `first_cap`. A layer whose gradients do not fit in what is left of the open bucket is split:
// it fills that bucket and continues in the next ones. A bucket is ready, and its collective may
// start, once the backward of its lowest layer (first_layer) has ended: every layer whose
// gradients it holds is then done.
// Granularity: the layer graph has no per-tensor sizes, so a bucket closes at exactly its cap
// (DDP closes it at the first tensor that reaches the cap, overshooting by under one tensor).
// Megatron-LM's own DDP (a contiguous gradient buffer cut into buckets of `bucket_size`
// parameters, with no small first bucket) is a different rule; dtsim has no Megatron framework
// profile, so these are DDP's buckets for every scenario.
std::vector<GradientBucket> assign_gradient_buckets(const ModelGraph& model,
                                                    double grad_bytes_per_param, Bytes first_cap,
                                                    Bytes cap);
// The same over layers [first_layer, last_layer] only (one pipeline chunk), counting the
// parameters params_of(layer) (all of them by default; a part such as the expert weights).
std::vector<GradientBucket> assign_gradient_buckets(
    const ModelGraph& model, int first_layer, int last_layer, double grad_bytes_per_param,
    Bytes first_cap, Bytes cap,
    const std::function<double(const Layer&)>& params_of = [](const Layer& l) {
      return l.parameters;
    });
// How many buckets assign_gradient_buckets makes of `gradient_bytes` (to bound them first).
double gradient_bucket_count(double gradient_bytes, Bytes first_cap, Bytes cap);
// The most gradient buckets one rank may have; more is an InputError naming the bucket size.
inline constexpr double kMaxGradientBuckets = 1e6;

// The largest step a strategy builds (ops per simulated rank); larger inputs are an InputError.
inline constexpr double kMaxOpsPerStep = 20e6;

enum class Folding {
  kExact,  // one data-parallel replica; TP/CP ranks folded where exact (see above)
  kNone,   // every rank's Program
};

struct JobOptions {
  Folding folding = Folding::kExact;
  // Emit each pipeline unit's layers as a segment shared by the micro-batches that run the same
  // ops (core/ir/program.h, SegmentOp) where they form one; expand_segments() gives the Program
  // built without them, op for op. For the analytic engine, which times a segment as one span.
  bool segments = false;
  // The most ops the Job may hold over all simulated ranks (0: no limit; the driver derives it
  // from --max-memory). Each rank's op count is known before its ops are built, so a Job beyond
  // the limit is refused (InputError) before it takes the memory: what is built so far plus this
  // rank's count for each rank still to build is the estimate.
  double max_ops = 0;
  // Perturbed data-parallel replicas (stragglers, driver/predict.cc), built with kExact beside
  // the first replica none of them is, which stands for the unperturbed ones. With
  // `perturbed_position` {tp, cp}, the one TP/CP position every perturbed rank holds, a stage
  // that folds its TP/CP ranks simulates that position instead of {0, 0}, in that replica and in
  // each perturbed one; without it, each perturbed replica is built whole.
  std::vector<int> perturbed_replicas;
  std::optional<std::array<int, 2>> perturbed_position;
};

// Weight versions stage `stage` (0-based) of `stages` holds (1 for the flushed schedules), with
// `micro_batches` per step. PipeDream's weight stashing (Narayanan et al. 2019, section 3.3):
// one version per micro-batch in flight, p - s when the step has at least p - s - 1 micro-batches;
// PipeDream-2BW (Narayanan et al. 2021, section 3.1): two wherever the pipeline has more than
// one stage.
inline int weight_versions(Schedule schedule, int stages, int stage, int micro_batches) {
  if (schedule == Schedule::kPipeDreamAsync) return std::min(stages - stage - 1, micro_batches) + 1;
  if (schedule == Schedule::kPipeDream2BW) return stages > 1 ? 2 : 1;
  return 1;
}
// One training step of the scenario's parallel configuration.
Job build_job(const ModelGraph& model, const Scenario& scenario, const JobOptions& options = {});

// Rank r's Program for one step, unfolded; its GroupIds index build_job()'s groups. Throws
// RuntimeError when r is not a rank of the scenario's world.
Program build_program(const ModelGraph& model, const Scenario& scenario, Rank rank);

}  // namespace dtsim
