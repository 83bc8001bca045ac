// Closed-form costs of collectives and point-to-point transfers: the alpha-beta model.
// (Kernel costs, the roofline, are core/exec/compute_cost.h.)
//
// Contract:
// - collective_time: ring algorithms under the alpha-beta model (docs/reference.md, "Collectives"):
//   all-reduce 2(N-1)a + 2(N-1)/N S/b; all-gather, reduce-scatter and all-to-all half of that;
//   broadcast and reduce (N-1)a + S/b (pipelined chain). alpha and beta are those of the ring's
//   slowest hop (ring_link). No contention: that is the SimGrid executor's job.
// - Bandwidths inside a node are the fabric's usable bandwidth (line rate x protocol efficiency,
//   NCCL's link figure for NVLink and PCIe), as across nodes they are the NICs' usable share:
//   Cluster::usable_fabric_bandwidth and usable_nic_bandwidth (core/hardware/cluster.h).
// - A collective that runs as NCCL would (core/collectives/collective_schedule.h,
//   ResolvedCollective) adds NCCL's per-call base latency to its closed form, and a ring under LL
//   or LL128 has NCCL's bandwidth cap; explicit algorithms without a protocol are the pure
//   formulas above.
// - NVLS pays NCCL's NVLS latency (25 us, core/collectives/nccl_model.h nccl_nvls_latency_us) for
//   the whole call: 25 us + S (1 + 1/n) / (eta beta).
// - The same functions give the SimGrid executor its host speeds and the differential tests
//   their oracle, so there is one definition of each cost.
#pragma once

#include <vector>

#include "core/base/units.h"
#include "core/hardware/cluster.h"
#include "core/ir/program.h"

namespace dtsim {

// Latency and bandwidth of the slowest hop of a ring over `ranks`.
struct LinkCost {
  Seconds alpha{0};
  BytesPerSecond beta{0};
};
LinkCost ring_link(const std::vector<Rank>& ranks, const Cluster& cluster);
// The two kinds of hop of a ring over `ranks`: inside a node (the fabric) and, when the ring
// crosses nodes, between them (alpha: the longest route latency of any hop across nodes, beta: the
// node's NIC share as in ring_link; zero when the ring stays in one node). ring_link is their
// slowest.
struct RingHops {
  LinkCost intra;
  LinkCost net;
};
RingHops ring_hops(const std::vector<Rank>& ranks, const Cluster& cluster);

// The latency a pipelined ring pays over `steps` steps: a piece of data is forwarded hop by hop
// along its channel's ring, each hop paying its own route latency (NCCL's model: base +
// (nsteps - nInter) intraLat + nInter interLat, src/graph/tuning.cc v2.30 ncclTopoTuneModel),
// so the ring's latency is the largest sum of `steps` consecutive hop latencies over its channels
// and starting points. Under a protocol each hop's latency is scaled as NCCL's model charges it
// (ProtocolEffect, per kind of hop): NVLink or PCIe inside a node, the network's ring figure
// across nodes (its tree figure when the ring has one rank per node), and, on multi-node rings, a
// hop inside a node at least NCCL's network overhead (1 us, 3 us under Simple: getNetOverhead).
// Against NCCL's count of 2(N-1) network steps for an all-reduce (N-1 for all-gather and
// reduce-scatter) the worst window of a ring with g >= 3 ranks a node holds 2N (N): two hops more.
Seconds ring_path_latency(const std::vector<Rank>& ranks, int steps, const Cluster& cluster,
                          CollectiveProtocol protocol);
// One flow between two endpoints: inside a node one fabric hop, to or from a node's switch half of
// one; across nodes the network, at one NIC's usable rate and at most the GPU's own link. On a
// torus, latency + (hops - 1) x torus_hop_latency along the dimension-order route.
LinkCost point_to_point_link(Endpoint a, Endpoint b, const Cluster& cluster);
// One ring along a torus dimension (core/hardware/torus.h), for a group with `ranks_per_node` ranks
// on each node: alpha is a one-hop route (Cluster::gpu_network_latency); beta is the cable's share
// of one of the node's ranks, usable_nic_bandwidth x min(1, g / gpus_per_node) / g (the node's
// other GPUs run groups of the same shape), at most the GPU's own link.
LinkCost torus_link(int ranks_per_node, const Cluster& cluster);

// The torus all-reduce (core/collectives/collective_schedule.h) on a contention-free torus: the
// node phases 2[(g-1) alpha_node + (g-1)/g S/beta_node], plus the slowest rotation: rotation r
// starts with X = S/(g D) and for its i-th dimension (k nodes, w = 2 ways round when k >= 3, else
// 1) costs 2[(k-1) alpha + (k-1)/k X_i/(w beta)], with X_{i+1} = X_i / k. Rotations run on
// different dimensions at every phase when all dimensions are equal; with unequal ones they can
// meet on a cable, which only the SimGrid engine sees.
Seconds torus_all_reduce_time(Bytes bytes, const std::vector<Rank>& ranks, const Cluster& cluster);

Seconds collective_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const Cluster& cluster);
// The closed form of `op` run as `resolved` says (algorithm, protocol, NCCL's per-call latency and
// bandwidth cap), without resolving it again: how algorithm auto times its candidates.
struct ResolvedCollective;
Seconds resolved_collective_time(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                 const Cluster& cluster, const ResolvedCollective& resolved);
Seconds point_to_point_time(Bytes bytes, Endpoint a, Endpoint b, const Cluster& cluster);

// nccl-tests bus-bandwidth factor (docs/reference.md): 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce.
double bus_bandwidth_factor(CollectiveKind kind, int n);

}  // namespace dtsim
