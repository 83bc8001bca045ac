// One endpoint host per rank in a netzone that computes its routes per flow (sim/torus_zone.h,
// sim/dragonfly_zone.h), and the table from a host's netpoint back to its rank. Internal to sim/.
#pragma once

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

namespace dtsim::sim {

// Creates hosts `prefix-r` for r in [0, ranks) in `zone`, appending them to `endpoint` and
// recording each one's rank at its netpoint id in `rank_of_vertex` (-1 elsewhere).
inline void create_rank_hosts(simgrid::s4u::NetZone* zone, const std::string& prefix, int ranks,
                              double host_speed, std::vector<simgrid::s4u::Host*>& endpoint,
                              std::vector<int>& rank_of_vertex) {
  for (int r = 0; r < ranks; ++r) {
    simgrid::s4u::Host* h = zone->create_host(prefix + "-" + std::to_string(r), host_speed);
    h->seal();
    const auto id = static_cast<size_t>(h->get_netpoint()->id());
    if (rank_of_vertex.size() <= id) rank_of_vertex.resize(id + 1, -1);
    rank_of_vertex[id] = r;
    endpoint.push_back(h);
  }
}

}  // namespace dtsim::sim
