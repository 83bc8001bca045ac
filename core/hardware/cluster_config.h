// The cluster a scenario describes, as configured: the GPU, the fabric inside a node and the
// network between nodes, with every figure in base units. Built by the scenario loader from
// catalog entries and overrides; the resolved view the cost models use is core/hardware/cluster.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/enum_table.h"
#include "core/base/error.h"
#include "core/base/units.h"
#include "core/hardware/catalog.h"
#include "core/hardware/dragonfly.h"

namespace dtsim {

enum class Topology { kStar, kFatTree, kRailOptimized, kRailOnly, kTorus, kDragonfly };
// In the order the scenario reference lists them.
inline constexpr auto kTopologyNames =
    make_enum_table<Topology>({{Topology::kFatTree, "fat-tree"},
                               {Topology::kRailOptimized, "rail-optimized"},
                               {Topology::kRailOnly, "rail-only"},
                               {Topology::kTorus, "torus"},
                               {Topology::kDragonfly, "dragonfly"},
                               {Topology::kStar, "star"}});
constexpr std::string_view to_string(Topology t) {
  return kTopologyNames.to_string(t);
}

struct NetworkConfig {
  std::string preset;                   // catalog entry the defaults came from ("ib-hdr")
  std::vector<std::string> overridden;  // preset figures the scenario set (nic_bandwidth, ...)
  NetworkKind kind = NetworkKind::kInfiniBand;
  Topology topology = Topology::kFatTree;
  BytesPerSecond nic_bandwidth{0};  // per NIC, per direction
  int nics_per_node = 1;
  Seconds latency{0};
  double oversubscription = 1.0;
  double protocol_efficiency = 1.0;
  int nodes_per_leaf = 4;  // fat-tree leaf size; 32 NICs per 64-port leaf by default
  int levels = 2;          // fat-tree switch levels
  int leaves_per_pod = 16;
  double pod_oversubscription = 1.0;
  // Torus (topology: torus, core/hardware/torus.h): nodes per dimension, their product is `nodes`.
  std::vector<int> torus_dims;
  Seconds torus_hop_latency{0};  // added per hop beyond the first; default: latency
  // Dragonfly (topology: dragonfly, core/hardware/dragonfly.h): its shape and routing; the shape's
  // node count is `nodes`.
  DragonflyShape dragonfly;
  // Share of every network link's usable rate that other jobs' traffic holds, in [0, 1)
  // (scenario key background.link_fraction); 0 on a cluster this job has to itself.
  double background_fraction = 0.0;
  // The switches reduce in the network (SHARP; scenario key in_network_reduction): CollNet runs.
  bool in_network_reduction = false;
  Watts nic_power{0};          // per NIC (from the preset; part of the node's power)
  Watts switch_port_power{0};  // per switch port (cluster.network.switch_port_power)
};

// What running the cluster costs beyond its time (core/report/energy.h): power beyond the GPUs,
// the facility's overhead, the price of a GPU-hour and the grid's carbon intensity.
struct CostConfig {
  Watts node_power{0};  // per node beyond its GPUs (cluster.node_power)
  // Facility power over IT power (cluster.pue). Default 1.58: the Uptime Institute's industry
  // average for 2023 (Global Data Center Survey; between 1.55 and 1.59 every year since 2020).
  double pue = 1.58;
  std::optional<Money> price_per_gpu_hour;  // cluster.price_per_gpu_hour
  std::optional<double> carbon_g_per_kwh;   // cluster.carbon_intensity, g CO2e per kWh
};

struct ClusterConfig {
  GpuSpec gpu;
  SourceLocation gpu_where;
  int nodes = 1;
  int gpus_per_node = 1;
  IntraNodeFabricSpec intra_node;
  NetworkConfig network;
  CostConfig cost;
  // Fields the scenario set over the catalog GPU's and fabric's figures ("memory").
  std::vector<std::string> gpu_overridden, intra_node_overridden;
  // The hardware profile whose measured figures replaced the catalog's (cluster.profile,
  // core/hardware/profile.h), as the loader opened it; "" for none.
  std::string profile;

  int total_gpus() const { return nodes * gpus_per_node; }
};

}  // namespace dtsim
