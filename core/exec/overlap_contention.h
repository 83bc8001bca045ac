// Compute kernels that run beside communication kernels on the same GPU: the SMs the
// communication kernels hold are not available to the compute kernel.
//
// Contract:
// - NCCL runs a collective as one kernel of one thread block (CTA) per channel (NVIDIA/nccl
//   src/enqueue.cc ncclLaunchKernel: the grid is the plan's channel count, blocks of up to 640
//   threads). The model assumes that an SM holding an NCCL block runs no GEMM tile beside it
//   (large GEMM kernels size their shared-memory pipelines to the SM's capacity). A published
//   Nsight measurement agrees in one case: on an H100, a GEMM of exactly 132 blocks took nearly
//   twice as long beside an NCCL all-gather of 24 blocks, its last blocks pushed into a second
//   wave (NVIDIA developer forum, "Compute-Communication Overlap Causes Severe GEMM Performance
//   Degradation because of Tail Effect", 2025); this model gives 2.0x there (132 tiles in two waves
//   of 108 SMs; tests/core/overlap_contention_test.cc). Such a compute kernel therefore runs on
//   sm_count minus the blocks of the collectives running at the same time, at the rate
//   compute_time() gives on that many SMs (core/exec/compute_cost.h: the SMs' share of the peak,
//   the tiles quantized into waves of those SMs; memory side unchanged).
// - A collective's blocks (collective_sms): NCCL's channel count for its group, from the ring
//   graph NCCL's topology search finds (core/collectives/nccl_model.h nccl_system: 12 channels
//   inside one A100 or H100 NVSwitch node, one per NIC across nodes), doubled across Hopper nodes
//   where the graph runs above 45 GB/s per channel with fewer than 16 channels (src/graph/
//   connect.cc ncclTopoPostset, NCCL v2.30 commit 5067397c). The group is taken to fill whole
//   nodes, as nccl_system does (NCCL's search for a group with fewer GPUs per node than the node
//   holds may find another count: not modelled). The same count stands for every
//   collective kind and algorithm (NVLS runs 16 channels on Hopper, src/transport/nvls.cc; the
//   tree runs the ring's), and for Transformer Engine's userbuffers under tp_comm_overlap (16 SMs
//   for its bulk and pipelined overlaps, 1 for its ring exchange: transformer_engine/pytorch/
//   module/base.py initialize_ub, get_default_config). 0 where NCCL does not run the cluster's
//   collectives, where the GPU's SM count is unknown, or on fabrics NCCL's reduced search does not
//   cover (nccl_system: PCIe and non-NVSwitch nodes), which keep the uncontended times. Sends and
//   receives are not charged.
// - When (charge_overlap_contention): a closed-form pass over the lowered graph
//   (finish_times_without_contention) gives each rank's collectives on streams without compute
//   kernels their [start, end] (one in line with the kernels never runs beside them); a compute
//   kernel that starts at s with duration d then consumes its work at its full rate outside those
//   windows and at rate(SMs left) / rate(all SMs) inside them (several collectives at once: their
//   blocks add up, leaving at least one SM), and its node's duration becomes the time that takes.
//   One pass: the windows are those of the uncontended schedule, so a collective that a slower
//   kernel would now start later is not moved (first order in the slowdown). The collectives are
//   not slowed by the compute kernel beside them, and HBM bandwidth is not shared.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "core/exec/activity_graph.h"

namespace dtsim {

// Thread blocks an NCCL collective of `group_size` ranks holds on each member GPU (contract).
int collective_sms(const Cluster& cluster, int group_size);

// The SMs a GPU's collectives hold over time: a piecewise-constant profile built from their
// windows, and a compute kernel's duration against it (the integration of the contract). The
// engines (through charge_overlap_contention) and the plan search's step evaluator
// (driver/plan_search.cc) share it.
class SmProfile {
 public:
  // A collective holding `sms` blocks from `start` to `end` (seconds); call before seal().
  void add(double start, double end, int sms);
  // Sorts the windows into segments; add() after seal() needs another seal().
  void seal();
  bool empty() const { return at_.empty(); }
  // Whether no blocks are held anywhere in [from, to).
  bool quiet(double from, double to) const;
  // The duration of a kernel that starts at `start` and needs `work` seconds at its full rate,
  // where speed(held) is its rate with `held` SMs taken over its full rate.
  template <typename Speed>
  double stretched(double start, double work, Speed&& speed) const;

 private:
  std::vector<std::pair<double, int>> events_;  // (time, +/- blocks)
  std::vector<double> at_;                      // segment i runs from at_[i] to at_[i + 1]
  std::vector<int> held_;                       // blocks held in segment i
};

template <typename Speed>
double SmProfile::stretched(double start, double work, Speed&& speed) const {
  if (work <= 0 || at_.empty()) return work;
  // The segment that holds `start` (none before the first window).
  size_t i = static_cast<size_t>(std::upper_bound(at_.begin(), at_.end(), start) - at_.begin());
  if (i == 0 && start + work <= at_.front()) return work;
  double t = start, elapsed = 0;
  if (i > 0) {
    --i;
  } else {  // full rate until the first window opens
    elapsed = at_.front() - start;
    work -= elapsed;
    t = at_.front();
  }
  for (; i < at_.size() && work > 0; ++i) {
    const double segment_end = i + 1 < at_.size() ? at_[i + 1] : t + work;
    const double rate = held_[i] > 0 ? speed(held_[i]) : 1.0;
    const double span = segment_end - t;
    if (span <= 0) continue;
    if (work <= rate * span) return elapsed + work / rate;
    elapsed += span;
    work -= rate * span;
    t = segment_end;
  }
  return elapsed + work;  // after the last window, at the full rate
}

// A compute kernel's rate on the SMs `held` blocks leave, over its rate on all of them.
double speed_beside(const ComputeOp& op, const GpuSpec& gpu, int held);

// How long a kernel of `work` seconds (at its full rate) takes when, from its start, a window of
// `window` seconds lets it run at `speed` of that rate (0 < speed <= 1), and its full rate after.
Seconds time_beside_window(Seconds work, Seconds window, double speed);

// Stretches the compute nodes of `g` that overlap collectives on their own GPU (contract), and
// adds one note to g.notes when any kernel was stretched. No-op when no collective takes SMs.
void charge_overlap_contention(ActivityGraph& g, const Job& job, const Cluster& cluster);

}  // namespace dtsim
