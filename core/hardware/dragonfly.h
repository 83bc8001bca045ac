// Dragonfly networks (cluster.network.topology: dragonfly; Kim, Dally, Scott and Abts, "Technology-
// Driven, Highly-Scalable Dragonfly Topology", ISCA 2008): the shape, the global-link arrangement
// and the routes, minimal and Valiant. Shared by the SimGrid platform (sim/dragonfly_zone.h) and
// the tests' closed forms, so that both count the same links.
//
// Contract:
// - Shape (Kim et al. §3): `groups` groups (g) of `routers_per_group` routers (a), each router
//   serving `nodes_per_router` nodes (p) and owning `global_links_per_router` global links (h).
//   Nodes fill routers and groups in order: node n is on router (n mod a p) / p of group n / (a p).
// - Inside a group every pair of routers is joined by one local link. Between groups: each group
//   has a h global ports, and every pair of groups is joined by the same number
//   L = a h / (g - 1) of global links (so g - 1 must divide a h; g = a h + 1 is Kim et al.'s
//   largest, L = 1). Port q of group s leads to group s + (q mod (g - 1)) + 1 (mod g) and is the
//   (q div (g - 1))-th link of that pair; it sits on router q div h.
// - Every link is split-duplex; UP runs from the lower-numbered router or group to the higher.
// - Minimal routing (Kim et al. §4.1): at most local, global, local. Between a pair of groups
//   joined by L links, the flow with key f (its source GPU's rank) takes link f mod L (sources
//   spread evenly over the pair's links, as source-hashed routing does).
// - Valiant routing (Valiant 1982; Kim et al. §4.2): a flow between groups first goes minimally to
//   an intermediate group m (neither its source nor its destination group), then minimally on to
//   its destination: at most local, global, local, global, local. dtsim picks m deterministically
//   so that sources spread evenly over the g - 2 candidates, which is what a random choice gives
//   on average: candidate (f + destination group) mod (g - 2), candidates counted by their
//   distance from the source group. Flows inside a group route minimally, and
//   with two groups there is no intermediate (Valiant is minimal).
#pragma once

#include <string_view>
#include <vector>

#include "core/base/enum_table.h"

namespace dtsim {

enum class DragonflyRouting { kMinimal, kValiant };
inline constexpr auto kDragonflyRoutingNames = make_enum_table<DragonflyRouting>(
    {{DragonflyRouting::kMinimal, "minimal"}, {DragonflyRouting::kValiant, "valiant"}});

struct DragonflyShape {
  int groups = 1;
  int routers_per_group = 1;
  int nodes_per_router = 1;
  int global_links_per_router = 1;
  DragonflyRouting routing = DragonflyRouting::kMinimal;

  int nodes() const { return groups * routers_per_group * nodes_per_router; }
  int nodes_per_group() const { return routers_per_group * nodes_per_router; }
  // Global links joining each pair of groups (L), 0 with one group.
  int links_per_group_pair() const {
    return groups > 1 ? routers_per_group * global_links_per_router / (groups - 1) : 0;
  }
  int local_links() const { return groups * routers_per_group * (routers_per_group - 1) / 2; }
  int global_links() const { return groups * (groups - 1) / 2 * links_per_group_pair(); }
};

// One router-to-router hop of a route: a local or a global link, and the direction it is crossed
// (up: from the lower-numbered router or group to the higher).
struct DragonflyHop {
  bool global = false;
  int link = 0;  // index among the shape's local links, or among its global links
  bool up = true;
};

// The router-to-router hops from node `from` to node `to` (empty on the same router) of the flow
// with key `flow` (the source GPU's global rank: flows of a node's GPUs spread over the links).
std::vector<DragonflyHop> dragonfly_route(int from, int to, const DragonflyShape& shape, int flow);

}  // namespace dtsim
