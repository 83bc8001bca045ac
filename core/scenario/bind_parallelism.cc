// The parallelism section's binder: the parallel sizes against the cluster's GPU count, and the
// pipeline schedule against the micro-batches the training section gives.
#include "core/base/checked.h"
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {

bool bind_parallelism(const Reader& r, const ClusterConfig& c, ParallelismConfig& par,
                      DiagnosticSink& sink) {
  par.tensor = r.count("parallelism.tensor");
  par.pipeline = r.count("parallelism.pipeline");
  par.context = r.count("parallelism.context");
  par.expert = r.count("parallelism.expert");
  par.sequence_parallel = r.value<bool>("parallelism.sequence_parallel");
  par.schedule = kScheduleNames.from_valid(r.value<std::string>("parallelism.schedule"));
  par.virtual_stages = r.count("parallelism.virtual_stages").value;
  // The framework's sharding (bind_training.cc cites both): FSDP's default FULL_SHARD is ZeRO-3;
  // NeMo's recipes use Megatron-core's distributed optimizer, ZeRO-1.
  const std::string framework = r.value<std::string>("training.framework");
  const int framework_zero =
      framework == "fsdp" ? 3
      : framework == "nemo"
          ? 1
          : static_cast<int>(Reader::schema_default<int64_t>("parallelism.zero_stage"));
  par.zero_stage = r.count("parallelism.zero_stage", framework_zero).value;
  par.layers_per_stage = r.get_or<std::vector<int64_t>>("parallelism.layers_per_stage", {});
  par.tp_comm_overlap = r.value<bool>("parallelism.tp_comm_overlap");
  par.pipeline_scatter_gather = r.value<bool>("parallelism.pipeline_scatter_gather");
  if (par.pipeline_scatter_gather && (par.tensor.value < 2 || par.sequence_parallel))
    sink.add(r.where("parallelism.pipeline_scatter_gather"), "parallelism.pipeline_scatter_gather",
             "the scatter/gather optimisation splits a stage's output over the tensor-parallel "
             "group; it needs tensor > 1 and no sequence parallelism (which already sends only "
             "the shard)");
  if (auto order = r.get<std::string>("parallelism.order");
      order && !parse_placement_order(*order, &par.placement_order))
    sink.add(r.where("parallelism.order"), "parallelism.order",
             "expected the four dimensions tp, cp, pp and dp, each once, innermost first and "
             "joined by '-' (for example " +
                 to_string(kDefaultPlacementOrder) + ", the default), found '" + *order + "'");

  const int64_t gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
  // Beyond 2^20 GPUs per-rank tables stop fitting a workstation's memory; no cluster is that big.
  constexpr int64_t kMaxGpus = int64_t{1} << 20;
  if (gpus > kMaxGpus) {
    sink.add(r.where("cluster.nodes"), "cluster.nodes",
             "nodes x gpus_per_node = " + std::to_string(gpus) + " GPUs; dtsim models at most " +
                 std::to_string(kMaxGpus) + " (about a million)");
    return false;
  }
  // Each degree is at most 1e7, so the product fits a double exactly enough to compare; an
  // int64 product could overflow (2^22 x 2^22 x 2^20 wraps to 0).
  const double model_parallel_d =
      static_cast<double>(par.tensor.value) * par.pipeline.value * par.context.value;
  if (model_parallel_d > static_cast<double>(gpus)) {
    const std::string key = par.tensor.value > 1     ? "parallelism.tensor"
                            : par.pipeline.value > 1 ? "parallelism.pipeline"
                                                     : "parallelism.context";
    sink.add(r.where(key), key,
             "tensor x pipeline x context = " + std::to_string(par.tensor.value) + " x " +
                 std::to_string(par.pipeline.value) + " x " + std::to_string(par.context.value) +
                 " needs more GPUs than the cluster's " + std::to_string(gpus));
    return false;
  }
  const int64_t model_parallel =
      static_cast<int64_t>(par.tensor.value) * par.pipeline.value * par.context.value;
  if (auto d = r.get<int64_t>("parallelism.data")) {
    par.data_auto = false;
    par.data = {narrow<int>(*d, "parallelism.data"), r.where("parallelism.data")};
    if (model_parallel * *d != gpus)
      sink.add(r.where("parallelism.data"), "parallelism.data",
               "tensor x pipeline x context x data = " + std::to_string(par.tensor.value) + " x " +
                   std::to_string(par.pipeline.value) + " x " + std::to_string(par.context.value) +
                   " x " + std::to_string(*d) + " = " + std::to_string(model_parallel * *d) +
                   " GPUs, but the cluster has " + std::to_string(gpus) +
                   " (nodes x gpus_per_node); " +
                   (gpus % model_parallel == 0
                        ? "use data: " + std::to_string(gpus / model_parallel) + " or auto"
                        : "change the cluster or the parallel sizes"));
  } else {
    par.data_auto = true;
    if (gpus % model_parallel != 0) {
      const std::string key =
          par.tensor.value > 1 && par.tensor.where.known()     ? "parallelism.tensor"
          : par.context.value > 1 && par.context.where.known() ? "parallelism.context"
                                                               : "parallelism.pipeline";
      sink.add(r.where(key).known() ? r.where(key) : r.where("cluster.nodes"), key,
               "tensor x pipeline x context = " + std::to_string(model_parallel) +
                   " does not divide the cluster's " + std::to_string(gpus) + " GPUs");
      par.data = {1, {}};
    } else {
      par.data = {narrow<int>(gpus / model_parallel, "parallelism.data"),
                  r.where("parallelism.data")};
    }
  }
  return true;
}

void check_pipeline_schedule(const Reader& r, const Scenario& s, DiagnosticSink& sink) {
  const auto& par = s.parallelism;
  const auto& t = s.training;
  const int p = par.pipeline.value;
  const int64_t m = s.micro_batches();
  if (par.virtual_stages > 1 && par.schedule == Schedule::kInterleaved && p == 1)
    sink.add(r.where("parallelism.virtual_stages"), "parallelism.virtual_stages",
             "virtual_stages " + std::to_string(par.virtual_stages) +
                 " interleaves model chunks over pipeline stages, but parallelism.pipeline is 1; "
                 "set pipeline > 1 or virtual_stages: 1");
  if (par.virtual_stages > 1 && par.schedule != Schedule::kInterleaved)
    sink.add(r.where("parallelism.virtual_stages"), "parallelism.virtual_stages",
             "virtual_stages " + std::to_string(par.virtual_stages) +
                 " needs schedule: interleaved (the other schedules run one model chunk per "
                 "stage)");
  if (par.schedule == Schedule::kInterleaved && p > 1 && m > 0 && m % p != 0) {
    const int64_t up = (m / p + 1) * p;
    sink.add(r.where("parallelism.schedule"), "parallelism.schedule",
             "the interleaved schedule needs the micro-batches per pipeline (global_batch_size / "
             "(micro_batch_size x data) = " +
                 std::to_string(m) + ") to be a multiple of the pipeline size " +
                 std::to_string(p) + "; use a global batch of " +
                 std::to_string(up * t.micro_batch_size.value * par.data.value) +
                 " or schedule: 1f1b");
  }
  if (!par.layers_per_stage.empty() && static_cast<int64_t>(par.layers_per_stage.size()) !=
                                           static_cast<int64_t>(p) * par.virtual_stages)
    sink.add(r.where("parallelism.layers_per_stage"), "parallelism.layers_per_stage",
             "lists " + std::to_string(par.layers_per_stage.size()) +
                 " stages, but pipeline x virtual_stages = " +
                 std::to_string(static_cast<int64_t>(p) * par.virtual_stages) +
                 "; give one block count per model chunk");
}

}  // namespace dtsim::scenario_binding
