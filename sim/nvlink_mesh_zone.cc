#include "sim/nvlink_mesh_zone.h"

#include <simgrid/kernel/routing/NetPoint.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "sim/rank_hosts.h"

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

NvlinkMeshZone::NvlinkMeshZone(const std::string& name, Shape shape)
    : NetZoneImpl(name), shape_(std::move(shape)) {}

NvlinkMeshZone* NvlinkMeshZone::create(const std::string& name, sg4::NetZone* parent,
                                       const Shape& shape, double host_speed) {
  auto* zone = new NvlinkMeshZone(name, shape);  // owned by SimGrid's zone tree from set_parent on
  sg4::NetZone* iface = zone->get_iface();
  iface->set_parent(parent);
  const int g = shape.mesh.gpus;
  zone->link_.assign(static_cast<size_t>(shape.nodes * g * g), nullptr);
  for (int n = 0; n < shape.nodes; ++n)
    for (const NvlinkPair& p : shape.mesh.pairs) {
      const int a = std::min(p.a, p.b), b = std::max(p.a, p.b);
      auto* link = iface->create_split_duplex_link(
          "nvlink-" + std::to_string(n) + "-" + std::to_string(a) + "-" + std::to_string(b),
          p.links * shape.link_bytes_per_s);
      link->set_latency(shape.latency_s);
      link->seal();
      zone->link_[static_cast<size_t>((n * g + a) * g + b)] = link;
    }
  create_rank_hosts(iface, "gpu", shape.nodes * g, host_speed, zone->endpoint_,
                    zone->rank_of_vertex_);
  iface->seal();
  return zone;
}

std::vector<std::pair<sg4::SplitDuplexLink*, bool>> NvlinkMeshZone::hops(int node, int a,
                                                                         int b) const {
  const int g = shape_.mesh.gpus;
  std::vector<std::pair<sg4::SplitDuplexLink*, bool>> out;
  if (a == b) return out;
  const std::vector<int> route = relay_route(shape_.mesh, a, b);
  for (size_t k = 0; k + 1 < route.size(); ++k) {
    const int x = route[k], y = route[k + 1];
    out.emplace_back(link_[static_cast<size_t>((node * g + std::min(x, y)) * g + std::max(x, y))],
                     x < y);
  }
  return out;
}

std::vector<sg4::LinkInRoute> NvlinkMeshZone::route_links(int node, int a, int b) const {
  std::vector<sg4::LinkInRoute> out;
  for (const auto& [link, up] : hops(node, a, b))
    out.emplace_back(link,
                     up ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
  return out;
}

void NvlinkMeshZone::get_local_route(const NetPoint* src, const NetPoint* dst,
                                     simgrid::kernel::routing::Route* into, double* latency) {
  const int ra = rank_of_vertex_.at(src->id()), rb = rank_of_vertex_.at(dst->id());
  const int g = shape_.mesh.gpus;
  if (ra == rb || ra / g != rb / g) return;
  for (const auto& [link, up] : hops(ra / g, ra % g, rb % g)) {
    sg4::Link* one = up ? link->get_link_up() : link->get_link_down();
    into->link_list_.push_back(one->get_impl());
    *latency += one->get_latency();
  }
}

}  // namespace dtsim::sim
