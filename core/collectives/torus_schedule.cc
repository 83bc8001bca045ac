// The torus all-reduce (topology: torus, as on TPU pods): which groups it applies to and its rings
// along each dimension (torus_all_reduce_plan), and its flows: node reduce-scatter, D concurrent
// rotations over the torus dimensions, each ring of 3 or more nodes both ways round, node
// all-gather (torus_all_reduce). The contract is in core/collectives/collective_schedule.h.
#include <map>
#include <optional>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/internal/schedule_parts.h"
#include "core/hardware/network_topology.h"
#include "core/hardware/torus.h"

namespace dtsim {

namespace {

// Ring orders along one torus dimension, both ways round when the dimension has 3 or more nodes
// (with 2, both neighbours are the same node and the shorter route is always the + cable).
std::vector<std::vector<Rank>> torus_ring_orders(const std::vector<std::vector<Rank>>& rings,
                                                 int size) {
  std::vector<std::vector<Rank>> orders = rings;
  if (size >= 3)
    for (const auto& ring : rings) orders.emplace_back(ring.rbegin(), ring.rend());
  return orders;
}

}  // namespace

namespace collectives_internal {

// The torus all-reduce (see torus_all_reduce_plan in the header): node reduce-scatter, D
// concurrent rotations over the torus dimensions, node all-gather.
void torus_all_reduce(const TorusAllReducePlan& plan, Bytes s, const Cluster& cluster,
                      PhasedBuilder& b, std::vector<Flow>& flows, Fidelity fidelity) {
  const size_t g = plan.nodes.front().size();
  const double gd = static_cast<double>(g);
  const Seconds intra_alpha = ring_link(plan.nodes.front(), cluster).alpha;
  const Seconds net_alpha = torus_link(static_cast<int>(g), cluster).alpha;
  if (g > 1) b.rings(plan.nodes, static_cast<int>(g - 1), s / gd, intra_alpha);
  const size_t dims = plan.sizes.size();
  std::vector<int> ends;
  for (size_t r = 0; r < dims; ++r) {
    PhasedBuilder rotation(flows, fidelity, b.barrier());
    Bytes data = s / gd / static_cast<double>(dims);
    std::vector<size_t> order;
    for (size_t i = 0; i < dims; ++i) order.push_back((r + i) % dims);
    std::vector<Bytes> entering;
    for (size_t i = 0; i < dims; ++i) {
      const size_t d = order[i];
      const int k = plan.sizes[d];
      const double ways = k >= 3 ? 2.0 : 1.0;
      const auto orders = torus_ring_orders(plan.rings[d], k);
      const int steps = i + 1 == dims ? 2 * (k - 1) : k - 1;  // the last dimension all-reduces
      rotation.rings(orders, steps, data / ways / static_cast<double>(k), net_alpha);
      entering.push_back(data);
      data = data / static_cast<double>(k);
    }
    for (size_t i = dims - 1; i-- > 0;) {  // all-gathers back
      const size_t d = order[i];
      const int k = plan.sizes[d];
      const double ways = k >= 3 ? 2.0 : 1.0;
      rotation.rings(torus_ring_orders(plan.rings[d], k), k - 1,
                     entering[i] / ways / static_cast<double>(k), net_alpha);
    }
    ends.insert(ends.end(), rotation.barrier().begin(), rotation.barrier().end());
  }
  b.join(ends);
  if (g > 1) b.rings(plan.nodes, static_cast<int>(g - 1), s / gd, intra_alpha);
}

}  // namespace collectives_internal

std::optional<TorusAllReducePlan> torus_all_reduce_plan(const std::vector<Rank>& ranks,
                                                        const Cluster& cluster) {
  const auto& dims = cluster.network.torus_dims;
  if (!network_topology(cluster).cabled_nodes(cluster)) return std::nullopt;
  TorusAllReducePlan plan;
  plan.nodes = ranks_by_node(ranks, cluster);
  if (plan.nodes.size() < 2) return std::nullopt;
  std::vector<std::vector<int>> coords;
  for (const auto& node : plan.nodes) {
    const int n = cluster.node_of(node.front());
    if (n < 0 || n >= cluster.nodes) return std::nullopt;
    coords.push_back(torus_coordinates(n, dims));
  }
  std::vector<size_t> spanned;
  double box = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<bool> seen(static_cast<size_t>(dims[d]), false);
    int distinct = 0;
    for (const auto& c : coords)
      if (!seen[static_cast<size_t>(c[d])]) seen[static_cast<size_t>(c[d])] = true, ++distinct;
    if (distinct == dims[d] && distinct > 1)
      spanned.push_back(d);
    else if (distinct != 1)
      return std::nullopt;  // part of a dimension: its rings would not close on one cable
    box *= distinct;
  }
  if (box != static_cast<double>(plan.nodes.size())) return std::nullopt;
  std::map<std::vector<int>, size_t> node_at;
  for (size_t i = 0; i < coords.size(); ++i) node_at[coords[i]] = i;
  const size_t g = plan.nodes.front().size();
  for (size_t d : spanned) {
    plan.sizes.push_back(dims[d]);
    std::vector<std::vector<Rank>> rings;
    for (size_t i = 0; i < coords.size(); ++i) {
      if (coords[i][d] != 0) continue;  // one line per node at coordinate 0 of this dimension
      std::vector<int> at = coords[i];
      std::vector<size_t> line;
      for (int c = 0; c < dims[d]; ++c) {
        at[d] = c;
        line.push_back(node_at.at(at));
      }
      for (size_t j = 0; j < g; ++j) {
        std::vector<Rank> ring;
        for (size_t k : line) ring.push_back(plan.nodes[k][j]);
        rings.push_back(std::move(ring));
      }
    }
    plan.rings.push_back(std::move(rings));
  }
  return plan;
}

}  // namespace dtsim
