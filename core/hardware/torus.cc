#include "core/hardware/torus.h"

#include <algorithm>

namespace dtsim {

std::vector<int> default_torus_dims(int nodes) {
  if (nodes <= 1) return {1};
  std::vector<int> best;
  int best_largest = nodes + 1;
  size_t best_dims = 4;
  for (int x = 1; x <= nodes; ++x) {
    if (nodes % x != 0) continue;
    for (int y = 1; y <= x && x * y <= nodes; ++y) {
      if ((nodes / x) % y != 0) continue;
      const int z = nodes / x / y;
      if (z > y) continue;  // x >= y >= z
      std::vector<int> dims;
      for (int k : {x, y, z})
        if (k > 1) dims.push_back(k);
      if (x < best_largest || (x == best_largest && dims.size() < best_dims)) {
        best = dims;
        best_largest = x;
        best_dims = dims.size();
      }
    }
  }
  return best;
}

std::vector<int> torus_coordinates(int node, const std::vector<int>& dims) {
  std::vector<int> c(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    c[d] = node % dims[d];
    node /= dims[d];
  }
  return c;
}

int torus_node(const std::vector<int>& coordinates, const std::vector<int>& dims) {
  int node = 0;
  for (size_t d = dims.size(); d-- > 0;) node = node * dims[d] + coordinates[d];
  return node;
}

std::vector<TorusHop> torus_route(int from, int to, const std::vector<int>& dims) {
  std::vector<TorusHop> hops;
  std::vector<int> at = torus_coordinates(from, dims);
  const std::vector<int> target = torus_coordinates(to, dims);
  for (size_t d = 0; d < dims.size(); ++d) {
    const int k = dims[d];
    const int forward = ((target[d] - at[d]) % k + k) % k;
    if (forward == 0) continue;
    const bool positive = forward <= k - forward;
    const int steps = positive ? forward : k - forward;
    for (int s = 0; s < steps; ++s) {
      const int here = torus_node(at, dims);
      at[d] = ((at[d] + (positive ? 1 : -1)) % k + k) % k;
      // Going +, the cable is this node's; going -, it is the next node's + cable.
      hops.push_back(
          TorusHop{positive ? here : torus_node(at, dims), static_cast<int>(d), positive});
    }
  }
  return hops;
}

}  // namespace dtsim
