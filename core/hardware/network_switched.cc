// Switched networks: a star, a fat-tree of two or three levels, rail-optimized, and rail-only
// (rails without a spine: Wang et al. 2023, "How to build low-cost networks for large language
// models (without sacrificing performance)"). Every GPU reaches its leaf or rail switch through
// its own NIC; the leaves, rails and pods are Cluster's (network_group, pod_of).
#include "core/hardware/network_topology.h"

namespace dtsim {
namespace {

class SwitchedNetwork : public NetworkTopology {};

class RailOnlyNetwork final : public SwitchedNetwork {
 public:
  // Between rails a flow first crosses the node's fabric to the GPU on the destination's rail,
  // as NCCL's PXN does: a relay of one node's traffic over other GPUs' links.
  bool relays_between_rails(const Cluster& c) const override { return c.is_rail_only(); }
  bool shares_links_between_replicas() const override { return true; }
  // One rail switch port per NIC; no spine.
  double switch_ports(const Cluster& c) const override {
    return c.nodes <= 1 ? 0.0 : static_cast<double>(c.nodes) * c.network.nics_per_node;
  }
};

}  // namespace

const NetworkTopology& switched_network() {
  static const SwitchedNetwork network;
  return network;
}

const NetworkTopology& rail_only_network() {
  static const RailOnlyNetwork network;
  return network;
}

}  // namespace dtsim
