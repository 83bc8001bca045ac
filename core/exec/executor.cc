#include "core/exec/executor.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "core/base/error.h"
#include "core/hardware/network_topology.h"

namespace dtsim {
namespace {

InputError straggler_error(std::string message) {
  return InputError(Diagnostic{SourceLocation{}, "stragglers", std::move(message)});
}

void check_rank(Rank r, const Cluster& cluster) {
  if (r < 0 || r >= cluster.world_size())
    throw straggler_error("rank " + std::to_string(r) +
                          " does not exist; the cluster has ranks 0 to " +
                          std::to_string(cluster.world_size() - 1));
}

void check_slowdown(double slowdown) {
  if (!(slowdown >= 1) || !std::isfinite(slowdown))
    throw straggler_error("a slowdown is a factor of at least 1, found " +
                          std::to_string(slowdown));
}

// SplitMix64's finaliser (Steele, Lea and Flood 2014): a well-mixed 64-bit hash, so that each
// (seed, entry, rank, step, op) gets its own independent uniform draw.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double uniform(uint64_t seed, int source, Rank r, uint64_t index) {
  uint64_t h = mix(seed);
  h = mix(h ^ static_cast<uint64_t>(source));
  h = mix(h ^ static_cast<uint64_t>(r));
  h = mix(h ^ index);
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1) from the top 53 bits
}

const char* kind_name(Perturbation::Kind k) {
  switch (k) {
    case Perturbation::Kind::kSlowRank:
      return "slow ranks";
    case Perturbation::Kind::kRandomSlowdown:
      return "random slowdowns";
    case Perturbation::Kind::kDegradedLink:
      return "degraded links";
    case Perturbation::Kind::kThrottle:
      return "throttling";
  }
  return "?";
}

// Random draws perturbed_ranks() makes at most before it counts every rank as touched.
constexpr double kMaxDraws = 1e8;

}  // namespace

Cluster apply_perturbations(const Cluster& cluster, const RunOptions& options) {
  bool any_static = false;
  for (const auto& p : options.perturbations)
    any_static = any_static || p.kind == Perturbation::Kind::kSlowRank;
  if (!any_static) return cluster;
  std::vector<double> speed(static_cast<size_t>(cluster.world_size()), 1.0);
  for (Rank r = 0; r < cluster.world_size(); ++r)
    speed[static_cast<size_t>(r)] = cluster.speed_scale(r);
  for (const auto& p : options.perturbations) {
    if (p.kind != Perturbation::Kind::kSlowRank) continue;
    check_rank(p.rank, cluster);
    check_slowdown(p.slowdown);
    speed[static_cast<size_t>(p.rank)] /= p.slowdown;
  }
  return cluster.with_speed_scale(std::move(speed));
}

TransientSlowdowns::TransientSlowdowns(const RunOptions& options, int world_size,
                                       double step_time_s)
    : seed_(options.seed), step_time_s_(step_time_s) {
  for (const auto& p : options.perturbations) {
    if (p.kind == Perturbation::Kind::kRandomSlowdown) {
      check_slowdown(p.slowdown);
      if (!(p.probability >= 0 && p.probability <= 1))
        throw straggler_error("a probability is from 0 to 1, found " +
                              std::to_string(p.probability));
      if (p.probability > 0 && p.slowdown > 1) random_.push_back(p);
    } else if (p.kind == Perturbation::Kind::kThrottle) {
      check_slowdown(p.slowdown);
      if (p.rank < 0 || p.rank >= world_size)
        throw straggler_error("rank " + std::to_string(p.rank) + " does not exist");
      if (p.slowdown <= 1) continue;
      if (throttle_.empty()) throttle_.resize(static_cast<size_t>(world_size));
      throttle_[static_cast<size_t>(p.rank)].push_back(p);
    }
  }
}

bool TransientSlowdowns::random_hit(const Perturbation& p, Rank r, int step, uint64_t op) const {
  // A spell that started at index i covers i .. i + duration - 1.
  const uint64_t at = p.per_op ? op : static_cast<uint64_t>(step);
  const uint64_t span = static_cast<uint64_t>(std::max(1, p.duration));
  for (uint64_t k = 0; k < span && k <= at; ++k)
    if (uniform(seed_, p.source, r, at - k) < p.probability) return true;
  return false;
}

double TransientSlowdowns::factor(Rank r, int step, uint64_t op) const {
  double f = 1;
  for (const auto& p : random_)
    if (random_hit(p, r, step, op)) f *= p.slowdown;
  if (!throttle_.empty())
    for (const auto& p : throttle_[static_cast<size_t>(r)]) {
      const double t = step * step_time_s_;
      const double phase = std::fmod(t, p.period.value()) / p.period.value();
      if (phase < p.duty) f *= p.slowdown;
    }
  return f;
}

