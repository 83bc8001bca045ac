#include "core/exec/executor.h"

#include <cmath>

#include "core/base/error.h"

namespace dtsim {

Cluster apply_perturbations(const Cluster& cluster, const RunOptions& options) {
  if (options.perturbations.empty()) return cluster;
  std::vector<double> speed(static_cast<size_t>(cluster.world_size()), 1.0);
  for (Rank r = 0; r < cluster.world_size(); ++r)
    speed[static_cast<size_t>(r)] = cluster.speed_scale(r);
  for (const auto& p : options.perturbations) {
    switch (p.kind) {
      case Perturbation::Kind::kSlowRank:
        if (p.rank < 0 || p.rank >= cluster.world_size())
          throw InputError(Diagnostic{SourceLocation{}, "stragglers",
                                      "rank " + std::to_string(p.rank) +
                                          " does not exist; the cluster has ranks 0 to " +
                                          std::to_string(cluster.world_size() - 1)});
        if (!(p.slowdown >= 1) || !std::isfinite(p.slowdown))
          throw InputError(Diagnostic{
              SourceLocation{}, "stragglers",
              "a slowdown is a factor of at least 1, found " + std::to_string(p.slowdown)});
        speed[static_cast<size_t>(p.rank)] /= p.slowdown;
        break;
    }
  }
  return cluster.with_speed_scale(std::move(speed));
}

}  // namespace dtsim
