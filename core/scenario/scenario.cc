#include "core/scenario/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/hardware/torus.h"

namespace dtsim {

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::kGpipe:
      return "gpipe";
    case Schedule::k1F1B:
      return "1f1b";
    case Schedule::kInterleaved:
      return "interleaved";
    case Schedule::kPipeDreamAsync:
      return "pipedream-async";
  }
  return "?";
}
std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}
std::string_view to_string(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam:
      return "adam";
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kAdafactor:
      return "adafactor";
  }
  return "?";
}
namespace {
// Names of the parallel dimensions in parallelism.order, by ParallelDim.
constexpr std::array<const char*, 4> kDimNames{"tp", "cp", "pp", "dp"};
}  // namespace

std::string to_string(const std::array<ParallelDim, 4>& order) {
  std::string text;
  for (ParallelDim d : order)
    text += (text.empty() ? "" : "-") + std::string(kDimNames[static_cast<size_t>(d)]);
  return text;
}

bool parse_placement_order(const std::string& text, std::array<ParallelDim, 4>* order) {
  std::stringstream in(text);
  std::string part;
  std::vector<ParallelDim> dims;
  while (std::getline(in, part, '-')) {
    const auto* name = std::find(kDimNames.begin(), kDimNames.end(), part);
    if (name == kDimNames.end()) return false;
    dims.push_back(static_cast<ParallelDim>(name - kDimNames.begin()));
  }
  if (dims.size() != 4) return false;
  auto sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  std::copy(dims.begin(), dims.end(), order->begin());
  return true;
}

int64_t Scenario::micro_batches() const {
  int64_t per_step = training.micro_batch_size.value * parallelism.data.value;
  return per_step > 0 ? training.global_batch_size.value / per_step : 0;
}

namespace {

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// Typed access to validated entries, with defaults for absent keys.
class Reader {
 public:
  explicit Reader(const EntryMap& e) : entries_(e) {}

  const Entry* find(const std::string& path) const {
    auto it = entries_.find(path);
    return it == entries_.end() ? nullptr : &it->second;
  }
  template <class T>
  std::optional<T> get(const std::string& path) const {
    if (const Entry* e = find(path))
      if (const T* v = std::get_if<T>(&e->value)) return *v;
    return std::nullopt;
  }
  template <class T>
  T get_or(const std::string& path, T fallback) const {
    return get<T>(path).value_or(fallback);
  }
  SourceLocation where(const std::string& path) const {
    const Entry* e = find(path);
    return e ? e->where : SourceLocation{};
  }
  // A located int from a count key.
  Located<int> count(const std::string& path, int fallback) const {
    return {static_cast<int>(get_or<int64_t>(path, fallback)), where(path)};
  }

 private:
  const EntryMap& entries_;
};

bool looks_binary(const std::string& bytes) {
  if (bytes.find('\0') != std::string::npos) return true;
  // YAML is Unicode text: invalid UTF-8 means a binary (or mis-encoded) file.
  for (size_t i = 0; i < bytes.size();) {
    auto c = static_cast<unsigned char>(bytes[i]);
    size_t extra = c < 0x80           ? 0
                   : (c >> 5) == 0x6  ? 1
                   : (c >> 4) == 0xE  ? 2
                   : (c >> 3) == 0x1E ? 3
                                      : 9;
    if (extra == 9 || i + extra >= bytes.size() + (extra == 0 ? 1 : 0)) return extra != 0;
    for (size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return true;
    i += extra + 1;
  }
  return false;
}

std::vector<std::string> leaf_paths(const SchemaNode& node, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& c : node.children) {
    std::string p = prefix.empty() ? c.key : prefix + "." + c.key;
    out.push_back(p);
    for (auto& sub : leaf_paths(c, p)) out.push_back(std::move(sub));
  }
  return out;
}

void apply_override(const Override& ov, int index, EntryMap& entries, DiagnosticSink& sink) {
  const SourceLocation loc{"--set", index, 0};
  auto eq = ov.text.find('=');
  if (eq == std::string::npos || eq == 0) {
    sink.add(
        loc, "",
        "expected --set key.path=value (e.g. --set cluster.nodes=16), found '" + ov.text + "'");
    return;
  }
  std::string path = ov.text.substr(0, eq);
  std::string value_text = ov.text.substr(eq + 1);
  const SchemaNode* node = find_schema_node(scenario_schema(), path);
  if (!node) {
    std::string msg = "unknown key path '" + path + "'";
    if (auto dym = did_you_mean(path, leaf_paths(scenario_schema(), "")); !dym.empty())
      msg += "; did you mean '" + dym + "'?";
    sink.add(loc, path, msg);
    return;
  }
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    sink.add(loc, path, "cannot parse the value '" + value_text + "': " + e.msg);
    return;
  }
  // The override replaces the key and anything under it.
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->first == path || it->first.rfind(path + ".", 0) == 0)
      it = entries.erase(it);
    else
      ++it;
  }
  validate(value, *node, path, "--set", loc, entries, sink);
}

