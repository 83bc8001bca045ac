// The cluster section's binder: catalog names resolved, inline specs built, and the checks that
// need only the cluster.
#include <algorithm>
#include <array>
#include <utility>

#include "core/hardware/torus.h"
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {
namespace {

GpuSpec resolve_gpu(const Reader& r, const std::string& file, DiagnosticSink& sink) {
  const std::string path = "cluster.gpu";
  const std::string name = r.value<std::string>(path);
  if (!name.empty()) {
    if (const GpuSpec* g = find_gpu(name)) return *g;
    sink.add(r.where(path), path, "unknown GPU '" + name + "'");
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
  spec.name = spec.name.empty() ? r.value<std::string>(path + ".name")
                                : r.get_or<std::string>(path + ".name", spec.name + "-custom");
  spec.source = "inline spec in " + file;
  for (const auto& [dtype, dtype_name] : kDTypeNames)
    if (auto p = r.get<FlopsPerSecond>(path + ".peak." + std::string(dtype_name)))
      spec.peak[dtype] = *p;
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
  std::string name = r.value<std::string>(path);
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
    f.name = r.value<std::string>(path + ".name");
    f.kind = kFabricKindNames.from_valid(r.value<std::string>(path + ".kind"));
    f.latency = r.value<Seconds>(path + ".latency");
    if (auto b = r.get<BytesPerSecond>(path + ".bandwidth"))
      f.per_gpu_bandwidth = *b;
    else
      sink.add(r.where(path), path, "an inline intra-node fabric needs bandwidth (e.g. 450GBps)");
    f.protocol_efficiency = r.value<double>(path + ".protocol_efficiency");
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

// The catalog entry whose figures a network of a given kind starts from, when no preset is named.
constexpr std::array<std::pair<NetworkKind, const char*>, 3> kPresetOfKind{{
    {NetworkKind::kInfiniBand, "ib-ndr"},
    {NetworkKind::kRoCE, "roce-400g"},
    {NetworkKind::kEthernet, "eth-100g"},
}};

std::string preset_of_kind(NetworkKind kind) {
  for (const auto& [k, preset] : kPresetOfKind)
    if (k == kind) return preset;
  throw std::logic_error("a network kind without a default preset");
}

NetworkConfig resolve_network(const Reader& r, DiagnosticSink& sink) {
  const std::string p = "cluster.network";
  NetworkConfig n;
  std::optional<NetworkKind> kind;
  if (auto text = r.get<std::string>(p + ".kind")) kind = kNetworkKindNames.from_valid(*text);
  const std::string preset = r.get_or<std::string>(
      p + ".preset",
      kind ? preset_of_kind(*kind) : Reader::schema_default<std::string>(p + ".preset"));
  const NetworkSpec* spec = find_network(preset);
  if (!spec) {
    sink.add(r.where(p + ".preset"), p + ".preset",
             "no network named '" + preset + "' in the catalog");
    return n;
  }
  n.preset = spec->name;
  n.kind = spec->kind;
  if (kind) {
    if (r.find(p + ".preset") && *kind != spec->kind)
      sink.add(r.where(p + ".kind"), p + ".kind",
               "kind '" + std::string(to_string(*kind)) + "' contradicts preset '" + preset +
                   "', which is " + std::string(to_string(spec->kind)));
    n.kind = *kind;
  }
  n.topology = kTopologyNames.from_valid(r.value<std::string>(p + ".topology"));
  n.nic_bandwidth = r.get_or<BytesPerSecond>(p + ".nic_bandwidth", spec->port_bandwidth);
  n.latency = r.get_or<Seconds>(p + ".latency", spec->latency);
  n.protocol_efficiency = r.get_or<double>(p + ".protocol_efficiency", spec->protocol_efficiency);
  n.oversubscription = r.value<double>(p + ".oversubscription");
  return n;
}

// Torus dimensions: given (1 to 3, product = nodes) or the near-cube default
// (core/hardware/torus.h).
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

}  // namespace

void bind_cluster(const Reader& r, const std::string& file, ClusterConfig& c,
                  DiagnosticSink& sink) {
  c.gpu = resolve_gpu(r, file, sink);
  c.gpu_where = r.where("cluster.gpu");
  c.nodes = r.count("cluster.nodes").value;
  c.gpus_per_node = r.count("cluster.gpus_per_node").value;
  c.intra_node = resolve_fabric(r, c.gpu, file, sink);
  c.network = resolve_network(r, sink);
  c.network.nics_per_node = r.count("cluster.network.nics_per_node", c.gpus_per_node).value;
  c.network.nodes_per_leaf =
      r.count("cluster.network.nodes_per_leaf", std::max(1, 32 / c.network.nics_per_node)).value;
  c.network.levels = r.count("cluster.network.levels").value;
  c.network.leaves_per_pod = r.count("cluster.network.leaves_per_pod").value;
  c.network.pod_oversubscription = r.value<double>("cluster.network.pod_oversubscription");
  resolve_torus(r, c, sink);
}

}  // namespace dtsim::scenario_binding
