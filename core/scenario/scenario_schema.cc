// The scenario schema (docs/design.md section 4): every key, its type, default and meaning.
// docs/scenario-reference.md is generated from this table and checked by a test.
#include <stdexcept>
#include <string>

#include "core/config/engine_choices.h"
#include "core/hardware/catalog.h"
#include "core/reliability/failures.h"
#include "core/reliability/timeline.h"
#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

struct ModelSchemaRegistry {
  ModelSchemaBuilder build = nullptr;
  bool schema_built = false;
};

ModelSchemaRegistry& model_schema_registry() {
  static ModelSchemaRegistry registry;
  return registry;
}

SchemaNode model_section() {
  const ModelSchemaBuilder build = model_schema_registry().build;
  if (!build)
    throw std::logic_error(
        "the scenario schema has no model section: link dtsim_model_schema "
        "(models/register_model_schema.cc), which registers the one models/ defines");
  SchemaNode model = build();
  if (model.key != "model" || model.type != ValueType::kMap)
    throw std::logic_error("the registered model schema must be the map 'model'");
  return model;
}

using schema::at_most;
using schema::below;
using schema::choice;
using schema::count;
using schema::leaf;
using schema::physical;
using schema::positive;
using schema::section;
using schema::with_aliases;

// "not supported yet" unless the value equals the one that is built.
template <class T>
std::function<std::optional<std::string>(const Value&)> only(T built, std::string why) {
  return [built, why](const Value& v) -> std::optional<std::string> {
    if (const T* x = std::get_if<T>(&v); x && *x == built) return std::nullopt;
    return why;
  };
}

// Physical ranges of hardware figures, in base units. They are far outside every device in the
// catalog (the slowest figures there: V100 15.7 TFLOP/s fp32, PCIe Gen3 x16 ~12 GB/s, 10 Gb/s
// Ethernet), and close enough to keep every derived time finite and non-zero: a rate of 1e-300
// would make a step take 1e300 s, or infinitely long.
constexpr double kMinFlopRate = 1e9;           // 1 GFLOP/s
constexpr double kMinMemory = 1024.0 * 1024;   // 1 MiB
constexpr double kMinMemoryBandwidth = 1e9;    // 1 GB/s
constexpr double kMinLinkBandwidth = 1e9 / 8;  // 1 Gb/s
constexpr double kMinEfficiency = 0.01;        // 1% of peak
constexpr double kMaxLatency = 1;              // 1 s for one message or one kernel launch
constexpr double kMaxGpuPower = 1e5;           // 100 kW for one device or one switch port
constexpr double kMaxNodePower = 1e6;          // 1 MW for one node's host