DegradedNics::DegradedNics(const RunOptions& options, const Cluster& cluster) : cluster_(cluster) {
  for (const auto& p : options.perturbations)
    if (p.kind == Perturbation::Kind::kDegradedLink && p.nic >= 0) {
      if (!(p.fraction > 0 && p.fraction <= 1))
        throw straggler_error("a link keeps a fraction of its rate in (0, 1], found " +
                              std::to_string(p.fraction));
      auto [it, fresh] = fraction_.emplace(std::make_pair(p.node, p.nic), p.fraction);
      if (!fresh) it->second *= p.fraction;
    }
}

double DegradedNics::slowest(const std::vector<Rank>& ranks) const {
  if (fraction_.empty() || ranks.empty()) return 1;
  bool spans_nodes = false;
  double f = 1;
  for (Rank r : ranks) {
    spans_nodes = spans_nodes || cluster_.node_of(r) != cluster_.node_of(ranks.front());
    if (auto it = fraction_.find({cluster_.node_of(r), cluster_.local_nic_of(r)});
        it != fraction_.end())
      f = std::min(f, it->second);
  }
  return spans_nodes ? f : 1;
}

const Cluster& DegradedNics::at(double fraction) const {
  auto it = scaled_.find(fraction);
  if (it == scaled_.end()) {
    ClusterConfig config = cluster_;
    config.network.nic_bandwidth = config.network.nic_bandwidth * fraction;
    it = scaled_.emplace(fraction, Cluster(std::move(config))).first;
  }
  return it->second;
}

std::vector<Rank> perturbed_ranks(const RunOptions& options, const Cluster& cluster) {
  std::set<Rank> out;
  const TransientSlowdowns transient(options, cluster.world_size());
  // A slowdown or throttle that every rank has alike leaves the ranks symmetric: it touches none
  // of them apart (throttling all GPUs keeps the job folded).
  using Alike = std::tuple<int, double, double, double>;  // kind, slowdown, period, duty
  std::map<Alike, std::set<Rank>> alike;
  for (const auto& p : options.perturbations)
    if ((p.kind == Perturbation::Kind::kSlowRank || p.kind == Perturbation::Kind::kThrottle) &&
        p.slowdown > 1)
      alike[{static_cast<int>(p.kind), p.slowdown, p.period.value(), p.duty}].insert(p.rank);
  for (const auto& [key, ranks] : alike)
    if (static_cast<int>(ranks.size()) < cluster.world_size())
      out.insert(ranks.begin(), ranks.end());
  for (const auto& p : options.perturbations) {
    switch (p.kind) {
      case Perturbation::Kind::kSlowRank:
      case Perturbation::Kind::kThrottle:
        break;
      case Perturbation::Kind::kRandomSlowdown:
        if (p.probability <= 0 || p.slowdown <= 1) break;
        // Drawing every (rank, step) of a very long run costs more than simulating it unfolded
        // saves; past kMaxDraws every rank counts as touched, which is exact too.
        for (Rank r = 0; r < cluster.world_size(); ++r) {
          if (p.per_op ||
              static_cast<double>(options.iterations) * cluster.world_size() > kMaxDraws) {
            out.insert(r);
            continue;
          }
          for (int k = 0; k < options.iterations; ++k)
            if (uniform(options.seed, p.source, r, static_cast<uint64_t>(k)) < p.probability) {
              out.insert(r);
              break;
            }
        }
        break;
      case Perturbation::Kind::kDegradedLink:
        for (int g = 0; g < cluster.gpus_per_node; ++g) {
          const Rank r = p.node * cluster.gpus_per_node + g;
          if (r < cluster.world_size() && (p.nic < 0 || cluster.local_nic_of(r) == p.nic))
            out.insert(r);
        }
        break;
    }
  }
  return {out.begin(), out.end()};
}

void refuse_unsupported(const RunOptions& options, const std::string& engine,
                        std::initializer_list<Perturbation::Kind> supported) {
  std::set<Perturbation::Kind> refused;
  for (const auto& p : options.perturbations)
    if (std::find(supported.begin(), supported.end(), p.kind) == supported.end())
      refused.insert(p.kind);
  if (refused.empty()) return;
  std::string what;
  for (auto k : refused) what += (what.empty() ? "" : " and ") + std::string(kind_name(k));
  throw straggler_error("the " + engine + " engine does not apply " + what +
                        " yet; remove those entries or choose another engine");
}

void refuse_uplinks_and_torus(const RunOptions& options, const Cluster& cluster,
                              const std::string& engine) {
  for (const auto& p : options.perturbations) {
    if (p.kind != Perturbation::Kind::kDegradedLink) continue;
    if (p.nic < 0)
      throw straggler_error("the " + engine +
                            " engine does not apply a degraded switch uplink yet; degrade the "
                            "node's NICs ({link: {node: N, nic: I}, fraction: X}) instead");
    if (!network_topology(cluster).has_nic_links())
      throw straggler_error("the " + engine +
                            " engine does not apply a degraded NIC on a torus, whose nodes have "
                            "cables rather than NIC links");
  }
}

}  // namespace dtsim
