// The links and latency of one flow's route on a cluster's SimGrid platform, for the topology
// tests (torus, dragonfly, rail-only). One per test: it owns the process's SimGrid Engine.
#pragma once

#include <simgrid/s4u.hpp>

#include <string>
#include <utility>
#include <vector>

#include "sim/platform.h"

namespace dtsim::testing {

class RouteProbe {
 public:
  explicit RouteProbe(const Cluster& cluster)
      : cluster_(cluster),
        engine_(&argc_, argv_),
        platform_(sim::build_platform(cluster, DType::kBf16)) {}

  const sim::Platform& platform() const { return platform_; }

  // The link names (each followed by a space) and the latency (s) from GPU a to GPU b.
  std::pair<std::string, double> route(Rank a, Rank b) const {
    const auto [src, dst] = sim::hosts_for(platform_, Endpoint::gpu(a), Endpoint::gpu(b), cluster_);
    std::vector<simgrid::s4u::Link*> links;
    double latency = 0;
    src->route_to(dst, links, &latency);
    std::string names;
    for (auto* l : links) names += l->get_name() + " ";
    return {names, latency};
  }

 private:
  const Cluster& cluster_;
  int argc_ = 2;
  char arg0_[11] = "route_test", arg1_[26] = "--log=root.thres:critical";
  char* argv_[3] = {arg0_, arg1_, nullptr};
  simgrid::s4u::Engine engine_;
  sim::Platform platform_;
};

}  // namespace dtsim::testing
