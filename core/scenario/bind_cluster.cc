// The cluster section's binder: catalog names resolved, inline specs built, and the checks that
// need only the cluster.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <utility>

#include <filesystem>

#include "core/base/checked.h"
#include "core/hardware/profile.h"
#include "core/hardware/torus.h"
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {
namespace {

// Sets `field` from `key` when the scenario gives it, and records the field's name: one path
// for every field over a catalog entry (`gpu: H100-SXM` with --set cluster.gpu.memory=40GiB, an
// inline spec with base:, or an inline spec from nothing).
template <class T, class Field>
void override_field(const Reader& r, const std::string& section, const std::string& key,
                    Field& field, std::vector<std::string>& overridden) {
  if (auto v = r.get<T>(section + "." + key)) {
    if constexpr (std::is_same_v<Field, int>)
      field = narrow<int>(*v, "a catalog count");
    else
      field = *v;
    overridden.push_back(key);
  }
}

// The catalog entry `base` names, or an error with the closest names.
template <class Spec>
const Spec* catalog_entry(const Reader& r, const std::string& key, const std::string& name,
                          const std::vector<Spec>& catalog, const Spec* found,
                          DiagnosticSink& sink) {
  if (found) return found;
  std::vector<std::string> names;
  for (const auto& e : catalog) names.push_back(e.name);
  std::string msg = "no catalog entry named '" + name + "'";
  if (auto dym = did_you_mean(name, names); !dym.empty()) msg += "; did you mean '" + dym + "'?";
  sink.add(r.where(key), key, msg);
  return nullptr;
}

// "memory, gemm_efficiency set in FILE", for a source line.
std::string overrides_note(const std::vector<std::string>& set, const std::string& file) {
  std::string out;
  for (const auto& f : set) out += (out.empty() ? "" : ", ") + f;
  return out + " set in " + file;
}

// A catalog name with `base:` beside it names the start twice.
void reject_base_beside_name(const Reader& r, const std::string& path, const std::string& name,
                             DiagnosticSink& sink) {
  if (!r.find(path + ".base")) return;
  sink.add(r.where(path + ".base"), path + ".base",
           "base: starts an inline spec from a catalog entry, but " + path + " already names '" +
               name + "'; set the fields to change directly (e.g. " + path +
               ".<field>=...) or replace the name with an inline map");
}

GpuSpec resolve_gpu(const Reader& r, const std::string& file, std::vector<std::string>& set,
                    DiagnosticSink& sink) {
  const std::string path = "cluster.gpu";
  const std::string name = r.value<std::string>(path);  // "" for an inline map
  GpuSpec spec;
  bool from_catalog = false;
  if (!name.empty()) {
    const GpuSpec* g = catalog_entry(r, path, name, gpu_catalog(), find_gpu(name), sink);
    if (!g) return GpuSpec{};
    spec = *g;
    from_catalog = true;
    reject_base_beside_name(r, path, name, sink);
  } else if (auto base = r.get<std::string>(path + ".base")) {
    if (const GpuSpec* g =
            catalog_entry(r, path + ".base", *base, gpu_catalog(), find_gpu(*base), sink)) {
      spec = *g;
      from_catalog = true;
    }
  }
  if (auto n = r.get<std::string>(path + ".name"))
    spec.name = *n;
  else if (!from_catalog)
    spec.name = r.value<std::string>(path + ".name");
  for (const auto& [dtype, dtype_name] : kDTypeNames)
    override_field<FlopsPerSecond>(r, path, "peak." + std::string(dtype_name), spec.peak[dtype],
                                   set);
  std::erase_if(spec.peak, [](const auto& kv) { return kv.second.value() <= 0; });
  override_field<Bytes>(r, path, "memory", spec.memory, set);
  override_field<BytesPerSecond>(r, path, "memory_bandwidth", spec.memory_bandwidth, set);
  override_field<double>(r, path, "gemm_efficiency", spec.gemm_efficiency, set);
  override_field<double>(r, path, "attention_efficiency", spec.attention_efficiency, set);
  override_field<double>(r, path, "memory_efficiency", spec.memory_efficiency, set);
  override_field<Seconds>(r, path, "kernel_launch_overhead", spec.kernel_launch_overhead, set);
  // A scenario's own efficiency replaces the published per-shape curves it would otherwise lose
  // to (core/exec/compute_cost.h), so that the figure it sets is the one every kernel uses.
  auto was_set = [&](std::string_view key) { return std::ranges::find(set, key) != set.end(); };
  if (was_set("gemm_efficiency")) spec.gemm_curve.clear();
  if (was_set("attention_efficiency")) spec.attention_curve.clear();
  override_field<int64_t>(r, path, "sm_count", spec.sm_count, set);
  override_field<Watts>(r, path, "max_power", spec.max_power, set);
  override_field<Watts>(r, path, "idle_power", spec.idle_power, set);
  if (spec.idle_power > spec.max_power && spec.max_power.value() > 0)
    sink.add(r.where(r.find(path + ".idle_power") ? path + ".idle_power" : path + ".max_power"),
             path + ".idle_power",
             "idle power " + format_power(spec.idle_power) + " is above the maximum power " +
                 format_power(spec.max_power));
  if (!from_catalog) {
    spec.source = "inline spec in " + file;
    // The figures an inline GPU did not set come from the schema's defaults: say which, and what.
    const GpuSpec assumed;
    std::vector<std::string> taken;
    auto assume = [&](const char* field, const std::string& value) {
      if (std::ranges::find(set, field) == set.end())
        taken.push_back(std::string(field) + " " + value);
    };
    assume("gemm_efficiency", format_number("%g", assumed.gemm_efficiency));
    assume("attention_efficiency", format_number("%g", assumed.attention_efficiency));
    assume("memory_efficiency", format_number("%g", assumed.memory_efficiency));
    assume("kernel_launch_overhead", format_duration(assumed.kernel_launch_overhead));
    if (!taken.empty()) {
      std::string msg = "the inline GPU takes assumed figures for what it does not set: ";
      for (size_t i = 0; i < taken.size(); ++i) msg += (i ? ", " : "") + taken[i];
      sink.note(r.where(path), path,
                msg + " (set them from a measurement, or start from base: CATALOG-NAME)");
    }
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
  } else if (!set.empty()) {
    spec.source += "; " + overrides_note(set, file);
  }
  if (!from_catalog) set.clear();  // every field of an inline spec is its own
  return spec;
}

// The catalog fabric a name stands for: nvswitch is the GPU's own NVSwitch generation, pcie the
// PCIe generation a GPU of that era sits on; "" after an error.
std::string fabric_name(const Reader& r, const std::string& name, const GpuSpec& gpu,
                        DiagnosticSink& sink) {
  const std::string path = "cluster.intra_node";
  const std::string& home = gpu.default_intra_node;
  if (name == "nvswitch") {
    if (home.rfind("nvswitch", 0) != 0) {
      sink.add(r.where(path), path,
               gpu.name + " has no NVSwitch board" +
                   (home.empty() ? "" : " (its usual fabric is " + home + ")") +
                   "; name a fabric from dtsim catalog fabrics, pcie, or an inline spec");
      return "";
    }
    return home;
  }
  if (name == "pcie") {
    if (home.rfind("pcie-", 0) == 0) return home;  // a PCIe card: its own generation
    return home == "nvswitch-nvlink2" || home == "nvlink-hybrid-cube-mesh" ? "pcie-gen3"
           : home == "nvswitch-nvlink4" || home == "nvswitch-nvlink5"      ? "pcie-gen5"
                                                                           : "pcie-gen4";
  }
  return name;
}

IntraNodeFabricSpec resolve_fabric(const Reader& r, const GpuSpec& gpu, const std::string& file,
                                   std::vector<std::string>& set, DiagnosticSink& sink) {
  const std::string path = "cluster.intra_node";
  std::string name = r.value<std::string>(path);  // "" for an inline map
  if (!r.find(path)) {
    if (gpu.default_intra_node.empty()) {
      sink.add(r.where("cluster.gpu"), path,
               "the inline GPU has no usual board, so name its fabric: cluster.intra_node: "
               "nvswitch-nvlink4, pcie-gen5, ... (dtsim catalog fabrics) or an inline spec");
      return {};
    }
    name = gpu.default_intra_node;
  }
  IntraNodeFabricSpec f;
  bool from_catalog = false;
  if (!name.empty()) {
    const std::string resolved = fabric_name(r, name, gpu, sink);
    if (resolved.empty()) return {};
    const IntraNodeFabricSpec* found =
        catalog_entry(r, path, resolved, fabric_catalog(), find_fabric(resolved), sink);
    if (!found) return {};
    f = *found;
    from_catalog = true;
    reject_base_beside_name(r, path, name, sink);
  } else if (auto base = r.get<std::string>(path + ".base")) {
    const std::string resolved = fabric_name(r, *base, gpu, sink);
    if (const IntraNodeFabricSpec* found =
            resolved.empty() ? nullptr
                             : catalog_entry(r, path + ".base", resolved, fabric_catalog(),
                                             find_fabric(resolved), sink)) {
      f = *found;
      from_catalog = true;
    }
  }
  if (!from_catalog) {
    // An inline fabric from nothing: the schema's defaults, and a bandwidth it must give.
    f.name = r.value<std::string>(path + ".name");
    f.kind = kFabricKindNames.from_valid(r.value<std::string>(path + ".kind"));
    f.latency = r.value<Seconds>(path + ".latency");
    f.protocol_efficiency = r.value<double>(path + ".protocol_efficiency");
    if (!r.find(path + ".bandwidth"))
      sink.add(r.where(path), path,
               "an inline intra-node fabric needs bandwidth (e.g. 450GBps), or base: "
               "CATALOG-NAME to start from");
  }
  if (auto n = r.get<std::string>(path + ".name")) f.name = *n;
  if (auto k = r.get<std::string>(path + ".kind")) {
    f.kind = kFabricKindNames.from_valid(*k);
    set.push_back("kind");
  }
  override_field<BytesPerSecond>(r, path, "bandwidth", f.per_gpu_bandwidth, set);
  override_field<Seconds>(r, path, "latency", f.latency, set);
  override_field<double>(r, path, "protocol_efficiency", f.protocol_efficiency, set);
  if (!from_catalog) {
    f.source = "inline spec in " + file;
  } else if (!set.empty()) {
    f.source += "; " + overrides_note(set, file);
  }
  if (!from_catalog) set.clear();
  return f;
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
  n.nic_bandwidth = spec->port_bandwidth;
  n.latency = spec->latency;
  n.protocol_efficiency = spec->protocol_efficiency;
  if (kind && *kind != spec->kind) n.overridden.push_back("kind");
  override_field<BytesPerSecond>(r, p, "nic_bandwidth", n.nic_bandwidth, n.overridden);
  override_field<Seconds>(r, p, "latency", n.latency, n.overridden);
  override_field<double>(r, p, "protocol_efficiency", n.protocol_efficiency, n.overridden);
  n.nic_power = spec->nic_power;
  n.switch_port_power = spec->switch_port_power;
  override_field<Watts>(r, p, "switch_port_power", n.switch_port_power, n.overridden);
  n.oversubscription = r.value<double>(p + ".oversubscription");
  n.in_network_reduction = r.value<bool>(p + ".in_network_reduction");
  if (n.in_network_reduction && n.kind != NetworkKind::kInfiniBand)
    sink.add(r.where(p + ".in_network_reduction"), p + ".in_network_reduction",
             "in-network reduction (SHARP) needs InfiniBand switches; this network is " +
                 std::string(to_string(n.kind)));
  return n;
}

// Torus dimensions: given (1 to 3, product = nodes) or the near-cube default
// (core/hardware/torus.h).
void resolve_torus(const Reader& r, ClusterConfig& c, bool applies, DiagnosticSink& sink) {
  const std::string key = "cluster.network.torus_dims";
  auto& net = c.network;
  net.torus_hop_latency = r.get_or<Seconds>("cluster.network.torus_hop_latency", net.latency);
  const auto dims = r.get<std::vector<int64_t>>(key);
  if (!applies) {
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
  for (int64_t k : *dims) net.torus_dims.push_back(narrow<int>(k, "a torus dimension"));
}

// Dragonfly shape (core/hardware/dragonfly.h): given or derived from nodes_per_router, and
// consistent with the node count and with an equal number of global links per pair of groups.
void resolve_dragonfly(const Reader& r, ClusterConfig& c, bool applies, DiagnosticSink& sink) {
  const std::string p = "cluster.network.dragonfly";
  auto& net = c.network;
  if (!applies) {
    for (const auto& [path, entry] : r.under(p + "."))
      sink.add(entry->where, path,
               "dragonfly settings apply to topology: dragonfly, but the topology is " +
                   std::string(to_string(net.topology)));
    return;
  }
  DragonflyShape& d = net.dragonfly;
  d.nodes_per_router = r.count(p + ".nodes_per_router").value;
  // With groups given, the routers a group needs to hold the nodes; else Kim et al.'s a = 2p.
  const auto given_groups = r.get<int64_t>(p + ".groups");
  const int64_t in_group = given_groups && *given_groups > 0 ? c.nodes / *given_groups : 0;
  const bool fills = given_groups && in_group > 0 && in_group * *given_groups == c.nodes &&
                     in_group % d.nodes_per_router == 0;
  d.routers_per_group =
      r.count(p + ".routers_per_group",
              fills ? static_cast<int>(in_group / d.nodes_per_router) : 2 * d.nodes_per_router)
          .value;
  d.global_links_per_router = r.count(p + ".global_links_per_router", d.nodes_per_router).value;
  d.routing = kDragonflyRoutingNames.from_valid(r.value<std::string>(p + ".routing"));
  const double per_group = static_cast<double>(d.routers_per_group) * d.nodes_per_router;
  const std::string shape =
      "routers_per_group x nodes_per_router = " + std::to_string(d.routers_per_group) + " x " +
      std::to_string(d.nodes_per_router);
  if (auto groups = r.get<int64_t>(p + ".groups")) {
    d.groups = narrow<int>(*groups, "a dragonfly group count");
    if (static_cast<double>(d.groups) * per_group != static_cast<double>(c.nodes)) {
      sink.add(r.where(p + ".groups"), p + ".groups",
               "a dragonfly of " + std::to_string(d.groups) + " groups of " + shape + " holds " +
                   format_count(d.groups * per_group) + " nodes, but cluster.nodes is " +
                   std::to_string(c.nodes) +
                   "; groups x routers_per_group x nodes_per_router must equal nodes");
      return;
    }
  } else {
    if (std::fmod(static_cast<double>(c.nodes), per_group) != 0) {
      sink.add(r.where("cluster.nodes"), p,
               "cluster.nodes (" + std::to_string(c.nodes) +
                   ") is not a whole number of dragonfly groups of " + shape +
                   " nodes; set cluster.network.dragonfly.groups, routers_per_group and "
                   "nodes_per_router so that their product is nodes");
      return;
    }
    d.groups = static_cast<int>(c.nodes / per_group);
  }
  const int ports = d.routers_per_group * d.global_links_per_router;
  if (d.groups > 1 && ports % (d.groups - 1) != 0) {
    sink.add(r.where(p + ".global_links_per_router"), p + ".global_links_per_router",
             "a group's " + std::to_string(ports) +
                 " global links (routers_per_group x global_links_per_router) cannot be shared "
                 "equally among the other " +
                 std::to_string(d.groups - 1) +
                 " groups; groups - 1 must divide them (at most routers_per_group x "
                 "global_links_per_router + 1 groups)");
  }
}

// A --set override of hardware the cluster never uses changes nothing: accepted, so that a sweep
// over node counts keeps its one-node baseline, and said in the result's notes. (Keys in the
// file are left alone: a file is often swept over node counts.)
void note_overrides_without_effect(const Reader& r, const ClusterConfig& c, DiagnosticSink& sink) {
  auto note = [&](const std::string& prefix, const std::string& why) {
    for (const auto& [path, entry] : r.under(prefix))
      if (entry->where.file == "--set") sink.note(entry->where, path, "has no effect: " + why);
  };
  if (c.nodes == 1)
    note("cluster.network.", "the cluster is one node, so no traffic crosses the network");
  if (c.gpus_per_node == 1)
    note("cluster.intra_node.",
         "each node holds one GPU, so no traffic crosses the intra-node fabric");
}

// cluster.profile: the measured profile replaces the catalog's (and the scenario's) figures of the
// GPU and the intra-node fabric, once both are resolved. Problems inside the profile are located
// in the profile file; the profile's GPU against the cluster's at cluster.profile.
void apply_cluster_profile(const Reader& r, const std::string& file, ClusterConfig& c,
                           DiagnosticSink& sink) {
  const std::string key = "cluster.profile";
  const auto given = r.get<std::string>(key);
  if (!given) return;
  const SourceLocation at = r.where(key);
  if (given->empty()) {
    sink.add(at, key, "expected the path of a hardware profile (dtsim calibrate writes one)");
    return;
  }
  // From the scenario's directory, so that a scenario and its profile move together; a --set
  // path is typed at a shell, so it is taken from the current directory.
  std::filesystem::path path(*given);
  if (path.is_relative() && at.file != "--set")
    path = std::filesystem::path(file).parent_path() / path;
  const std::string shown = path.lexically_normal().string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    sink.add(at, key,
             "no hardware profile at " + shown +
                 (at.file == "--set" ? " (a --set path is taken from the current directory)"
                                     : " (a relative path is taken from the scenario file's "
                                       "directory)"));
    return;
  }
  HardwareProfile profile;
  try {
    profile = load_profile(shown);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) sink.add(d);
    return;
  }
  if (c.gpu.name.empty()) return;  // cluster.gpu's own error is reported
  try {
    apply_profile(profile, c);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) sink.add(at, key, d.message + " (" + shown + ")");
  }
}

