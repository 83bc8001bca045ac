// Compute kernels that run beside communication kernels on the same GPU: the SMs the
// communication kernels hold are not available to the compute kernel.
//
// Contract:
// - NCCL runs a collective as one kernel of one thread block (CTA) per channel (NVIDIA/nccl
//   src/enqueue.cc ncclLaunchKernel: the grid is the plan's channel count, blocks of up to 640
//   threads), and a GEMM's thread blocks need most of an SM's shared memory, so an SM
//   that holds an NCCL block runs no GEMM tile beside it. Such a compute kernel therefore runs on
//   sm_count minus the blocks of the collectives running at the same time, at the rate
//   compute_time() gives on that many SMs (core/exec/compute_cost.h: the SMs' share of the peak,
//   the tiles quantized into waves of those SMs; memory side unchanged).
// - A collective's blocks (collective_sms): NCCL's channel count for its group, from the ring
//   graph NCCL's topology search finds (core/collectives/nccl_model.h nccl_system: 12 channels
//   inside one A100 or H100 NVSwitch node, one per NIC across nodes), doubled across Hopper nodes
//   where the graph runs above 45 GB/s per channel with fewer than 16 channels (src/graph/
//   connect.cc ncclTopoPostset, NCCL v2.30 commit 5067397c). The same count stands for every
//   collective kind and algorithm (NVLS runs 16 channels on Hopper, src/transport/nvls.cc; the
//   tree runs the ring's), and for Transformer Engine's userbuffers under tp_comm_overlap (16 SMs
//   for its bulk and pipelined overlaps, 1 for its ring exchange: transformer_engine/pytorch/
//   module/base.py initialize_ub, get_default_config). 0 where NCCL does not run the cluster's
//   collectives, where the GPU's SM count is unknown, or on fabrics NCCL's reduced search does not
//   cover (nccl_system: PCIe and non-NVSwitch nodes), which keep the uncontended times. Sends and
//   receives are not charged.
// - When (charge_overlap_contention): a closed-form pass over the lowered graph
//   (finish_times_without_contention) gives each rank's collectives their [start, end]; a compute
//   kernel that starts at s with duration d then consumes its work at its full rate outside those
//   windows and at rate(SMs left) / rate(all SMs) inside them (several collectives at once: their
//   blocks add up, leaving at least one SM), and its node's duration becomes the time that takes.
//   One pass: the windows are those of the uncontended schedule, so a collective that a slower
//   kernel would now start later is not moved (first order in the slowdown). The collectives are
//   not slowed by the compute kernel beside them, and HBM bandwidth is not shared.
#pragma once

#include "core/exec/activity_graph.h"

namespace dtsim {

// Thread blocks an NCCL collective of `group_size` ranks holds on each member GPU (contract).
int collective_sms(const Cluster& cluster, int group_size);

// How long a kernel of `work` seconds (at its full rate) takes when, from its start, a window of
// `window` seconds lets it run at `speed` of that rate (0 < speed <= 1), and its full rate after.
Seconds time_beside_window(Seconds work, Seconds window, double speed);

// Stretches the compute nodes of `g` that overlap collectives on their own GPU (contract), and
// adds one note to g.notes when any kernel was stretched. No-op when no collective takes SMs.
void charge_overlap_contention(ActivityGraph& g, const Job& job, const Cluster& cluster);

}  // namespace dtsim
