// The multi-phase schedule builder (PhasedBuilder: ring passes, exchange steps and bulk phases,
// one after another or in concurrent branches) and the halving-doubling all-reduce built with it
// (Rabenseifner; Thakur, Rabenseifner and Gropp 2005). The torus all-reduce (torus_schedule.cc),
// PAT and the hierarchical all-reduce (collective_schedule.cc) use the builder too.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "core/collectives/internal/schedule_parts.h"

namespace dtsim::collectives_internal {

void PhasedBuilder::rings(const std::vector<std::vector<Rank>>& orders, int steps, Bytes segment,
                          Seconds alpha) {
  if (fidelity_ == Fidelity::kChunk) {
    std::vector<int> last;
    for (const auto& order : orders) {
      const int n = static_cast<int>(order.size());
      const int base = static_cast<int>(flows_.size());
      for (int k = 0; k < steps; ++k)
        for (int i = 0; i < n; ++i) {
          Flow f = Flow::between(order[static_cast<size_t>(i)],
                                 order[static_cast<size_t>((i + 1) % n)], segment);
          if (k == 0)
            f.after = barrier_;
          else {
            f.after.push_back(base + (k - 1) * n + (i - 1 + n) % n);
            f.after.push_back(base + (k - 1) * n + i);
          }
          flows_.push_back(std::move(f));
        }
      for (int i = 0; i < n && steps > 0; ++i) last.push_back(base + (steps - 1) * n + i);
    }
    barrier_ = last;
    return;
  }
  std::vector<std::tuple<Rank, Rank, Bytes>> bulk;
  for (const auto& order : orders)
    for (size_t i = 0; i < order.size(); ++i)
      bulk.emplace_back(order[i], order[(i + 1) % order.size()],
                        segment * static_cast<double>(steps));
  bulk_phase(bulk, alpha * static_cast<double>(steps - 1));
}

void PhasedBuilder::exchange(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers) {
  if (fidelity_ == Fidelity::kCollective) {
    pending_.insert(pending_.end(), transfers.begin(), transfers.end());
    ++pending_steps_;
    return;
  }
  std::vector<int> now;
  for (const auto& [src, dst, bytes] : transfers) {
    Flow f = Flow::between(src, dst, bytes);
    // Chunk fidelity: a rank's step waits for its own previous send and receive.
    const Endpoint self = Endpoint::gpu(src);
    for (int prev : barrier_) {
      const Flow& p = flows_[static_cast<size_t>(prev)];
      if (p.is_delay() || p.transfer().src == self || p.transfer().dst == self)
        f.after.push_back(prev);
    }
    if (f.after.empty()) f.after = start_;
    now.push_back(static_cast<int>(flows_.size()));
    flows_.push_back(std::move(f));
  }
  barrier_ = now;
}

void PhasedBuilder::end_exchanges(Seconds alpha) {
  if (fidelity_ == Fidelity::kCollective && pending_steps_ > 0) {
    bulk_phase(pending_, alpha * static_cast<double>(pending_steps_ - 1));
    pending_.clear();
    pending_steps_ = 0;
  }
  start_ = barrier_;
}

void PhasedBuilder::bulk_phase(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers,
                               Seconds extra_latency) {
  std::map<std::pair<Rank, Rank>, Bytes> merged;
  std::vector<std::pair<Rank, Rank>> order;
  for (const auto& [src, dst, bytes] : transfers) {
    auto [it, inserted] = merged.emplace(std::make_pair(src, dst), Bytes(0));
    if (inserted) order.push_back(it->first);
    it->second += bytes;
  }
  std::vector<int> now;
  for (const auto& pair : order) {
    now.push_back(static_cast<int>(flows_.size()));
    flows_.push_back(Flow::between(pair.first, pair.second, merged[pair], barrier_));
  }
  if (extra_latency.value() > 0) {
    flows_.push_back(Flow::delay_of(extra_latency, now));
    now = {static_cast<int>(flows_.size()) - 1};
  }
  barrier_ = now;
  start_ = now;
}

void halving_doubling(const std::vector<Rank>& ranks, Bytes s, Seconds alpha, PhasedBuilder& b) {
  const int n = static_cast<int>(ranks.size());
  int p = 1;
  while (p * 2 <= n) p *= 2;
  auto at = [&](int i) { return ranks[static_cast<size_t>(i)]; };
  if (n > p) {  // fold the extra ranks in
    std::vector<std::tuple<Rank, Rank, Bytes>> fold;
    for (int i = p; i < n; ++i) fold.emplace_back(at(i), at(i - p), s);
    b.exchange(fold);
    b.end_exchanges(alpha);
  }
  std::vector<int> distances;
  for (int d = p / 2; d >= 1; d /= 2) distances.push_back(d);
  Bytes piece = s;
  for (int d : distances) {  // reduce-scatter by recursive halving
    piece = piece / 2.0;
    std::vector<std::tuple<Rank, Rank, Bytes>> step;
    for (int i = 0; i < p; ++i) step.emplace_back(at(i), at(i ^ d), piece);
    b.exchange(step);
  }
  for (auto it = distances.rbegin(); it != distances.rend(); ++it) {  // all-gather by doubling
    std::vector<std::tuple<Rank, Rank, Bytes>> step;
    for (int i = 0; i < p; ++i) step.emplace_back(at(i), at(i ^ *it), piece);
    b.exchange(step);
    piece = piece * 2.0;
  }
  b.end_exchanges(alpha);
  if (n > p) {  // and the result back out
    std::vector<std::tuple<Rank, Rank, Bytes>> unfold;
    for (int i = p; i < n; ++i) unfold.emplace_back(at(i - p), at(i), s);
    b.exchange(unfold);
    b.end_exchanges(alpha);
  }
}

}  // namespace dtsim::collectives_internal
