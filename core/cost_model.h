// Closed-form costs: the roofline for kernels and the alpha-beta model for collectives.
//
// Contract:
// - compute_time: a kernel takes max(FLOPs / (peak(dtype) x efficiency(kind)),
//   bytes / (memory bandwidth x memory efficiency)) plus the kernel launch overhead (Williams
//   et al. 2009, "Roofline"). Efficiencies come from the GpuSpec.
// - collective_time: ring algorithms under the alpha-beta model (reference.md, "Collectives"):
//   all-reduce 2(N-1)a + 2(N-1)/N S/b; all-gather, reduce-scatter and all-to-all half of that;
//   broadcast and reduce (N-1)a + S/b (pipelined chain). alpha and beta are those of the ring's
//   slowest hop (ring_link). No contention: that is the SimGrid executor's job.
// - Bandwidths inside a node are the fabric's usable bandwidth (line rate x protocol efficiency,
//   NCCL's link figure for NVLink and PCIe), as across nodes they are the NICs' usable share.
// - A collective that runs as NCCL would (core/collective_schedule.h ResolvedCollective) adds
//   NCCL's per-call base latency to its closed form, and a ring under LL or LL128 has NCCL's
//   bandwidth cap; explicit algorithms without a protocol are the pure formulas above.
// - The same functions give the SimGrid executor its host speeds and the differential tests
//   their oracle, so there is one definition of each cost.
#pragma once

#include <vector>

#include "core/program.h"
#include "core/scenario.h"
#include "core/units.h"

namespace dtsim {

// Peak rate a kernel of this kind can reach on this GPU: the compute roof.
FlopsPerSecond achievable_flop_rate(const GpuSpec& gpu, KernelKind kind, DType dtype);
BytesPerSecond achievable_memory_bandwidth(const GpuSpec& gpu);

// GEMM tile and wave quantization (NVIDIA Deep Learning Performance Guide, "Matrix
// Multiplication Background", sections on tile and wave quantization): the output is computed
// in kGemmTileM x kGemmTileN tiles, one per SM at a time, so a GEMM runs ceil(tiles / SMs) full
// waves. Returns useful work / work the waves could do, in (0, 1]; 1 when the shape or the SM
// count is unknown. The tile is the largest tensor-core tile cuBLAS and CUTLASS use for large
// half-precision GEMMs on Ampere and Hopper (256 x 128, the guide's example); the achievable
// rate it scales (gemm_efficiency, from MAMF sweeps) already holds for well-shaped GEMMs.
inline constexpr double kGemmTileM = 256, kGemmTileN = 128;
double wave_efficiency(const GemmShape& shape, int sm_count);

Seconds compute_time(const ComputeOp& op, const GpuSpec& gpu);

// Node of a global rank: ranks fill nodes in order (rank r is on node r / gpus_per_node).
int node_of(Rank r, const ClusterConfig& cluster);

// Latency and bandwidth of the slowest hop of a ring over `ranks`.
struct LinkCost {
  Seconds alpha{0};
  BytesPerSecond beta{0};
};
LinkCost ring_link(const std::vector<Rank>& ranks, const ClusterConfig& cluster);
// On a torus, latency + (hops - 1) x torus_hop_latency along the dimension-order route.
LinkCost point_to_point_link(Rank a, Rank b, const ClusterConfig& cluster);
// One ring along a torus dimension (core/torus.h), for a group with `ranks_per_node` ranks on each
// node: alpha is a one-hop route (plus the PCIe links on PCIe nodes); beta is the cable's share of
// one of the node's ranks, nic_bandwidth x protocol_efficiency x min(1, g / gpus_per_node) / g (the
// node's other GPUs run groups of the same shape), at most the GPU's own link.
LinkCost torus_link(int ranks_per_node, const ClusterConfig& cluster);

// The torus all-reduce (core/collective_schedule.h) on a contention-free torus: the node phases
// 2[(g-1) alpha_node + (g-1)/g S/beta_node], plus the slowest rotation: rotation r starts with
// X = S/(g D) and for its i-th dimension (k nodes, w = 2 ways round when k >= 3, else 1) costs
// 2[(k-1) alpha + (k-1)/k X_i/(w beta)], with X_{i+1} = X_i / k. Rotations run on different
// dimensions at every phase when all dimensions are equal; with unequal ones they can meet on a
// cable, which only the SimGrid engine sees.
Seconds torus_all_reduce_time(Bytes bytes, const std::vector<Rank>& ranks,
                              const ClusterConfig& cluster);

Seconds collective_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const ClusterConfig& cluster);
Seconds point_to_point_time(Bytes bytes, Rank a, Rank b, const ClusterConfig& cluster);

// nccl-tests bus-bandwidth factor (reference.md): 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce.
double bus_bandwidth_factor(CollectiveKind kind, int n);

}  // namespace dtsim