// Power beyond the GPUs, the facility, the price and the grid (core/report/energy.h).
void bind_cost(const Reader& r, ClusterConfig& c, DiagnosticSink& sink) {
  CostConfig& cost = c.cost;
  cost.node_power = r.get_or<Watts>(
      "cluster.node_power", c.gpu.host_power + c.network.nic_power * c.network.nics_per_node);
  cost.pue = r.value<double>("cluster.pue");
  if (auto text = r.get<std::string>("cluster.price_per_gpu_hour")) {
    const Parsed<Money> price = parse_money(*text);
    if (price)
      cost.price_per_gpu_hour = *price.value;
    else  // the schema checked it; kept for a caller that bypasses it
      sink.add(r.where("cluster.price_per_gpu_hour"), "cluster.price_per_gpu_hour", price.error);
  }
  if (auto g = r.get<double>("cluster.carbon_intensity")) cost.carbon_g_per_kwh = *g;
}

}  // namespace

void bind_cluster(const Reader& r, const std::string& file, ClusterConfig& c,
                  DiagnosticSink& sink) {
  c.gpu = resolve_gpu(r, file, c.gpu_overridden, sink);
  c.gpu_where = r.where("cluster.gpu");
  c.nodes = r.count("cluster.nodes").value;
  c.gpus_per_node = r.count("cluster.gpus_per_node").value;
  c.intra_node = resolve_fabric(r, c.gpu, file, c.intra_node_overridden, sink);
  c.network = resolve_network(r, sink);
  c.network.nics_per_node = r.count("cluster.network.nics_per_node", c.gpus_per_node).value;
  c.network.nodes_per_leaf =
      r.count("cluster.network.nodes_per_leaf", std::max(1, 32 / c.network.nics_per_node)).value;
  c.network.levels = r.count("cluster.network.levels").value;
  c.network.leaves_per_pod = r.count("cluster.network.leaves_per_pod").value;
  c.network.pod_oversubscription = r.value<double>("cluster.network.pod_oversubscription");
  // Other jobs' share of the network belongs to the cluster this job sees, so that every
  // command that builds a Cluster (simulate, collective) applies it.
  c.network.background_fraction = r.value<double>("background.link_fraction");
  // Each topology's own keys: resolved for it, refused under any other.
  using Resolve = void (*)(const Reader&, ClusterConfig&, bool, DiagnosticSink&);
  static constexpr std::pair<Topology, Resolve> kTopologyKeys[] = {
      {Topology::kTorus, resolve_torus}, {Topology::kDragonfly, resolve_dragonfly}};
  for (const auto& [topology, resolve] : kTopologyKeys)
    resolve(r, c, c.network.topology == topology, sink);
  apply_cluster_profile(r, file, c, sink);
  note_overrides_without_effect(r, c, sink);
  bind_cost(r, c, sink);
}

}  // namespace dtsim::scenario_binding
