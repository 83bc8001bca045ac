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
  // ncclTopoPostset (NVIDIA/nccl src/graph/connect.cc, v2.30): on Hopper (SM 90) across nodes,
  // with an intra-node ring faster than 45 GB/s (NVLink, not PCIe), NCCL doubles the channels
  // while there are fewer than 16 (docs/models.md, "Kernels beside collectives").
  if (system.compute_capability >= 90 && system.nodes > 1 && system.ring.bw_intra_GBps > 45.0 &&
      channels < 16)
    channels *= 2;
  return std::min(channels, cluster.gpu.sm_count - 1);
}

Seconds time_beside_window(Seconds work, Seconds window, double speed) {
  if (work.value() <= speed * window.value()) return work / speed;
  return window + (work - window * speed);
}

void SmProfile::add(double start, double end, int sms) {
  if (sms <= 0 || end <= start) return;
  events_.emplace_back(start, sms);
  events_.emplace_back(end, -sms);
}

bool SmProfile::quiet(double from, double to) const {
  // The segment that holds `from` (none before the first window), then every one that starts
  // before `to`.
  size_t i = static_cast<size_t>(std::upper_bound(at_.begin(), at_.end(), from) - at_.begin());
  if (i > 0) --i;
  for (; i < at_.size() && at_[i] < to; ++i)
    if (held_[i] > 0) return false;
  return true;
}

void SmProfile::seal() {
  std::sort(events_.begin(), events_.end());
  at_.clear();
  held_.clear();
  int held = 0;
  for (size_t i = 0; i < events_.size(); ++i) {
    held += events_[i].second;
    if (i + 1 < events_.size() && events_[i + 1].first == events_[i].first) continue;
    at_.push_back(events_[i].first);
    held_.push_back(held);
  }
}

double speed_beside(const ComputeOp& op, const GpuSpec& gpu, int held) {
  const int left = std::max(1, gpu.sm_count - held);
  return compute_time(op, gpu) / compute_time(op, gpu, left);
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
  // Each rank's collective windows. A collective in line on a stream that runs compute kernels
  // never runs beside them (the stream orders them), so it is left out: the windows are those of
  // the other streams.
  std::map<Rank, SmProfile> profiles;
  std::vector<double> start;  // segment nodes begin and end their instance
  const std::vector<double> finish = finish_times_without_contention(g, cluster, &start);
  const Program* p = nullptr;
  std::vector<char> computes;  // by stream of p: whether it holds a compute op
  for (const OpInstance& inst : g.ops) {
    if (p == nullptr || p->rank != inst.rank) {
      p = job.program_for(inst.rank);
      computes.assign(p->streams.size(), 0);
      for (size_t s = 0; s < p->streams.size(); ++s)
        for (const Op& op : p->streams[s].ops)
          if (std::holds_alternative<ComputeOp>(op.body) ||
              std::holds_alternative<SegmentOp>(op.body)) {
            computes[s] = 1;
            break;
          }
    }
    const Op& op = p->streams[static_cast<size_t>(inst.stream)].ops[inst.op_index];
    const auto* c = std::get_if<CollectiveOp>(&op.body);
    if (c == nullptr || computes[static_cast<size_t>(inst.stream)]) continue;
    const int sms = sms_of(job.group(c->group));
    if (sms > 0)
      profiles[inst.rank].add(finish[static_cast<size_t>(inst.begin)],
                              finish[static_cast<size_t>(inst.end)], sms);
  }
  for (auto& [rank, profile] : profiles) profile.seal();
  // Rate on the SMs left over the full rate, memoized per (op, blocks held).
  std::map<std::pair<const ComputeOp*, int>, double> speed_memo;
  bool stretched = false;
  p = nullptr;
  for (const OpInstance& inst : g.ops) {
    if (p == nullptr || p->rank != inst.rank) p = job.program_for(inst.rank);
    const Op& op = p->streams[static_cast<size_t>(inst.stream)].ops[inst.op_index];
    const auto* c = std::get_if<ComputeOp>(&op.body);
    const auto* seg = std::get_if<SegmentOp>(&op.body);
    if (c == nullptr && seg == nullptr) continue;
    const auto found = profiles.find(inst.rank);
    if (found == profiles.end() || found->second.empty()) continue;
    const SmProfile& profile = found->second;
    // A kernel's time beside the collectives from `start`, its full-rate time `work`.
    auto kernel_time = [&](const ComputeOp& k, double start, double work) {
      const double elapsed = profile.stretched(start, work, [&](int held) {
        auto [it, fresh] = speed_memo.emplace(std::make_pair(&k, held), 1.0);
        if (fresh) it->second = speed_beside(k, cluster.gpu, held);
        return it->second;
      });
      return elapsed > work * (1 + 1e-12) ? elapsed : work;
    };
    GraphNode& node = g.nodes[static_cast<size_t>(inst.end)];
    const double begin = inst.begin == inst.end ? start[static_cast<size_t>(inst.end)]
                                                : finish[static_cast<size_t>(inst.begin)];
    if (c != nullptr) {
      const double elapsed = kernel_time(*c, begin, node.amount);
      if (elapsed > node.amount) {
        node.amount = elapsed;
        stretched = true;
      }
      continue;
    }
    // A segment: its ops one after another, each from where it starts in the uncontended
    // schedule (core/exec/activity_graph.h).
    if (profile.quiet(begin, begin + node.amount)) continue;
    const auto& times = g.segment_times.at({seg->ops.get(), inst.rank});
    double t = begin, total = 0;
    bool longer = false;
    for (size_t i = 0; i < seg->ops->size(); ++i) {
      const double work = times.each[i];
      const auto* k = std::get_if<ComputeOp>(&(*seg->ops)[i].body);
      const double elapsed = k != nullptr ? kernel_time(*k, t, work) : work;
      longer = longer || elapsed > work;
      total += elapsed;
      t += work;
    }
    if (longer) {
      node.amount = total;
      stretched = true;
    }
  }
  if (!stretched) return;
  const int inside = collective_sms(cluster, cluster.gpus_per_node);
  g.notes.push_back(
      "compute kernels that run beside collectives on the same GPU run on the SMs the "
      "collectives' NCCL thread blocks leave (one per channel" +
      (inside > 0 ? ", " + std::to_string(inside) + " inside a node here" : std::string()) +
      "), timed in one pass over the uncontended schedule; the collectives are not slowed by the "
      "compute kernels, and HBM bandwidth is not shared between them");
}

}  // namespace dtsim
