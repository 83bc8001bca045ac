#include "core/hardware/dragonfly.h"

#include <algorithm>

namespace dtsim {

namespace {

int mod(int x, int k) {
  return ((x % k) + k) % k;
}

// A position on the network: group and router within it.
struct Router {
  int group = 0;
  int router = 0;
};

// Appends the local hop between two routers of a group (nothing when they are the same).
void local_hop(const DragonflyShape& s, int group, int from, int to,
               std::vector<DragonflyHop>& hops) {
  if (from == to) return;
  const int lo = std::min(from, to), hi = std::max(from, to);
  const int a = s.routers_per_group;
  // Pairs (lo, hi) of a group in order: lo rows of (a - 1 - i) pairs before row lo.
  const int pair = lo * (2 * a - lo - 1) / 2 + (hi - lo - 1);
  hops.push_back({false, group * (a * (a - 1) / 2) + pair, from < to});
}

// The port of group `s` for the k-th link to group `t`.
int port(const DragonflyShape& shape, int s, int t, int k) {
  return k * (shape.groups - 1) + mod(t - s, shape.groups) - 1;
}

// Appends the hops from router `at` of group s to the k-th global link to group t and across it;
// returns the router of group t the link lands on.
int global_hop(const DragonflyShape& shape, int s, int at, int t, int k,
               std::vector<DragonflyHop>& hops) {
  const int h = shape.global_links_per_router;
  local_hop(shape, s, at, port(shape, s, t, k) / h, hops);
  const int lo = std::min(s, t), hi = std::max(s, t);
  const int g = shape.groups;
  // Pairs (lo, hi) of groups in order, as for the local links.
  const int pair = lo * (2 * g - lo - 1) / 2 + (hi - lo - 1);
  hops.push_back({true, pair * shape.links_per_group_pair() + k, s < t});
  return port(shape, t, s, k) / h;
}

}  // namespace

std::vector<DragonflyHop> dragonfly_route(int from, int to, const DragonflyShape& shape, int flow) {
  std::vector<DragonflyHop> hops;
  const int per_group = shape.nodes_per_group();
  const Router src{from / per_group, (from % per_group) / shape.nodes_per_router};
  const Router dst{to / per_group, (to % per_group) / shape.nodes_per_router};
  if (src.group == dst.group) {
    local_hop(shape, src.group, src.router, dst.router, hops);
    return hops;
  }
  const int links = shape.links_per_group_pair();
  const int k = flow % links;
  int at = src.router, group = src.group;
  if (shape.routing == DragonflyRouting::kValiant && shape.groups > 2) {
    // Candidates by distance from the source group, skipping the destination group.
    const int index = mod(flow + dst.group, shape.groups - 2);
    int m = src.group;
    for (int seen = -1; seen < index;) {
      m = mod(m + 1, shape.groups);
      if (m != dst.group) ++seen;
    }
    at = global_hop(shape, group, at, m, k, hops);
    group = m;
  }
  at = global_hop(shape, group, at, dst.group, k, hops);
  local_hop(shape, dst.group, at, dst.router, hops);
  return hops;
}

}  // namespace dtsim