GpuSpec resolve_gpu(const Reader& r, const std::string& file, DiagnosticSink& sink) {
  const std::string path = "cluster.gpu";
  auto name = r.get<std::string>(path);
  if (!name) name = "H100-SXM";  // the schema default
  if (!name->empty()) {
    if (const GpuSpec* g = find_gpu(*name)) return *g;
    sink.add(r.where(path), path, "unknown GPU '" + *name + "'");
    return GpuSpec{};
  }
  // Inline spec.
  GpuSpec spec;
  if (auto base = r.get<std::string>(path + ".base")) {
    if (const GpuSpec* g = find_gpu(*base)) {
      spec = *g;
    } else {
      std::vector<std::string> names;
      for (const auto& g2 : gpu_catalog()) names.push_back(g2.name);
      std::string msg = "unknown catalog GPU '" + *base + "'";
      if (auto dym = did_you_mean(*base, names); !dym.empty())
        msg += "; did you mean '" + dym + "'?";
      sink.add(r.where(path + ".base"), path + ".base", msg);
    }
  }
  spec.name = r.get_or<std::string>(path + ".name",
                                    spec.name.empty() ? "custom-gpu" : spec.name + "-custom");
  spec.source = "inline spec in " + file;
  for (DType t : {DType::kFp32, DType::kTf32, DType::kFp16, DType::kBf16, DType::kFp8})
    if (auto p = r.get<FlopsPerSecond>(path + ".peak." + std::string(to_string(t))))
      spec.peak[t] = *p;
  if (auto m = r.get<Bytes>(path + ".memory")) spec.memory = *m;
  if (auto b = r.get<BytesPerSecond>(path + ".memory_bandwidth")) spec.memory_bandwidth = *b;
  if (auto e = r.get<double>(path + ".gemm_efficiency")) spec.gemm_efficiency = *e;
  if (auto e = r.get<double>(path + ".attention_efficiency")) spec.attention_efficiency = *e;
  if (auto e = r.get<double>(path + ".memory_efficiency")) spec.memory_efficiency = *e;
  if (auto t = r.get<Seconds>(path + ".kernel_launch_overhead")) spec.kernel_launch_overhead = *t;
  if (auto n = r.get<int64_t>(path + ".sm_count")) spec.sm_count = static_cast<int>(*n);
  std::vector<std::string> missing;
  if (spec.peak.empty()) missing.push_back("peak (e.g. peak: {bf16: 312TFLOPS})");
  if (spec.memory.value() <= 0) missing.push_back("memory");
  if (spec.memory_bandwidth.value() <= 0) missing.push_back("memory_bandwidth");
  if (!missing.empty()) {
    std::string msg = "an inline GPU needs ";
    for (size_t i = 0; i < missing.size(); ++i) msg += (i ? ", " : "") + missing[i];
    msg += ", or base: CATALOG-NAME to start from";
    sink.add(r.where(path), path, msg);
  }
  return spec;
}

