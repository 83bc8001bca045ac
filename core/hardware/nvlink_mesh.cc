#include "core/hardware/nvlink_mesh.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>

namespace dtsim {

int NvlinkMesh::links_between(int a, int b) const {
  for (const NvlinkPair& p : pairs)
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p.links;
  return 0;
}

int NvlinkMesh::links_of(int gpu) const {
  int n = 0;
  for (const NvlinkPair& p : pairs)
    if (p.a == gpu || p.b == gpu) n += p.links;
  return n;
}

NvlinkMesh dgx1_v100_links() {
  NvlinkMesh m;
  m.gpus = 8;
  // Doubled pairs: the cycle 0 3 2 1 5 6 7 4; single pairs: the cycle 0 1 3 7 5 4 6 2.
  const int doubled[8] = {0, 3, 2, 1, 5, 6, 7, 4}, single[8] = {0, 1, 3, 7, 5, 4, 6, 2};
  for (int i = 0; i < 8; ++i) {
    m.pairs.push_back({doubled[i], doubled[(i + 1) % 8], 2});
    m.pairs.push_back({single[i], single[(i + 1) % 8], 1});
  }
  return m;
}

namespace {

// Every directed ring through all GPUs that starts at GPU 0 and crosses only linked pairs.
std::vector<std::vector<int>> hamiltonian_rings(const NvlinkMesh& mesh) {
  std::vector<std::vector<int>> out;
  std::vector<int> path{0};
  std::vector<char> used(static_cast<size_t>(mesh.gpus), 0);
  used[0] = 1;
  std::function<void()> extend = [&] {
    const int at = path.back();
    if (static_cast<int>(path.size()) == mesh.gpus) {
      if (mesh.links_between(at, 0) > 0) out.push_back(path);
      return;
    }
    for (int next = 0; next < mesh.gpus; ++next) {
      if (used[static_cast<size_t>(next)] || mesh.links_between(at, next) == 0) continue;
      used[static_cast<size_t>(next)] = 1;
      path.push_back(next);
      extend();
      path.pop_back();
      used[static_cast<size_t>(next)] = 0;
    }
  };
  extend();
  return out;
}

// The largest set of rings (from `candidates`, repeats allowed) whose use of each directed pair
// fits `capacity`, by depth-first search with a bound; at most `limit` rings.
std::vector<std::vector<int>> most_rings(const std::vector<std::vector<int>>& candidates,
                                         std::vector<double> capacity, int gpus, double speed,
                                         size_t limit) {
  std::vector<std::vector<int>> best, current;
  std::function<void(size_t)> search = [&](size_t from) {
    if (current.size() > best.size()) best = current;
    if (best.size() >= limit) return;
    for (size_t i = from; i < candidates.size(); ++i) {
      const auto& ring = candidates[i];
      bool fits = true;
      for (size_t k = 0; k < ring.size() && fits; ++k)
        fits = capacity[static_cast<size_t>(ring[k] * gpus + ring[(k + 1) % ring.size()])] >=
               speed - 1e-9;
      if (!fits) continue;
      for (size_t k = 0; k < ring.size(); ++k)
        capacity[static_cast<size_t>(ring[k] * gpus + ring[(k + 1) % ring.size()])] -= speed;
      current.push_back(ring);
      search(i);  // the same ring again, or a later one
      current.pop_back();
      for (size_t k = 0; k < ring.size(); ++k)
        capacity[static_cast<size_t>(ring[k] * gpus + ring[(k + 1) % ring.size()])] += speed;
      if (best.size() >= limit) return;
    }
  };
  search(0);
  return best;
}

}  // namespace

NcclRings nccl_rings(const NvlinkMesh& mesh, double link_GBps) {
  // speedArrayIntra (src/graph/search.cc, below SM90).
  static const std::vector<double> kSpeeds{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  const auto candidates = hamiltonian_rings(mesh);
  std::vector<double> capacity(static_cast<size_t>(mesh.gpus * mesh.gpus), 0);
  double total = 1e300;  // a GPU's whole NVLink bandwidth, the least over GPUs
  for (int a = 0; a < mesh.gpus; ++a) {
    total = std::min(total, mesh.links_of(a) * link_GBps);
    for (int b = 0; b < mesh.gpus; ++b)
      capacity[static_cast<size_t>(a * mesh.gpus + b)] = mesh.links_between(a, b) * link_GBps;
  }
  NcclRings best;
  for (size_t s = 0; s < kSpeeds.size(); ++s) {
    const double speed = kSpeeds[s];
    if (speed > total) continue;
    const auto limit = static_cast<size_t>(total / speed + 1e-9);
    auto rings = most_rings(candidates, capacity, mesh.gpus, speed, limit);
    if (rings.size() * speed > best.bus_bandwidth_GBps()) best = NcclRings{std::move(rings), speed};
    if (best.bus_bandwidth_GBps() >= total - 1e-9) break;
    const bool next_close = s + 1 < kSpeeds.size() && kSpeeds[s + 1] / speed > 0.49;
    if (!best.rings.empty() && !next_close) break;
  }
  return best;
}

std::vector<int> relay_route(const NvlinkMesh& mesh, int a, int b) {
  if (a == b || mesh.links_between(a, b) > 0) return {a, b};
  for (int m = 0; m < mesh.gpus; ++m)
    if (mesh.links_between(a, m) > 0 && mesh.links_between(m, b) > 0) return {a, m, b};
  return {};
}

const NvlinkMesh* cluster_mesh(const Cluster& cluster) {
  static const NvlinkMesh kDgx1 = dgx1_v100_links();
  if (cluster.intra_node.name != kCubeMeshFabric || cluster.gpus_per_node != kDgx1.gpus)
    return nullptr;
  return &kDgx1;
}

BytesPerSecond mesh_link_bandwidth(const Cluster& cluster) {
  const NvlinkMesh* mesh = cluster_mesh(cluster);
  if (!mesh) return cluster.usable_fabric_bandwidth();
  return cluster.usable_fabric_bandwidth() / static_cast<double>(mesh->links_of(0));
}

std::vector<std::vector<int>> mesh_rings(const NvlinkMesh& mesh, const std::vector<int>& local,
                                         BytesPerSecond link) {
  if (local.size() <= 1) return {local};
  // The links among the group's GPUs, renumbered by position in `local`.
  NvlinkMesh sub;
  sub.gpus = static_cast<int>(local.size());
  for (int i = 0; i < sub.gpus; ++i)
    for (int j = i + 1; j < sub.gpus; ++j)
      if (const int n =
              mesh.links_between(local[static_cast<size_t>(i)], local[static_cast<size_t>(j)]))
        sub.pairs.push_back({i, j, n});
  // NCCL's search is deterministic in the sub-mesh; remember it (ring orders are asked for at
  // every collective of a run).
  using Key = std::pair<std::vector<std::tuple<int, int, int>>, std::pair<int, double>>;
  static std::mutex mutex;
  static std::map<Key, NcclRings> memo;
  Key key;
  for (const NvlinkPair& p : sub.pairs) key.first.emplace_back(p.a, p.b, p.links);
  key.second = {sub.gpus, link.value()};
  NcclRings rings;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = memo.find(key);
    if (it == memo.end()) it = memo.emplace(key, nccl_rings(sub, link.value() / 1e9)).first;
    rings = it->second;
  }
  if (rings.rings.empty()) return {local};
  std::vector<std::vector<int>> out;
  for (const auto& ring : rings.rings) {
    std::vector<int> order;
    for (int i : ring) order.push_back(local[static_cast<size_t>(i)]);
    out.push_back(std::move(order));
  }
  return out;
}

BytesPerSecond mesh_ring_bandwidth(const NvlinkMesh& mesh,
                                   const std::vector<std::vector<int>>& orders, bool closed,
                                   BytesPerSecond link) {
  std::map<std::pair<int, int>, int> uses;  // hops crossing each link direction
  for (const auto& order : orders) {
    const size_t n = order.size();
    for (size_t i = 0; i + (closed ? 0 : 1) < n; ++i) {
      const auto route = relay_route(mesh, order[i], order[(i + 1) % n]);
      for (size_t k = 0; k + 1 < route.size(); ++k) ++uses[{route[k], route[k + 1]}];
    }
  }
  double per_hop = 0;  // B/s each hop gets at the most loaded link direction
  bool any = false;
  for (const auto& [pair, count] : uses) {
    const double rate = mesh.links_between(pair.first, pair.second) * link.value() / count;
    per_hop = any ? std::min(per_hop, rate) : rate;
    any = true;
  }
  return BytesPerSecond(per_hop * static_cast<double>(orders.size()));
}

}  // namespace dtsim
