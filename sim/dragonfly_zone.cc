#include "sim/dragonfly_zone.h"

#include <simgrid/kernel/routing/NetPoint.hpp>

#include "sim/internal/network_parts.h"
#include "sim/rank_hosts.h"

#include <string>

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

DragonflyZone::DragonflyZone(const std::string& name, Shape shape)
    : NetZoneImpl(name), shape_(std::move(shape)) {}

DragonflyZone* DragonflyZone::create(
    const std::string& name, sg4::NetZone* parent, const Shape& shape, double host_speed,
    const std::vector<std::vector<sg4::SplitDuplexLink*>>& injection) {
  auto* zone = new DragonflyZone(name, shape);  // owned by SimGrid's zone tree from set_parent on
  sg4::NetZone* iface = zone->get_iface();
  iface->set_parent(parent);
  auto links = [&](const char* kind, int count, std::vector<sg4::SplitDuplexLink*>& out) {
    for (int i = 0; i < count; ++i) {
      auto* link = iface->create_split_duplex_link(
          "dragonfly-" + std::string(kind) + "-" + std::to_string(i), shape.link_bytes_per_s);
      link->seal();
      out.push_back(link);
    }
  };
  links("local", shape.network.local_links(), zone->local_);
  links("global", shape.network.global_links(), zone->global_);
  zone->injection_ = injection;
  const int world = static_cast<int>(shape.node_of_rank.size());
  zone->injection_.resize(static_cast<size_t>(world));
  create_rank_hosts(iface, "dragonfly", world, host_speed, zone->endpoint_, zone->rank_of_vertex_);
  iface->seal();
  return zone;
}

void DragonflyZone::get_local_route(const NetPoint* src, const NetPoint* dst,
                                    simgrid::kernel::routing::Route* into, double* latency) {
  const int a = rank_of_vertex_.at(src->id()), b = rank_of_vertex_.at(dst->id());
  if (a == b) return;
  auto add = [&](sg4::Link* link) {
    into->link_list_.push_back(link->get_impl());
    *latency += link->get_latency();
  };
  for (sg4::SplitDuplexLink* in : injection_[static_cast<size_t>(a)]) add(in->get_link_up());
  for (const DragonflyHop& hop :
       dragonfly_route(shape_.node_of_rank[static_cast<size_t>(a)],
                       shape_.node_of_rank[static_cast<size_t>(b)], shape_.network, a)) {
    sg4::SplitDuplexLink* link = (hop.global ? global_ : local_)[static_cast<size_t>(hop.link)];
    add(hop.up ? link->get_link_up() : link->get_link_down());
  }
  const auto& out = injection_[static_cast<size_t>(b)];
  for (auto it = out.rbegin(); it != out.rend(); ++it) add((*it)->get_link_down());
}

namespace platform_internal {

// Dragonfly: NICs to the routers, router links at the NIC rate, routes computed per flow.
void build_dragonfly_network(const Cluster& c, const std::vector<DegradedNic>& degraded,
                             sg4::NetZone* root, const NodeFabric& f, Platform& p) {
  const int world = c.world_size();
  const bool pcie = c.gpus_on_pcie();
  const double nic_bw = c.usable_nic_bandwidth().value();
  auto* nics = sg4::create_star_zone("network-nics");
  nics->set_parent(root);
  std::vector<std::vector<sg4::SplitDuplexLink*>> injection(static_cast<size_t>(world));
  std::vector<sg4::Link*> node_nics;
  DragonflyZone::Shape shape;
  shape.network = c.network.dragonfly;
  shape.link_bytes_per_s = nic_bw;
  for (Rank r = 0; r < world; ++r) {
    if (c.local_index(r) == 0) node_nics = nic_links(c, degraded, nics, c.node_of(r));
    auto& links = injection[static_cast<size_t>(r)];
    if (pcie)
      links.push_back(static_cast<sg4::SplitDuplexLink*>(f.gpu_link[static_cast<size_t>(r)]));
    links.push_back(
        static_cast<sg4::SplitDuplexLink*>(node_nics[static_cast<size_t>(c.local_nic_of(r))]));
    shape.node_of_rank.push_back(c.node_of(r));
  }
  nics->seal();
  const DragonflyZone* dragonfly =
      DragonflyZone::create("network-dragonfly", root, shape, p.gpu_speed, injection);
  for (int r = 0; r < world; ++r) p.routed.push_back(dragonfly->endpoint(r));
}

}  // namespace platform_internal

}  // namespace dtsim::sim
