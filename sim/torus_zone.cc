#include "sim/torus_zone.h"

#include <simgrid/kernel/routing/NetPoint.hpp>

#include "sim/internal/network_parts.h"
#include "sim/rank_hosts.h"

#include <string>

#include "core/hardware/torus.h"

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

TorusZone::TorusZone(const std::string& name, Shape shape)
    : NetZoneImpl(name), shape_(std::move(shape)) {}

TorusZone* TorusZone::create(const std::string& name, sg4::NetZone* parent, const Shape& shape,
                             double host_speed,
                             const std::vector<sg4::SplitDuplexLink*>& injection) {
  auto* zone = new TorusZone(name, shape);  // owned by SimGrid's zone tree from set_parent on
  sg4::NetZone* iface = zone->get_iface();
  iface->set_parent(parent);
  int nodes = 1;
  for (int k : shape.dims) nodes *= k;
  const int dims = static_cast<int>(shape.dims.size());
  for (int n = 0; n < nodes; ++n)
    for (int d = 0; d < dims; ++d) {
      // A dimension of size 1 has no cable; keep the slot so that indices stay regular.
      sg4::SplitDuplexLink* cable = nullptr;
      if (shape.dims[static_cast<size_t>(d)] > 1) {
        cable = iface->create_split_duplex_link(
            "torus-" + std::to_string(n) + "-d" + std::to_string(d), shape.cable_bytes_per_s);
        cable->set_latency(shape.hop_latency_s);
        cable->seal();
      }
      zone->cable_.push_back(cable);
    }
  const int world = static_cast<int>(shape.node_of_rank.size());
  zone->injection_ = injection;
  zone->injection_.resize(static_cast<size_t>(world), nullptr);
  create_rank_hosts(iface, "torus", world, host_speed, zone->endpoint_, zone->rank_of_vertex_);
  iface->seal();
  return zone;
}

void TorusZone::get_local_route(const NetPoint* src, const NetPoint* dst,
                                simgrid::kernel::routing::Route* into, double* latency) {
  const int a = rank_of_vertex_.at(src->id()), b = rank_of_vertex_.at(dst->id());
  if (a == b) return;
  auto add = [&](sg4::Link* link) {
    into->link_list_.push_back(link->get_impl());
    *latency += link->get_latency();
  };
  if (sg4::SplitDuplexLink* in = injection_[static_cast<size_t>(a)]) add(in->get_link_up());
  const std::vector<TorusHop> hops =
      torus_route(shape_.node_of_rank[static_cast<size_t>(a)],
                  shape_.node_of_rank[static_cast<size_t>(b)], shape_.dims);
  const size_t dims = shape_.dims.size();
  for (const TorusHop& hop : hops) {
    sg4::SplitDuplexLink* cable =
        cable_[static_cast<size_t>(hop.cable_owner) * dims + static_cast<size_t>(hop.dim)];
    into->link_list_.push_back(hop.positive ? cable->get_link_up()->get_impl()
                                            : cable->get_link_down()->get_impl());
  }
  // The cables carry hop_latency each for the record; the route's latency is the model's.
  if (!hops.empty())
    *latency += shape_.latency_s + (static_cast<double>(hops.size()) - 1) * shape_.hop_latency_s;
  if (sg4::SplitDuplexLink* out = injection_[static_cast<size_t>(b)]) add(out->get_link_down());
}

namespace platform_internal {

// Torus: cables between neighbouring nodes at the NIC rate, routes computed per flow.
void build_torus_network(const Cluster& c, sg4::NetZone* root, const NodeFabric& f, Platform& p) {
  const int world = c.world_size();
  const bool pcie = c.gpus_on_pcie();
  TorusZone::Shape shape;
  shape.dims = c.network.torus_dims;
  for (Rank r = 0; r < world; ++r) shape.node_of_rank.push_back(c.node_of(r));
  shape.cable_bytes_per_s = c.usable_nic_bandwidth().value();
  shape.latency_s = c.network.latency.value();
  shape.hop_latency_s = c.network.torus_hop_latency.value();
  std::vector<sg4::SplitDuplexLink*> injection(static_cast<size_t>(world), nullptr);
  for (int r = 0; r < world && pcie; ++r)  // a PCIe GPU reaches the network through its link
    injection[static_cast<size_t>(r)] =
        static_cast<sg4::SplitDuplexLink*>(f.gpu_link[static_cast<size_t>(r)]);
  const TorusZone* torus = TorusZone::create("network-torus", root, shape, p.gpu_speed, injection);
  for (int r = 0; r < world; ++r) p.routed.push_back(torus->endpoint(r));
}

}  // namespace platform_internal

}  // namespace dtsim::sim
