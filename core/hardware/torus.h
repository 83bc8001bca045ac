// Torus networks (cluster.network.topology: torus): node coordinates, the default dimensions and
// dimension-order routes. Shared by the SimGrid platform (sim/platform.cc), the torus all-reduce
// (core/collectives/torus_schedule.cc) and its closed form (core/collectives/cost_model.cc),
// so all three agree.
//
// Contract:
// - Nodes are numbered with dimension 0 fastest: node = c0 + k0 (c1 + k1 c2), as in SimGrid's
//   TorusZone and TPU slice coordinates (x fastest).
// - Every node owns one cable per dimension to its + neighbour (wrap-around); its - cable is its -
//   neighbour's + cable. A cable is split-duplex: its UP direction carries traffic in the +
//   direction, DOWN in the - direction. So a node has 2 links per dimension (none in a dimension
//   of size 1), and in a dimension of size 2 the two neighbours are joined by two cables.
// - Routes are dimension-ordered (dimension 0 first, as TPU ICI and SimGrid's TorusZone route),
//   in each dimension the shorter way round; a tie (half-way round) goes the + way.
#pragma once

#include <vector>

namespace dtsim {

// A near-cube factorisation of `nodes` into at most three dimensions, largest first: the one
// with the smallest largest dimension, then the fewest dimensions (16 -> [4, 4], 64 -> [4, 4, 4],
// 32 -> [4, 4, 2], 12 -> [3, 2, 2], a prime p -> [p]). Dimensions of size 1 are dropped.
std::vector<int> default_torus_dims(int nodes);

std::vector<int> torus_coordinates(int node, const std::vector<int>& dims);
int torus_node(const std::vector<int>& coordinates, const std::vector<int>& dims);

// One hop of a route: the cable it crosses (owned by `cable_owner`, in dimension `dim`) and the
// direction it crosses it (positive: the cable's UP direction).
struct TorusHop {
  int cable_owner = 0;
  int dim = 0;
  bool positive = true;
};

// The dimension-order route from node `from` to node `to` (empty when they are the same node).
std::vector<TorusHop> torus_route(int from, int to, const std::vector<int>& dims);

}  // namespace dtsim
