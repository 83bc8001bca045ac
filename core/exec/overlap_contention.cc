#include "core/exec/overlap_contention.h"

#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "core/collectives/nccl_model.h"
#include "core/exec/compute_cost.h"

namespace dtsim {

int collective_sms(const Cluster& cluster, int group_size) {
  if (group_size <= 1 || cluster.gpu.sm_count <= 0 || !nccl_runs_collectives(cluster)) return 0;
  NcclSystem system;
  try {
    system = nccl_system(cluster, group_size);
  } catch (const InputError&) {
    return 0;  // a fabric NCCL's reduced search does not cover: not charged (noted by the caller)
  }
  int channels = system.ring.channels;
  // ncclTopoPostset: Hopper across nodes, 4 compute channels per search channel below 16.
  if (system.compute_capability >= 90 && system.nodes > 1 && system.ring.bw_intra_GBps > 45.0 &&
      channels < 16)
    channels *= 2;
  return std::min(channels, cluster.gpu.sm_count - 1);
}

Seconds time_beside_window(Seconds work, Seconds window, double speed) {
  if (work.value() <= speed * window.value()) return work / speed;
  return window + (work - window * speed);
}

void charge_overlap_contention(ActivityGraph& g, const Job& job, const Cluster& cluster) {
  const int sm_count = cluster.gpu.sm_count;
  if (sm_count <= 1 || !nccl_runs_collectives(cluster) || g.ops.empty()) return;
  // Blocks by group size (a few distinct sizes per job).
  std::map<size_t, int> sms_of_size;
  auto sms_of = [&](const Group& group) {
    auto it = sms_of_size.find(group.ranks.size());
    if (it == sms_of_size.end())
      it = sms_of_size
               .emplace(group.ranks.size(),
                        collective_sms(cluster, static_cast<int>(group.ranks.size())))
               .first;
    return it->second;
  };
  // Each rank's collective windows as (time, +/- blocks) events; compute instances by rank.
  std::map<Rank, std::vector<std::pair<double, int>>> events;
  bool any = false;
  const std::vector<double> finish = finish_times_without_contention(g, cluster);
  const Program* p = nullptr;
  for (const OpInstance& inst : g.ops) {
    if (p == nullptr || p->rank != inst.rank) p = job.program_for(inst.rank);
    const Op& op = p->streams[static_cast<size_t>(inst.stream)].ops[inst.op_index];
    const auto* c = std::get_if<CollectiveOp>(&op.body);
    if (c == nullptr) continue;
    const int sms = sms_of(job.group(c->group));
    const double start = finish[static_cast<size_t>(inst.begin)];
    const double end = finish[static_cast<size_t>(inst.end)];
    if (sms <= 0 || end <= start) continue;
    auto& e = events[inst.rank];
    e.emplace_back(start, sms);
    e.emplace_back(end, -sms);
    any = true;
  }
  if (!any) return;
  // Per rank: a piecewise-constant profile of blocks held, segment i from at[i] to at[i + 1].
  struct Profile {
    std::vector<double> at;
    std::vector<int> held;
  };
  std::map<Rank, Profile> profiles;
  for (auto& [rank, e] : events) {
    std::sort(e.begin(), e.end());
    Profile& prof = profiles[rank];
    int held = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      held += e[i].second;
      if (i + 1 < e.size() && e[i + 1].first == e[i].first) continue;
      prof.at.push_back(e[i].first);
      prof.held.push_back(held);
    }
  }
  // Rate of a kernel on the SMs left, over its rate on all of them, memoized per (op, blocks).
  std::map<std::pair<const ComputeOp*, int>, double> speed_memo;
  auto speed = [&](const ComputeOp& op, int held) {
    const int left = std::max(1, sm_count - held);
    auto [it, fresh] = speed_memo.emplace(std::make_pair(&op, left), 1.0);
    if (fresh) it->second = compute_time(op, cluster.gpu) / compute_time(op, cluster.gpu, left);
    return it->second;
  };
  bool stretched = false;
  p = nullptr;
  for (const OpInstance& inst : g.ops) {
    if (p == nullptr || p->rank != inst.rank) p = job.program_for(inst.rank);
    const Op& op = p->streams[static_cast<size_t>(inst.stream)].ops[inst.op_index];
    const auto* c = std::get_if<ComputeOp>(&op.body);
    if (c == nullptr) continue;
    const auto found = profiles.find(inst.rank);
    if (found == profiles.end()) continue;
    const Profile& prof = found->second;
    GraphNode& node = g.nodes[static_cast<size_t>(inst.end)];
    const double start = finish[static_cast<size_t>(inst.begin)];
    double work = node.amount;  // seconds at the full rate
    if (work <= 0) continue;
    // The segment that holds `start` (none before the first window).
    size_t i = static_cast<size_t>(std::upper_bound(prof.at.begin(), prof.at.end(), start) -
                                   prof.at.begin());
    if (i == 0 && (prof.at.empty() || start + work <= prof.at.front())) continue;
    double t = start, elapsed = 0;
    if (i > 0)
      --i;
    else {  // runs at full rate until the first window opens
      elapsed = prof.at.front() - start;
      work -= elapsed;
      t = prof.at.front();
    }
    for (; i < prof.at.size() && work > 0; ++i) {
      const double seg_end = i + 1 < prof.at.size() ? prof.at[i + 1] : t + work;
      const double rate = prof.held[i] > 0 ? speed(*c, prof.held[i]) : 1.0;
      const double span = seg_end - t;
      if (span <= 0) continue;
      if (work <= rate * span) {
        elapsed += work / rate;
        work = 0;
        break;
      }
      elapsed += span;
      work -= rate * span;
      t = seg_end;
    }
    elapsed += work;  // after the last window, at full rate
    if (elapsed > node.amount * (1 + 1e-12)) {
      node.amount = elapsed;
      stretched = true;
    }
  }
  if (stretched)
    g.notes.push_back(
        "compute kernels that run beside collectives on the same GPU run on the SMs the "
        "collectives' NCCL thread blocks leave (one per channel, " +
        std::to_string(collective_sms(cluster, cluster.gpus_per_node)) +
        " inside a node here), timed in one pass over the uncontended schedule; the collectives "
        "are not slowed by the compute kernels, and HBM bandwidth is not shared between them");
}

}  // namespace dtsim