IntraNodeFabricSpec resolve_fabric(const Reader& r, const GpuSpec& gpu, const std::string& file,
                                   DiagnosticSink& sink) {
  const std::string path = "cluster.intra_node";
  std::string name = r.get_or<std::string>(path, "nvswitch");
  if (!r.find(path)) {
    if (gpu.default_intra_node.empty()) {
      sink.add(r.where("cluster.gpu"), path,
               "the inline GPU has no usual board, so name its fabric: cluster.intra_node: "
               "nvswitch-nvlink4, pcie-gen5, ... (dtsim catalog fabrics) or an inline spec");
      return {};
    }
    name = gpu.default_intra_node;
  }
  if (name.empty()) {  // inline
    IntraNodeFabricSpec f;
    f.name = r.get_or<std::string>(path + ".name", "custom-fabric");
    std::string kind = r.get_or<std::string>(path + ".kind", "switch");
    f.kind = kind == "mesh"   ? FabricKind::kMesh
             : kind == "ring" ? FabricKind::kRing
             : kind == "pcie" ? FabricKind::kPcie
                              : FabricKind::kSwitch;
    f.latency = r.get_or<Seconds>(path + ".latency", Seconds(1e-6));
    if (auto b = r.get<BytesPerSecond>(path + ".bandwidth"))
      f.per_gpu_bandwidth = *b;
    else
      sink.add(r.where(path), path, "an inline intra-node fabric needs bandwidth (e.g. 450GBps)");
    f.protocol_efficiency = r.get_or<double>(path + ".protocol_efficiency", 1.0);
    f.source = "inline spec in " + file;
    return f;
  }
  std::string resolved = name;
  const std::string& home = gpu.default_intra_node;
  if (name == "nvswitch") {
    if (home.rfind("nvswitch", 0) != 0) {
      sink.add(r.where(path), path,
               gpu.name + " has no NVSwitch board" +
                   (home.empty() ? "" : " (its usual fabric is " + home + ")") +
                   "; name a fabric from dtsim catalog fabrics, pcie, or an inline spec");
      return {};
    }
    resolved = home;
  } else if (name == "pcie") {
    // The PCIe generation a GPU of that era sits on.
    resolved = home == "nvswitch-nvlink2" || home == "nvlink-hybrid-cube-mesh" ? "pcie-gen3"
               : home == "nvswitch-nvlink4" || home == "nvswitch-nvlink5"      ? "pcie-gen5"
                                                                               : "pcie-gen4";
  }
  if (const IntraNodeFabricSpec* f = find_fabric(resolved)) return *f;
  sink.add(r.where(path), path,
           "no fabric named '" + resolved + "' in the catalog (dtsim catalog fabrics)");
  return {};
}

NetworkConfig resolve_network(const Reader& r, DiagnosticSink& sink) {
  const std::string p = "cluster.network";
  NetworkConfig n;
  auto kind = r.get<std::string>(p + ".kind");
  std::string preset =
      r.get_or<std::string>(p + ".preset", !kind || *kind == "infiniband" ? "ib-ndr"
                                           : *kind == "roce"              ? "roce-400g"
                                                                          : "eth-100g");
  const NetworkSpec* spec = find_network(preset);
  if (!spec) {
    sink.add(r.where(p + ".preset"), p + ".preset",
             "no network named '" + preset + "' in the catalog");
    return n;
  }
  n.preset = spec->name;
  n.kind = spec->kind;
  if (kind) {
    NetworkKind k = *kind == "infiniband" ? NetworkKind::kInfiniBand
                    : *kind == "roce"     ? NetworkKind::kRoCE
                                          : NetworkKind::kEthernet;
    if (r.find(p + ".preset") && k != spec->kind)
      sink.add(r.where(p + ".kind"), p + ".kind",
               "kind '" + *kind + "' contradicts preset '" + preset + "', which is " +
                   std::string(to_string(spec->kind)));
    n.kind = k;
  }
  std::string topo = r.get_or<std::string>(p + ".topology", "fat-tree");
  n.topology = topo == "star"             ? Topology::kStar
               : topo == "rail-optimized" ? Topology::kRailOptimized
               : topo == "torus"          ? Topology::kTorus
                                          : Topology::kFatTree;
  n.nic_bandwidth = r.get_or<BytesPerSecond>(p + ".nic_bandwidth", spec->port_bandwidth);
  n.latency = r.get_or<Seconds>(p + ".latency", spec->latency);
  n.protocol_efficiency = r.get_or<double>(p + ".protocol_efficiency", spec->protocol_efficiency);
  n.oversubscription = r.get_or<double>(p + ".oversubscription", 1.0);
  return n;
}