SchemaNode build_schema() {
  // Limits that catch absurd input (1e30 GPUs) while leaving room for any real cluster.
  constexpr double kMaxNodes = 1e6, kMaxGpusPerNode = 1024, kMaxDegree = 1e7;
  // A GB200 NVL72 rack, one node here, has 72 NICs (one per GPU); 128 leaves room above it.
  constexpr double kMaxNicsPerNode = 128;

  SchemaNode gpu =
      leaf("gpu", ValueType::kNameOrMap,
           "GPU model: a catalog name (dtsim catalog gpus) or an inline spec; each field below "
           "also overrides a named GPU's figure (--set cluster.gpu.memory=40GiB)",
           "H100-SXM");
  gpu.catalog = [] {
    std::vector<std::string> names;
    for (const auto& g : gpu_catalog()) names.push_back(g.name);
    return names;
  };
  {
    SchemaNode peak = section("peak", "dense peak compute per dtype", {});
    for (const auto& dt : kDTypeNames)
      peak.children.push_back(
          physical(leaf(std::string(dt.name), ValueType::kFlopRate,
                        "dense " + std::string(dt.name) + " peak, e.g. 312TFLOPS"),
                   kMinFlopRate, 1e21));
    gpu.children = {
        leaf("name", ValueType::kString, "display name of the inline GPU", "custom-gpu"),
        leaf("base", ValueType::kString,
             "catalog GPU whose figures the inline spec starts from (fields below override)"),
        peak,
        physical(leaf("memory", ValueType::kBytes, "device memory capacity, e.g. 80GiB"),
                 kMinMemory, 1e15),
        physical(leaf("memory_bandwidth", ValueType::kBandwidth,
                      "device memory bandwidth, e.g. 3.35TBps"),
                 kMinMemoryBandwidth, 1e15),
        physical(leaf("gemm_efficiency", ValueType::kNumber,
                      "achieved fraction of peak for large GEMMs [0.01-1]"),
                 kMinEfficiency, 1),
        physical(leaf("attention_efficiency", ValueType::kNumber,
                      "achieved fraction of peak for attention kernels [0.01-1]"),
                 kMinEfficiency, 1),
        physical(leaf("memory_efficiency", ValueType::kNumber,
                      "achieved fraction of memory bandwidth for streaming kernels [0.01-1]"),
                 kMinEfficiency, 1),
        at_most(
            leaf("kernel_launch_overhead", ValueType::kDuration, "fixed cost per kernel, e.g. 5us"),
            kMaxLatency),
        count("sm_count", "streaming multiprocessors, for GEMM wave quantization (0: off)",
              "from base, else 0", 0, 1e5),
        at_most(leaf("max_power", ValueType::kPower,
                     "the board's maximum power (TDP or power limit), e.g. 700W; with idle_power "
                     "it models energy (docs/models.md, Power and energy)",
                     "from base, else none"),
                kMaxGpuPower),
        at_most(leaf("idle_power", ValueType::kPower,
                     "what the GPU draws with no kernel running, e.g. 70W", "from base, else none"),
                kMaxGpuPower),
    };
  }

  SchemaNode intra = leaf("intra_node", ValueType::kNameOrMap,
                          "links between the GPUs of a node: nvswitch (the GPU's NVLink "
                          "generation), nvlink-hybrid-cube-mesh, nvlink-ring, pcie, a fabric "
                          "catalog name, or an inline spec; each field below also overrides a "
                          "named fabric's figure",
                          "nvswitch");
  intra.choices = {"nvswitch", "nvlink-hybrid-cube-mesh", "nvlink-ring", "pcie"};
  intra.catalog = [] {
    std::vector<std::string> names;
    for (const auto& f : fabric_catalog()) names.push_back(f.name);
    return names;
  };
  intra.children = {
      leaf("name", ValueType::kString, "display name of the inline fabric", "custom-fabric"),
      leaf("base", ValueType::kString,
           "catalog fabric (or nvswitch, pcie) whose figures the inline spec starts from (fields "
           "below override)"),
      choice("kind", kFabricKindNames.names(), "how the GPUs are connected",
             std::string(to_string(FabricKind::kSwitch))),
      physical(leaf("bandwidth", ValueType::kBandwidth,
                    "one GPU's injection bandwidth per direction, e.g. 450GBps"),
               kMinLinkBandwidth, 1e15),
      at_most(leaf("latency", ValueType::kDuration, "one GPU-to-GPU hop, e.g. 1us", "1us"),
              kMaxLatency),
      physical(leaf("protocol_efficiency", ValueType::kNumber,
                    "usable fraction of bandwidth for bulk transfers [0.01-1]; the catalog's "
                    "NVLink and PCIe fabrics use NCCL's link figures, e.g. 0.824 on NVLink 4",
                    "1"),
               kMinEfficiency, 1),
  };

  SchemaNode net_preset = leaf("preset", ValueType::kEnum,
                               "network catalog entry whose figures are the defaults "
                               "(dtsim catalog networks)",
                               "ib-ndr");
  net_preset.catalog = [] {
    std::vector<std::string> names;
    for (const auto& n : network_catalog()) names.push_back(n.name);
    return names;
  };

  SchemaNode topology = choice("topology", kTopologyNames.names(), "inter-node topology",
                               std::string(to_string(Topology::kFatTree)));
  SchemaNode torus_dims = leaf(
      "torus_dims", ValueType::kCountList,
      "nodes along each dimension of a torus (topology: torus), 1 to 3 of them, e.g. [4, 4, 4]; "
      "their product must equal nodes. Each node has a cable to its + and - neighbour in every "
      "dimension (wrap-around), each at nic_bandwidth x protocol_efficiency per direction; "
      "routes are dimension-ordered, the shorter way round",
      "near-cube: the smallest largest dimension, then the fewest (16 -> [4, 4], 64 -> [4, 4, 4])");
  torus_dims.min = 1;
  torus_dims.max = kMaxNodes;
  // Dragonfly (Kim et al., ISCA 2008; core/hardware/dragonfly.h).
  SchemaNode dragonfly = section(
      "dragonfly",
      "the shape of a dragonfly network (topology: dragonfly; Kim et al., ISCA 2008): groups of "
      "routers joined all-to-all inside a group by local links and between groups by global "
      "links, every link one cable at nic_bandwidth x protocol_efficiency per direction; a route "
      "takes the network's latency once, whatever its router hops",
      {count("groups", "groups of routers; groups x routers_per_group x nodes_per_router = nodes",
             "nodes / (routers_per_group x nodes_per_router)", 1, kMaxNodes),
       count("routers_per_group",
             "routers in a group, every pair joined by a local link (a in Kim et al.)",
             "nodes / (groups x nodes_per_router) when groups is given, else 2 x nodes_per_router "
             "(Kim et al.'s balanced a = 2p)",
             1, 1e4),
       count("nodes_per_router", "nodes on each router (p in Kim et al.)", "1", 1, 1e4),
       count("global_links_per_router",
             "global links on each router (h in Kim et al.); every pair of groups gets the same "
             "number of them, so groups - 1 must divide routers_per_group x "
             "global_links_per_router",
             "nodes_per_router (Kim et al.'s balanced h = p)", 1, 1e4),
       choice("routing", kDragonflyRoutingNames.names(),
              "minimal (local, global, local hops) or valiant (through an intermediate group, "
              "the sources of a group spread evenly over the candidates)",
              std::string(kDragonflyRoutingNames.to_string(DragonflyRouting::kMinimal)))});
  SchemaNode network = section(
      "network", "the network between nodes",
      {net_preset,
       choice("kind", kNetworkKindNames.names(), "transport (defaults from the preset)",
              "from preset"),
       topology,
       physical(leaf("nic_bandwidth", ValueType::kBandwidth, "line rate of one NIC per direction",
                     "from preset"),
                kMinLinkBandwidth, 1e15),
       count("nics_per_node", "NICs per node (a torus node has 2 cables per dimension instead)",
             "gpus_per_node", 1, kMaxNicsPerNode),
       at_most(leaf("latency", ValueType::kDuration,
                    "end-to-end small-message latency between nodes", "from preset"),
               kMaxLatency),
       count("nodes_per_leaf",
             "nodes under one leaf switch of a fat-tree (64-port switches with "
             "half their ports down: 32 NICs per leaf)",
             "32 / nics_per_node", 1, 1e6),
       count("levels", "switch levels of a fat-tree: 2 (leaf, spine) or 3 (leaf, pod spine, core)",
             "2", 2, 3),
       count("leaves_per_pod", "leaf switches per pod of a three-level fat-tree", "16", 1, 1e6),
       positive(leaf("pod_oversubscription", ValueType::kNumber,
                     "downlink:uplink ratio of a pod's uplinks (three-level fat-tree)", "1"),
                1024),
       positive(leaf("oversubscription", ValueType::kNumber,
                     "downlink:uplink ratio at the first switch level above the leaves", "1"),
                1024),
       torus_dims, dragonfly,
       at_most(leaf("torus_hop_latency", ValueType::kDuration,
                    "torus: latency each hop adds beyond the first (a route of h hops takes "
                    "latency + (h - 1) x torus_hop_latency)",
                    "latency"),
               kMaxLatency),
       physical(leaf("protocol_efficiency", ValueType::kNumber,
                     "usable fraction of line rate for bulk transfers [0.01-1]", "from preset"),
                kMinEfficiency, 1),
       leaf("in_network_reduction", ValueType::kBool,
            "the InfiniBand switches reduce in the network (NVIDIA SHARP), so that NCCL can run "
            "all-reduce as CollNet: algorithm auto considers it, and dtsim collective --algorithm "
            "collnet runs it; InfiniBand only",
            "false"),
       at_most(leaf("switch_port_power", ValueType::kPower,
                    "power of one switch port (a switch's power over its ports), charged for "
                    "every port the topology uses",
                    "from preset"),
               kMaxGpuPower)});

  SchemaNode profile = leaf(
      "profile", ValueType::kString,
      "a hardware profile that dtsim calibrate wrote (docs/real-mode.md, Profiles): its measured "
      "memory bandwidth, launch overhead, GEMM rates per shape and intra-node link replace the "
      "figures of cluster.gpu (whose name must match the profile's gpu_model) and "
      "cluster.intra_node, after any fields set here; a relative path is taken from the scenario "
      "file's directory, or from the current directory with --set",
      "none");
  SchemaNode cluster = section(
      "cluster", "the machines",
      {gpu, count("nodes", "number of nodes", "1", 1, kMaxNodes),
       count("gpus_per_node", "GPUs in each node", "8", 1, kMaxGpusPerNode), intra, network,
       profile,
       at_most(leaf("node_power", ValueType::kPower,
                    "power of each node beyond its GPUs (CPUs and NICs), e.g. 1.2kW",
                    "the GPU's reference server: its CPUs' TDP + NICs x the network's NIC power"),
               kMaxNodePower),
       physical(leaf("pue", ValueType::kNumber,
                     "power usage effectiveness: the facility's power over the IT "
                     "equipment's, at least 1 (Uptime Institute, 2023 industry average: 1.58)",
                     "1.58"),
                1, 3),
       leaf("price_per_gpu_hour", ValueType::kMoney,
            "what one GPU costs per hour, with a currency code, e.g. 2.49USD; gives the run's cost",
            "none"),
       at_most(leaf("carbon_intensity", ValueType::kNumber,
                    "the grid's carbon intensity in g CO2e per kWh, e.g. 429; gives the run's "
                    "emissions",
                    "none"),
               2000)});

  auto tp = count("tensor", "tensor-parallel size t (Megatron-LM: divides the heads and the node)",
                  "1", 1, kMaxDegree);
  auto pp = count("pipeline", "pipeline-parallel size p", "1", 1, kMaxDegree);
  auto dp = leaf("data", ValueType::kCountOrAuto,
                 "data-parallel size d; auto = GPUs / (t x p x context)", "auto");
  dp.min = 1;
  dp.max = kMaxDegree * 100;
  auto cp = count("context",
                  "context-parallel size: each rank holds seq_length / context tokens and "
                  "all-gathers the other keys and values",
                  "1", 1, kMaxDegree);
  auto ep = count("expert",
                  "expert-parallel size for MoE models: each rank holds num_experts / expert "
                  "experts; carved out of the data-parallel ranks (divides data)",
                  "1", 1, kMaxDegree);
  // Megatron-LM's argument names and the short forms papers use, as other spellings.
  tp = with_aliases(tp, {"tp", "tensor_model_parallel_size"});
  pp = with_aliases(pp, {"pp", "pipeline_model_parallel_size"});
  dp = with_aliases(dp, {"dp", "data_parallel_size"});
  cp = with_aliases(cp, {"cp", "context_parallel_size"});
  ep = with_aliases(ep, {"ep", "expert_model_parallel_size"});
  auto sp = leaf("sequence_parallel", ValueType::kBool,
                 "Megatron sequence parallelism: norms and dropouts split over the TP group, "
                 "all-reduces become reduce-scatter + all-gather",
                 "false");
  auto schedule =
      choice("schedule", kScheduleNames.names(),
             "pipeline schedule (matters when pipeline > 1): gpipe, 1f1b, interleaved (flushed "
             "every step), pipedream-async (no flush, a weight update per micro-batch, p - s "
             "weight versions on stage s; Narayanan et al. 2019) or pipedream-2bw (no flush, one "
             "update per step, two weight versions; Narayanan et al. 2021)",
             std::string(to_string(Schedule::k1F1B)));
  auto vs = with_aliases(
      count("virtual_stages", "model chunks per device for schedule: interleaved (Megatron-LM's v)",
            "1", 1, 1e4),
      {"virtual_pipeline_model_parallel_size"});
  auto zero =
      count("zero_stage", "ZeRO stage: 0 none, 1 optimizer, 2 + gradients, 3 + weights (FSDP)", "0",
            0, 3);
  auto lps = leaf("layers_per_stage", ValueType::kCountList,
                  "transformer blocks per pipeline stage (per model chunk when interleaved), "
                  "first stage first",
                  "even split");
  auto tpo = leaf("tp_comm_overlap", ValueType::kBool,
                  "overlap each TP collective with the GEMM it feeds or drains (Transformer "
                  "Engine userbuffers; needs sequence_parallel)",
                  "false");
  auto psg = leaf("pipeline_scatter_gather", ValueType::kBool,
                  "send 1/t of each activation between stages and all-gather it over the TP "
                  "group on arrival (Narayanan et al. 2021, section 4.1)",
                  "false");
  auto order = leaf("order", ValueType::kString,
                    "rank placement, innermost dimension first: a permutation of tp, cp, pp, dp "
                    "joined by '-'",
                    to_string(kDefaultPlacementOrder));
  SchemaNode parallelism =
      section("parallelism", "how the job is split over GPUs",
              {tp, pp, dp, cp, ep, sp, schedule, vs, zero, lps, tpo, psg, order});

  auto sync = choice(
      "sync", kSyncModeNames.names(),
      "how data-parallel replicas synchronise (docs/models.md, \"Relaxed synchronisation\" and "
      "\"Parameter servers\"): synchronous (every step all-reduces the gradients), "
      "parameter-server (gradient shards pushed to and parameter shards pulled from the servers "
      "of training.parameter_server; Li et al. 2014), async (asynchronous SGD: each worker "
      "pushes and pulls on its own, the servers apply updates in arrival order; Dean et al. "
      "2012), ssp (stale synchronous parallel: a replica runs at most `staleness` steps ahead "
      "of the slowest; Ho et al. 2013), local-sgd (local steps, the parameters averaged every "
      "local_sgd_period steps; Stich 2019, Lin et al. 2020) or easgd (elastic averaging with a "
      "center variable every easgd_period steps; Zhang et al. 2015)",
      "synchronous");
  auto staleness = count("staleness",
                         "sync ssp: the staleness bound s, in steps: a replica may start step c "
                         "while the slowest has finished step c - s - 1 (0 is synchronous)",
                         "0", 0, 1e6);
  auto local_sgd_period = count("local_sgd_period",
                                "sync local-sgd: H, the steps between parameter averagings (1 "
                                "averages every step, as synchronous training does)",
                                "1", 1, 1e6);
  auto easgd_period = count("easgd_period",
                            "sync easgd: tau, the local steps between elastic exchanges with the "
                            "center variable (Zhang et al. 2015, the communication period)",
                            "1", 1, 1e6);
  SchemaNode staleness_penalty =
      leaf("staleness_penalty", ValueType::kFreeform,
           "a statistical-efficiency model turning throughput under stale updates into time to "
           "accuracy (not supported yet: dtsim reports throughput and the staleness histogram)",
           "");
  staleness_penalty.unsupported = [](const Value&) -> std::optional<std::string> {
    return "dtsim reports throughput and, under async, the staleness histogram "
           "(parameter_server.staleness_histogram), not time to accuracy; remove "
           "training.staleness_penalty";
  };
  SchemaNode parameter_server = section(
      "parameter_server",
      "sync parameter-server and async: the sharded servers (each holds 1/servers of every "
      "gradient and parameter)",
      {count("servers", "number of servers S (at least 1; at most 10000, each a simulated rank)",
             "1", 1, 1e4),
       choice("placement", {"dedicated", "colocated"},
              "dedicated: each server on a node of its own appended to the cluster (the "
              "cluster's node kind, one NIC); colocated: server j shares worker floor(j x "
              "workers / servers)'s GPU and NIC",
              "dedicated"),
       choice("updates", {"sync", "async"},
              "sync: the servers update once every worker has pushed (one step); async: each "
              "push is applied on arrival (as sync: async)",
              "sync")});
  auto compression = choice(
      "compression", kCompressionNames.names(),
      "data-parallel gradient compression (docs/models.md, \"Gradient compression\"): fp16, bf16 "
      "or fp8 send each gradient in that format; int8 one byte per gradient and an fp32 scale "
      "per bucket; topk the largest compression_density share with 4-byte indices over an "
      "all-gather (Lin et al. 2018); powersgd rank-powersgd_rank factors over two all-reduces "
      "(Vogels et al. 2019); the compress and decompress kernels run in the step",
      "none");
  auto density = positive(leaf("compression_density", ValueType::kNumber,
                               "compression topk: the share of each bucket's gradients sent, in "
                               "(0, 1] (Deep Gradient Compression uses 0.001)",
                               "0.01"),
                          1);
  auto powersgd_rank =
      count("powersgd_rank",
            "compression powersgd: the rank r of the factors P (n x r) and Q (m x r) sent for each "
            "n x m weight matrix; at most min(n, m) of every matrix",
            "4", 1, 1e6);
  auto error_feedback =
      choice("error_feedback", {"auto", "true", "false"},
             "keep what compression dropped in a residual buffer (one gradient's worth of "
             "memory, read and written every step) and add it to the next gradient; auto = on "
             "for topk and powersgd, off for the casts and int8",
             "auto");
  auto moe_load_imbalance =
      leaf("moe_load_imbalance", ValueType::kNumberOrAuto,
           "MoE under expert parallelism: routed tokens of the busiest expert-parallel rank over "
           "the mean, per layer and micro-batch; every rank's expert kernels wait for it at the "
           "combine all-to-all, so they take this factor longer. auto = the expected maximum "
           "when each token picks its top-k experts uniformly at random (1.0146 for Mixtral "
           "8x7B: 4096 tokens a rank, top-2 of 8 experts over 8 ranks); give a factor measured "
           "on the trained router where one is known",
           "auto");
  moe_load_imbalance.min = 1;
  moe_load_imbalance.max = 100;
  auto recompute_layers =
      leaf("recompute_layers", ValueType::kCountOrAuto,
           "with recompute full: recompute only the first N transformer layers of each pipeline "
           "chunk (virtual stage with interleaving) and keep the others' activations, as "
           "Megatron-core's recompute_method block with recompute_num_layers N; auto = every "
           "layer. Set aside, with a note, under recompute none or selective",
           "auto");
  recompute_layers.min = 0;
  recompute_layers.max = 1e6;
  SchemaNode training = section(
      "training", "the optimisation step",
      {choice("framework", kFrameworkNames.names(),
              "training framework whose documented behaviour sets the defaults of "
              "overlap_grad_reduce, gradient_bucket, first_gradient_bucket, flash_attention, "
              "moe_permute_fusion and moe_router_fusion (and parallelism.zero_stage for nemo and "
              "fsdp); a key set in the scenario or by --set "
              "overrides it (docs/models.md, \"Framework profiles\")",
              std::string(to_string(Framework::kCustom))),
       count("global_batch_size", "samples per optimizer step B", "micro_batch_size x data", 1,
             1e12),
       count("micro_batch_size", "samples per micro-batch b", "1", 1, 1e9),
       choice("precision", kDTypeNames.names(),
              "compute precision (mixed precision keeps fp32 master weights)",
              std::string(to_string(DType::kBf16))),
       choice("recompute", kRecomputeNames.names(), "activation recomputation",
              std::string(to_string(Recompute::kNone))),
       recompute_layers,
       leaf("runtime_reserve", ValueType::kBytes,
            "device memory held outside the modelled tensors: CUDA context, cuBLAS and NCCL "
            "workspaces, caching-allocator slack (an assumption until dtsim calibrate measures "
            "it)",
            "1GiB"),
       leaf("flash_attention", ValueType::kBool,
            "fused FlashAttention kernels (no a x s^2 scores stored or streamed); off gives "
            "Megatron-LM's unfused attention, which Korthikanti et al.'s formulas describe "
            "(default: the framework's)",
            "false"),
       leaf("fp8_params", ValueType::kBool,
            "keep the model's weights in FP8, one byte per parameter, and all-gather them in "
            "FP8 (Transformer Engine's fp8_model_init; Megatron-core --fp8-param-gather): half "
            "the weights' memory and the ZeRO/FSDP weight all-gathers' bytes of bf16, the "
            "optimizer's fp32 master copy unchanged; needs precision fp8",
            "false"),
       leaf("moe_permute_fusion", ValueType::kBool,
            "MoE token permutation as one fused kernel each way (each routed copy read and "
            "written once); off gives Megatron-core's PyTorch operations: a stable argsort and "
            "a gather before the dispatch all-to-all, zeros, a scatter-add, the multiply by the "
            "routing weights and a sum after the combine, and their backwards (default: the "
            "framework's)",
            "true"),
       leaf("moe_router_fusion", ValueType::kBool,
            "MoE router's top-k, softmax and load-balancing statistics as one fused kernel; off "
            "gives Megatron-core's separate PyTorch operations, each a kernel launch (default: "
            "the framework's)",
            "true"),
       moe_load_imbalance,
       choice("optimizer", kOptimizerNames.names(), "optimizer",
              std::string(to_string(Optimizer::kAdam))),
       positive(leaf("gradient_bucket", ValueType::kBytes,
                     "gradient bucket size: gradients, taken in reverse layer order, are packed "
                     "into buckets of this many bytes (a layer split across buckets where "
                     "needed), each all-reduced (reduce-scattered under ZeRO 1-2) once backward "
                     "has produced all of it (PyTorch DDP's bucket_cap_mb, 25 MiB by default; "
                     "default: the framework's)",
                     "25MiB"),
                1e15),
       positive(leaf("first_gradient_bucket", ValueType::kBytes,
                     "size of the first gradient bucket, the last layers' (PyTorch DDP uses 1 MiB; "
                     "default: the framework's)",
                     "1MiB"),
                1e15),
       choice("grad_dtype", {"auto", "fp32", "bf16", "fp16"},
              "precision gradients are accumulated, stored and reduced in: bytes per parameter "
              "in memory and on the data-parallel all-reduce or reduce-scatter; auto = fp16 "
              "when precision is fp16, fp32 otherwise (Megatron-LM accumulates and reduces "
              "bf16 training's gradients in fp32; PyTorch AMP's gradients are fp32)",
              "auto"),
       leaf("overlap_grad_reduce", ValueType::kBool,
            "overlap gradient all-reduce with the rest of backward (default: the framework's)",
            "true"),
       sync,
       staleness,
       local_sgd_period,
       easgd_period,
       parameter_server,
       staleness_penalty,
       compression,
       density,
       powersgd_rank,
       error_feedback,
       count("steps", "optimizer steps of the whole run (with failures: goodput, time to train)",
             "1", 1, 1e12),
       positive(leaf("tokens", ValueType::kNumber,
                     "the whole run as tokens instead of steps: tokens / (global_batch_size x "
                     "seq_length) steps, rounded up; a count may take an SI suffix (300B, 1T)",
                     "steps x global_batch_size x seq_length"),
                1e18)});

  auto stragglers = leaf(
      "stragglers", ValueType::kFreeform,
      "slow GPUs and links, a list of: {ranks: [3, 7], slowdown: 1.3} or {nodes: [2], "
      "slowdown: 1.3} (every kernel of those GPUs takes 1.3 times as long); {random: {p: 0.01, "
      "slowdown: 2.0, per: step, duration: 1}} (each GPU, independently with probability p per "
      "step, or per compute op with per: op, runs `duration` steps or ops slowed; seeded by "
      "simulate.seed); {link: {node: 5, nic: 0}, fraction: 0.5} or {link: {node: 5, uplink: "
      "true}, fraction: 0.5} (a NIC or the node's switch uplink at that fraction of its rate); "
      "{throttle: {ranks: [...] | nodes: [...] | all: true, period: 10min, slowdown: 1.1, duty: "
      "0.5}} (slowed for the first duty x period of each period; a step takes the factor of "
      "its start time, docs/user-guide.md, Stragglers)",
      "[]");
  // Whole runs, failures and checkpoints (core/reliability; docs/user-guide.md, "Failures,
  // checkpoints and goodput").
  SchemaNode failures = section(
      "failures",
      "component failures over a whole run (each *_mtbf is per component; the counts come from "
      "the cluster): the run is simulated step by step to failure and restart",
      {});
  for (const auto& c : reliability::kComponentClassNames) {
    const std::string name(c.name);
    const std::string what =
        c.value == reliability::ComponentClass::kGpu      ? "one GPU (every GPU of the cluster)"
        : c.value == reliability::ComponentClass::kHbm    ? "one GPU's HBM stacks (one per GPU)"
        : c.value == reliability::ComponentClass::kNode   ? "one node's host (CPU, memory, board)"
        : c.value == reliability::ComponentClass::kNic    ? "one NIC (nodes x nics_per_node)"
        : c.value == reliability::ComponentClass::kLink   ? "one NIC-to-switch cable (one per NIC)"
        : c.value == reliability::ComponentClass::kSwitch ? "one leaf or rail switch"
                                                          : "the job's software stack as a whole";
    failures.children.push_back(
        positive(leaf(name + "_mtbf", ValueType::kDuration,
                      "mean time between failures of " + what + ", e.g. 50000h", "no failures"),
                 1e15));
  }
  failures.children.push_back(choice("distribution", reliability::kFailureDistributionNames.names(),
                                     "time between failures of one component", "exponential"));
  failures.children.push_back(positive(
      leaf("shape", ValueType::kNumber,
           "Weibull shape k (distribution: weibull): below 1 infant mortality, above 1 wear-out",
           "1"),
      100));
  failures.children.push_back(leaf(
      "events", ValueType::kFreeform,
      "scripted failures at given wall times, e.g. [{at: 120s, kind: node, node: 3}]: kind is one "
      "of gpu, hbm, node, nic, link, switch, software; node (optional) must exist",
      "[]"));
  failures.children.push_back(positive(
      leaf("detection_timeout", ValueType::kDuration,
           "how long a hung collective takes to be detected (the NCCL watchdog): PyTorch's "
           "ProcessGroupNCCL default, 10 minutes (pytorch/pytorch PR 110947)",
           "10min"),
      1e9));
  SchemaNode checkpoint = section(
      "checkpoint",
      "checkpoints and recovery: the state written is the model's weights and optimizer states",
      {positive(leaf("interval", ValueType::kDuration,
                     "training time between checkpoints (rounded to whole steps)",
                     "the Young/Daly optimum sqrt(2 x checkpoint stall x job MTBF)"),
                1e15),
       physical(leaf("write_bandwidth", ValueType::kBandwidth,
                     "aggregate bandwidth to checkpoint storage: Llama 3's Tectonic sustains "
                     "2 TB/s (Dubey et al. 2024, The Llama 3 Herd of Models, section 3.3)",
                     "2TBps"),
                1e6, 1e18),
       choice("mode", reliability::kCheckpointModeNames.names(),
              "sync: training stops while the state is written; async: it stops only while each "
              "GPU copies its state to host memory, and the write runs beside training",
              "sync"),
       physical(leaf("snapshot_bandwidth", ValueType::kBandwidth,
                     "mode async: one GPU's device-to-host copy rate: PCIe 5.0 x16, 32 GT/s x 16 "
                     "lanes x 128/130 = 63 GB/s per direction (PCI-SIG)",
                     "63GBps"),
                1e6, 1e15),
       at_most(leaf("restart_overhead", ValueType::kDuration,
                    "relaunch after a failure, the checkpoint read included (an assumption: set "
                    "your cluster's figure)",
                    "5min"),
               1e9),
       count("spare_nodes", "spare nodes that replace failed ones", "unlimited", 0, 1e7),
       at_most(leaf("repair_time", ValueType::kDuration,
                    "until a failed node is back as a spare (an assumption: set your site's "
                    "figure)",
                    "24h"),
               1e12),
       leaf("elastic", ValueType::kBool,
            "with no spare left, continue with fewer data-parallel replicas (same global batch) "
            "instead of waiting for a repair",
            "false")});

  // Other jobs on the same cluster (docs/simgrid-platform.md, "Background traffic"): their
  // traffic is a steady share of every network link, applied once to the Cluster's usable NIC
  // rate (core/hardware/cluster.h), from which the SimGrid platform's NIC, uplink and torus
  // links and the analytic closed forms all read.
  // A second job read from its own scenario (driver/shared_cluster.h): both jobs on one SimGrid
  // platform of this cluster's hardware, the other job on further nodes.
  SchemaNode background_scenario = leaf(
      "scenario", ValueType::kString,
      "another job's scenario file (relative to this file's directory), placed on further nodes "
      "of this cluster (same GPU, fabric and network, checked) and simulated together with this "
      "job on one platform, so that both share the network's uplinks; simgrid engine only. The "
      "results report both jobs (background_job.*)",
      "none");
  SchemaNode background_placement =
      choice("placement", {"after", "interleaved"},
             "where the other job's nodes go: after this job's nodes, or interleaved node by node "
             "with them (so that both jobs share every leaf switch)",
             "after");
  SchemaNode background = section(
      "background", "other jobs' traffic on the same cluster's network",
      {at_most(leaf("link_fraction", ValueType::kNumber,
                    "the share of every network link's usable rate (NICs, leaf, rail and pod "
                    "uplinks, torus cables) that other jobs' traffic holds, in [0, 0.999]: this "
                    "job sees (1 - link_fraction) of each, at least a thousandth, as a straggler "
                    "link keeps; links inside a node are not shared",
                    "0"),
               0.999),
       background_scenario, background_placement});

  auto engine = choice("engine", {},
                       "executor, one of the registered engines (`dtsim catalog engines` "
                       "describes each): simgrid, the discrete-event simulator (contention, "
                       "topology), and analytic, the closed form (instant, no contention)",
                       "simgrid");
  engine.catalog = engine_choices;
  auto fidelity = choice("fidelity", kFidelitySettingNames.names(),
                         "SimGrid granularity: chunk = every ring step is a flow; collective = one "
                         "bulk flow per ring edge; auto = chunk while the run has at most 500k "
                         "chunk-level flows (docs/simgrid-platform.md, Fidelity)",
                         "auto");
  SchemaNode simulate =
      section("simulate", "how to run the prediction",
              {engine, fidelity,
               choice("symmetry_folding", {"auto", "off"},
                      "simulate one tensor- and context-parallel rank per stage and stand it for "
                      "the others: auto does so where that is exact (every GPU has its own NIC, "
                      "NVSwitch or NVLink inside nodes, a non-blocking switched network), off "
                      "simulates them all",
                      "auto"),
               count("iterations", "training steps to simulate", "1", 1, 1e6),
               count("seed", "random seed (same seed, same output)", "0", 0, 9e15)});

  return section(
      "", "a dtsim scenario",
      {leaf("name", ValueType::kString, "scenario name, shown in reports", "the file name"),
       leaf("description", ValueType::kString, "free text", ""), cluster, model_section(),
       parallelism, training, stragglers, failures, checkpoint, background, simulate});
}

}  // namespace

bool register_model_schema(ModelSchemaBuilder build) {
  ModelSchemaRegistry& registry = model_schema_registry();
  if (registry.build == build) return true;
  if (registry.build || registry.schema_built)
    throw std::logic_error(registry.build ? "a second, different model schema was registered"
                                          : "the model schema was registered after the scenario "
                                            "schema was built");
  registry.build = build;
  return true;
}

const SchemaNode& scenario_schema() {
  static const SchemaNode schema = [] {
    SchemaNode root = build_schema();
    model_schema_registry().schema_built = true;
    return root;
  }();
  return schema;
}

}  // namespace dtsim