// Torus dimensions: given (1 to 3, product = nodes) or the near-cube default (core/hardware/torus.h).
void resolve_torus(const Reader& r, ClusterConfig& c, DiagnosticSink& sink) {
  const std::string key = "cluster.network.torus_dims";
  auto& net = c.network;
  net.torus_hop_latency = r.get_or<Seconds>("cluster.network.torus_hop_latency", net.latency);
  const auto dims = r.get<std::vector<int64_t>>(key);
  if (net.topology != Topology::kTorus) {
    for (const char* k : {"torus_dims", "torus_hop_latency"})
      if (r.find(std::string("cluster.network.") + k))
        sink.add(r.where(std::string("cluster.network.") + k), std::string("cluster.network.") + k,
                 std::string(k) + " applies to topology: torus, but the topology is " +
                     std::string(to_string(net.topology)));
    return;
  }
  if (!dims) {
    net.torus_dims = default_torus_dims(c.nodes);
    return;
  }
  std::string written = "[";
  double product = 1;
  for (size_t i = 0; i < dims->size(); ++i) {
    written += (i ? ", " : "") + std::to_string((*dims)[i]);
    product *= static_cast<double>((*dims)[i]);
  }
  written += "]";
  if (dims->empty() || dims->size() > 3) {
    sink.add(r.where(key), key,
             "expected 1 to 3 dimensions such as [4, 4] or [4, 4, 4], found " + written);
    return;
  }
  if (product != static_cast<double>(c.nodes)) {
    sink.add(r.where(key), key,
             "torus_dims " + written + " hold " + format_count(product) +
                 " nodes, but cluster.nodes is " + std::to_string(c.nodes) +
                 "; their product must equal nodes (or leave torus_dims out for a near-cube "
                 "default)");
    return;
  }
  for (int64_t k : *dims) net.torus_dims.push_back(static_cast<int>(k));
}

Scenario build(const std::string& file, EntryMap entries, DiagnosticSink& sink) {
  Scenario s;
  s.file = file;
  Reader r(entries);
  s.name = r.get_or<std::string>("name", "");
  if (s.name.empty()) {
    auto slash = file.find_last_of('/');
    s.name = file.substr(slash == std::string::npos ? 0 : slash + 1);
    if (auto dot = s.name.rfind(".yaml"); dot != std::string::npos) s.name.erase(dot);
  }
  s.description = r.get_or<std::string>("description", "");

  // Cluster.
  auto& c = s.cluster;
  c.gpu = resolve_gpu(r, file, sink);
  c.gpu_where = r.where("cluster.gpu");
  c.nodes = r.count("cluster.nodes", 1).value;
  c.gpus_per_node = r.count("cluster.gpus_per_node", 8).value;
  c.intra_node = resolve_fabric(r, c.gpu, file, sink);
  c.network = resolve_network(r, sink);
  c.network.nics_per_node = r.count("cluster.network.nics_per_node", c.gpus_per_node).value;
  c.network.nodes_per_leaf =
      r.count("cluster.network.nodes_per_leaf", std::max(1, 32 / c.network.nics_per_node)).value;
  c.network.levels = r.count("cluster.network.levels", 2).value;
  c.network.leaves_per_pod = r.count("cluster.network.leaves_per_pod", 16).value;
  c.network.pod_oversubscription = r.get_or<double>("cluster.network.pod_oversubscription", 1.0);
  resolve_torus(r, c, sink);

  // Model: kept raw for models/.
  for (const auto& [path, entry] : entries)
    if (path.rfind("model.", 0) == 0) s.model.entries.emplace(path, entry);
  if (auto p = r.get<std::string>("model.preset"))
    s.model.preset = Located<std::string>{*p, r.where("model.preset")};
  if (auto f = r.get<std::string>("model.family"))
    s.model.family = Located<std::string>{*f, r.where("model.family")};
  if (!s.model.preset && !s.model.family)
    sink.add(SourceLocation{file, 0, 0}, "model",
             "expected model.preset (see dtsim catalog models) or model.family with its fields");

  // Parallelism.
  auto& par = s.parallelism;
  par.tensor = r.count("parallelism.tensor", 1);
  par.pipeline = r.count("parallelism.pipeline", 1);
  par.context = r.count("parallelism.context", 1);
  par.expert = r.count("parallelism.expert", 1);
  par.sequence_parallel = r.get_or<bool>("parallelism.sequence_parallel", false);
  std::string sched = r.get_or<std::string>("parallelism.schedule", "1f1b");
  par.schedule = sched == "gpipe"             ? Schedule::kGpipe
                 : sched == "interleaved"     ? Schedule::kInterleaved
                 : sched == "pipedream-async" ? Schedule::kPipeDreamAsync
                                              : Schedule::k1F1B;
  par.virtual_stages = r.count("parallelism.virtual_stages", 1).value;
  par.zero_stage = r.count("parallelism.zero_stage", 0).value;
  par.layers_per_stage = r.get_or<std::vector<int64_t>>("parallelism.layers_per_stage", {});
  par.tp_comm_overlap = r.get_or<bool>("parallelism.tp_comm_overlap", false);
  par.pipeline_scatter_gather = r.get_or<bool>("parallelism.pipeline_scatter_gather", false);
  if (par.pipeline_scatter_gather && (par.tensor.value < 2 || par.sequence_parallel))
    sink.add(r.where("parallelism.pipeline_scatter_gather"), "parallelism.pipeline_scatter_gather",
             "the scatter/gather optimisation splits a stage's output over the tensor-parallel "
             "group; it needs tensor > 1 and no sequence parallelism (which already sends only "
             "the shard)");
  if (auto order = r.get<std::string>("parallelism.order");
      order && !parse_placement_order(*order, &par.placement_order))
    sink.add(r.where("parallelism.order"), "parallelism.order",
             "expected the four dimensions tp, cp, pp and dp, each once, innermost first and "
             "joined by '-' (for example tp-cp-pp-dp, the default), found '" +
                 *order + "'");

  const int64_t gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
  // Beyond 2^20 GPUs per-rank tables stop fitting a workstation's memory; no cluster is that big.
  constexpr int64_t kMaxGpus = int64_t{1} << 20;
  if (gpus > kMaxGpus) {
    sink.add(r.where("cluster.nodes"), "cluster.nodes",
             "nodes x gpus_per_node = " + std::to_string(gpus) + " GPUs; dtsim models at most " +
                 std::to_string(kMaxGpus) + " (about a million)");
    s.entries = std::move(entries);
    return s;
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
    s.entries = std::move(entries);
    return s;
  }
  const int64_t model_parallel =
      static_cast<int64_t>(par.tensor.value) * par.pipeline.value * par.context.value;
  auto data_text = r.get<std::string>("parallelism.data");
  if (auto d = r.get<int64_t>("parallelism.data")) {
    par.data_auto = false;
    par.data = {static_cast<int>(*d), r.where("parallelism.data")};
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
      par.data = {static_cast<int>(gpus / model_parallel), r.where("parallelism.data")};
    }
  }

  // Training.
  auto& t = s.training;
  t.micro_batch_size = {r.get_or<int64_t>("training.micro_batch_size", 1),
                        r.where("training.micro_batch_size")};
  t.global_batch_size = {
      r.get_or<int64_t>("training.global_batch_size", t.micro_batch_size.value * par.data.value),
      r.where("training.global_batch_size")};
  t.precision = *dtype_from_string(r.get_or<std::string>("training.precision", "bf16"));
  std::string rc = r.get_or<std::string>("training.recompute", "none");
  t.recompute = rc == "full"        ? Recompute::kFull
                : rc == "selective" ? Recompute::kSelective
                                    : Recompute::kNone;
  std::string opt = r.get_or<std::string>("training.optimizer", "adam");
  t.optimizer = opt == "sgd"         ? Optimizer::kSgd
                : opt == "adafactor" ? Optimizer::kAdafactor
                                     : Optimizer::kAdam;
  t.gradient_bucket = r.get_or<Bytes>("training.gradient_bucket", t.gradient_bucket);
  t.first_gradient_bucket =
      r.get_or<Bytes>("training.first_gradient_bucket", t.first_gradient_bucket);
  t.overlap_grad_reduce = r.get_or<bool>("training.overlap_grad_reduce", true);
  t.flash_attention = r.get_or<bool>("training.flash_attention", false);
  t.runtime_reserve = r.get_or<Bytes>("training.runtime_reserve", t.runtime_reserve);
  t.sync = r.get_or<std::string>("training.sync", "synchronous");
  t.compression = r.get_or<std::string>("training.compression", "none");
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
  }
  // Pipeline schedules.
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
  if (!c.gpu.name.empty() && !c.gpu.supports(t.precision) && !c.gpu.peak.empty())
    sink.add(r.where("training.precision"), "training.precision",
             c.gpu.name + " has no " + std::string(to_string(t.precision)) +
                 " tensor-core peak in the catalog; choose a precision it supports");

  // Simulate.
  s.simulate.engine = r.get_or<std::string>("simulate.engine", "simgrid");
  s.simulate.fidelity = r.get_or<std::string>("simulate.fidelity", "auto");
  s.simulate.symmetry_folding =
      r.get_or<std::string>("simulate.symmetry_folding", "auto") == "auto";
  s.simulate.iterations = r.count("simulate.iterations", 1).value;
  s.simulate.seed = static_cast<uint64_t>(r.get_or<int64_t>("simulate.seed", 0));
  s.entries = std::move(entries);
  return s;
}

Scenario load_from_bytes(const std::string& bytes, const std::string& file,
                         const std::vector<Override>& overrides, const CrossCheck& check) {
  DiagnosticSink sink;
  const SourceLocation whole{file, 0, 0};
  if (looks_binary(bytes))
    throw InputError(Diagnostic{whole, "", "this is a binary file, not a YAML scenario"});
  YAML::Node root;
  try {
    root = YAML::Load(bytes);
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{SourceLocation{file, e.mark.line + 1, e.mark.column + 1}, "",
                                "YAML syntax error: " + e.msg});
  }
  if (root.IsNull() || !root.IsDefined())
    throw InputError(Diagnostic{whole, "",
                                "the scenario is empty; it needs at least a model section "
                                "(see scenarios/default.yaml)"});
  if (!root.IsMap())
    throw InputError(
        Diagnostic{SourceLocation{file, root.Mark().line + 1, root.Mark().column + 1}, "",
                   "expected a map of scenario sections (cluster, model, ...) at the top level"});
  EntryMap entries;
  validate(root, scenario_schema(), "", file, SourceLocation{}, entries, sink);
  for (size_t i = 0; i < overrides.size(); ++i)
    apply_override(overrides[i], static_cast<int>(i + 1), entries, sink);
  Scenario s = build(file, std::move(entries), sink);
  // Checks that need more than the scenario (the model's shape) report in the same pass, so a
  // TP size that does not divide the heads is named even when TP itself is not built yet.
  if (check) {
    try {
      check(s, sink);
    } catch (const InputError& e) {
      for (const auto& d : e.diagnostics()) {
        bool seen = false;
        for (const auto& known : sink.diagnostics())
          seen = seen || (known.key_path == d.key_path && known.message == d.message);
        if (!seen) sink.add(d);
      }
    }
  }
  sink.throw_if_any();
  return s;
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides,
                       const CrossCheck& check) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "",
                                "is a directory, not a scenario file (try " + path +
                                    (path.ends_with("/") ? "" : "/") + "default.yaml)"});
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "", "cannot open the scenario file"});
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    throw InputError(Diagnostic{SourceLocation{path, 0, 0}, "", "cannot read the scenario file"});
  return load_from_bytes(buf.str(), path, overrides, check);
}

Scenario load_scenario_text(const std::string& yaml_text, const std::string& name,
                            const std::vector<Override>& overrides, const CrossCheck& check) {
  return load_from_bytes(yaml_text, name, overrides, check);
}

}  // namespace dtsim
