// One decomposition serves every collective: a collective becomes point-to-point flows with
// dependencies, which any network model (the SimGrid platform, or a closed form) can time.
//
// Contract:
// - Ring algorithms (Patarasuk and Yuan 2009; NCCL's ring): all-reduce is 2(N-1) steps, all-gather
//   and reduce-scatter N-1 steps; in each step every rank sends one segment (S/N of its channel's
//   share) to its ring successor, after it has received the previous step's segment and sent its
//   own previous one. On a contention-free network the critical path is steps x (alpha + S/(N
//   beta)), which is exactly the alpha-beta formula in core/collectives/cost_model.h.
// - Multi-node rings use one channel per GPU of the group on a node, each carrying S/channels and
//   leaving the node through a different GPU's NIC, as NCCL spreads its channels over the NICs.
//   Ring orders rotate per node so that the GPU leaving a node and the GPU entering the next one
//   have the same local index (same rail on a rail-optimized network). A group that ends part-way
//   through a node has as many channels as its smallest node has ranks (ring_channels), spread
//   over every NIC its GPUs reach.
// - Fidelity kChunk emits every step's flows. Fidelity kCollective emits one bulk flow per ring
//   edge carrying everything that edge moves over the whole collective, all concurrent, plus
//   (steps - 1) x alpha of latency: N flows instead of steps x N, and concurrent collectives still
//   share links.
// - All-reduce also has halving-doubling (Rabenseifner; Thakur, Rabenseifner and Gropp 2005):
//   log2(p) exchange steps of halving sizes, then the same doubling, with a fold of the n - p
//   extra ranks before and after when n is not a power of two; and hierarchical: a ring
//   reduce-scatter inside each node, g concurrent rings across nodes (one per local GPU index, on
//   that GPU's NIC), and a ring all-gather inside each node, the phases one after another.
// - NVLS all-reduce (one node): the switch (a flow endpoint, Endpoint::node_switch) reduces and
//   multicasts; with NCCL's pipelining each GPU link carries S (1 + 1/n) each way (its data read
//   for reduction plus its chunk stored for multicast, and the same back), at the NVLS
//   efficiency, and the call costs NCCL's NVLS latency L = 25 us (hwLat[NVLINK][NVLS], base 0;
//   core/collectives/nccl_model.h nccl_nvls_latency_us, docs/evidence/nccl-tuning-model.md 1.3):
//   L + S (1 + 1/n) / (eta beta). beta is the fabric's usable bandwidth (NCCL's NVLink figure), to
//   which NCCL applies eta as well. The flows carry one link's latency (alpha / 2) and a delay
//   after them the rest of L.
// - Tree all-reduce: NCCL's double binary tree, below (TreePlan).
// - Broadcast and reduce are pipelined chains; all-to-all is pairwise exchange (N-1 steps);
//   barrier is a zero-byte all-reduce.
#pragma once

#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "core/base/units.h"
#include "core/collectives/cost_model.h"
#include "core/collectives/nccl_model.h"
#include "core/hardware/cluster.h"
#include "core/hardware/endpoint.h"
#include "core/ir/program.h"

namespace dtsim {

enum class Fidelity { kChunk, kCollective };

// A transfer of `bytes` from one endpoint to another (core/hardware/endpoint.h).
struct Transfer {
  Endpoint src;
  Endpoint dst;
  Bytes bytes{0};
};

// One step of a schedule: a transfer, or a pure delay (no data moves, only time passes), that
// starts when the flows it comes `after` have finished.
struct Flow {
  std::variant<Transfer, Seconds> body;  // Seconds: a delay of that long
  std::vector<int> after;  // indices of flows that must finish first, all before this one

  static Flow transfer(Endpoint src, Endpoint dst, Bytes bytes, std::vector<int> after = {}) {
    return Flow{Transfer{src, dst, bytes}, std::move(after)};
  }
  // A transfer between two GPUs.
  static Flow between(Rank src, Rank dst, Bytes bytes, std::vector<int> after = {}) {
    return transfer(Endpoint::gpu(src), Endpoint::gpu(dst), bytes, std::move(after));
  }
  static Flow delay_of(Seconds delay, std::vector<int> after = {}) {
    return Flow{delay, std::move(after)};
  }

  bool is_delay() const { return std::holds_alternative<Seconds>(body); }
  const Transfer& transfer() const { return std::get<Transfer>(body); }
  Transfer& transfer() { return std::get<Transfer>(body); }
  Seconds delay() const { return std::get<Seconds>(body); }
};

// NVLS needs NVSwitch with NVLink 4 or later (Hopper, Blackwell), with NCCL running the
// collectives (nccl_runs_collectives).
bool nvls_supported(const Cluster& cluster);
// Fraction of link bandwidth NVLS reaches: 0.85 on Hopper, 0.74 on Blackwell (NCCL
// src/tuning/nvls.cc nvlsEfficiency; docs/evidence/nccl-tuning-model.md).
double nvls_efficiency(const Cluster& cluster);

struct CollectiveSchedule {
  std::vector<Flow> flows;
  Seconds trailing_latency{0};  // added after the flows finish (collective fidelity)
  int channels = 1;
  int steps = 0;
};

// Ring orders, one per channel (see the contract above). A group whose nodes hold different
// numbers of its ranks (one that ends part-way through a node) gets as many channels as its
// smallest node has ranks, each leaving and entering every node through a different GPU, spread
// over the node: NCCL drives every NIC the group's GPUs reach (Cluster::local_nic_of pairs them).
std::vector<std::vector<Rank>> ring_channels(const std::vector<Rank>& ranks,
                                             const Cluster& cluster);
// The pipelined chains of a broadcast (from `root`) or reduce (to it, `reduce`), each carrying an
// equal share of the bytes: one chain in group order from the root; inside one node whose NVLinks
// form a mesh (core/hardware/nvlink_mesh.h), one per ring channel, each its ring from the root, so
// every hop crosses a link.
std::vector<std::vector<Rank>> chain_channels(const std::vector<Rank>& ranks, Rank root,
                                              bool reduce, const Cluster& cluster);
// The NICs' worth of bandwidth a multi-node ring over `ranks` drives per node: its channels over
// the most channels any one NIC carries in one direction (0 inside one node).
double ring_nic_count(const std::vector<Rank>& ranks, const Cluster& cluster);

// How many flows decompose() would emit at chunk fidelity, without building them.
double chunk_flow_count(const CollectiveOp& op, const std::vector<Rank>& ranks,
                        const Cluster& cluster);

// A group's ranks by node: by_node[k][j] is the j-th rank on the k-th node the group touches.
// Empty when nodes hold different numbers of the group's ranks.
std::vector<std::vector<Rank>> ranks_by_node(const std::vector<Rank>& ranks,
                                             const Cluster& cluster);

// The multi-dimensional ring all-reduce on a torus network (topology: torus), as on TPU pods: a
// ring reduce-scatter inside each node (g ranks), then on the torus, for each dimension in turn, a
// ring reduce-scatter along that dimension on the data left by the previous one (S/g, then
// S/(g k0), ...), and the all-gathers back in reverse order, then the node all-gather. It is the
// hierarchical algorithm with the inter-node ring nested into the torus dimensions, and it runs as
// `hierarchical` on a torus. To use every cable at once the torus part is split into D concurrent
// rotations of S/(g D) each, rotation r visiting dimensions r, r+1, ... (mod D), so that at every
// phase each rotation is on a different dimension; and each ring along a dimension of 3 or more
// nodes is bidirectional (half the data each way). Applies when the group is whole nodes forming a
// sub-torus (every dimension spanned entirely or at one coordinate); nullopt otherwise.
struct TorusAllReducePlan {
  std::vector<std::vector<Rank>> nodes;  // ranks_by_node
  std::vector<int> sizes;                // nodes along each spanned dimension (k0, k1, ...)
  // rings[d]: the rings along spanned dimension d, one per line of nodes and local rank index,
  // in coordinate order (each hop one cable in the + direction).
  std::vector<std::vector<std::vector<Rank>>> rings;
};
std::optional<TorusAllReducePlan> torus_all_reduce_plan(const std::vector<Rank>& ranks,
                                                        const Cluster& cluster);

// What a request runs as. Explicit algorithms fall back to the ring where they do not apply.
// On a torus network, auto runs an all-reduce as the torus all-reduce (hierarchical) when its
// closed form is faster than the ring's.
//
// Algorithm auto (all-reduce) takes the fastest of the ways NCCL could run it that dtsim builds,
// timed by dtsim's own closed form (resolved_collective_time, core/collectives/cost_model.h): the
// ring under LL, LL128 and Simple, the double binary tree (not on PCIe nodes), and NVLS inside one
// NVSwitch node. Where
// NCCL's cost model covers the system (NVSwitch A100/H100/H200 nodes, whole nodes) each pays NCCL's
// per-call base latency (the tree: that of the protocol NCCL's model runs the tree with) and the
// ring NCCL's protocol bandwidth caps; elsewhere the candidates are the ring, tree and NVLS without
// them. So auto is never slower, under dtsim's timing, than any candidate run explicitly.
// NCCL's own pick (nccl_reference_choice) can differ where NCCL's model and dtsim's timing
// disagree; dtsim collective reports it beside auto's (docs/collectives.md). The protocol-free
// explicit algorithms (ring, halving-doubling, hierarchical without --protocol) are textbook
// alpha-beta models without NCCL's per-call and protocol costs; auto does not choose them.
// All-gather and reduce-scatter choose the same way among the ring's three protocols (the only
// algorithm dtsim builds for them); collectives other than these three run as the pure ring.
//
// A collective that runs as NCCL would (auto on a system NCCL's model covers, or the ring with an
// explicit protocol) also pays NCCL's per-call base latency (core/collectives/nccl_model.h
// nccl_base_latency_us: 6.6-14 us by protocol), once, before its flows; a ring under LL or LL128
// has its bus bandwidth capped as NCCL caps it (nccl_ring_bus_bandwidth_cap_GBps) where the system
// is one NCCL's model covers. Explicit algorithms without a protocol stay pure alpha-beta (NVLS
// always pays NCCL's NVLS latency).
struct ResolvedCollective {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  CollectiveProtocol protocol = CollectiveProtocol::kAuto;  // kAuto here: no protocol effect
  Seconds call_latency{0};                                  // NCCL's base latency; 0: none
  BytesPerSecond bandwidth_cap{0};  // cap on the ring's bus bandwidth (its beta); 0: none
};
ResolvedCollective resolve_collective(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const Cluster& cluster);
CollectiveAlgorithm resolve_algorithm(const CollectiveOp& op, const std::vector<Rank>& ranks,
                                      const Cluster& cluster);
// What NCCL's own cost model (core/collectives/nccl_model.h) would pick for this all-reduce,
// all-gather or reduce-scatter among all its algorithms, with its predicted time; nullopt for other
// collectives and for systems the model does not cover.
std::optional<NcclEstimate> nccl_reference_choice(const CollectiveOp& op,
                                                  const std::vector<Rank>& ranks,
                                                  const Cluster& cluster);

// A protocol's effect on a ring (NCCL src/tuning constants, docs/evidence/nccl-tuning-model.md):
// per-step latency scales by NCCL's hardware latency for the protocol over its LL latency (the
// catalog's latencies are NCCL's LL figures), and bandwidth by 0.5 (LL), 0.92 (LL128) or 1.
struct ProtocolEffect {
  double latency_scale = 1;
  double bandwidth_factor = 1;
};
ProtocolEffect protocol_effect(CollectiveProtocol protocol, bool crosses_nodes, bool pcie);

// NCCL's double binary tree all-reduce (Sanders, Speck and Traeff 2009, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan"; NCCL src/graph/trees.cc, connect.cc):
// - Over nodes, two binary trees: NCCL's btree (rank 0 the root with one child, the others by
//   their lowest set bit) and its mirror (even node counts) or its shift by one (odd), so that
//   most nodes are interior in one tree and a leaf in the other. Each tree carries half the data.
// - Inside a node, a chain hanging below the node's head GPU (NCCL's TREE pattern). Multi-node
//   groups with g ranks per node use g channels, channel c with local rank c as head, so every
//   GPU's NIC carries one channel's tree traffic; one node is one channel, a chain in rank order.
// - Reduce up, broadcast down, pipelined in K chunks of c = D / K, D = S / (2 channels), with
//   NCCL's tree chunk size (512 KiB, halved for small sizes as NCCL does for deep trees).
// - Each tree edge is a pipeline stage: position p = h - d going up, h + d - 1 going down, for an
//   edge whose child is at depth d of a tree of height h = (g - 1) + ceil(log2 m). Every flow of
//   a chunk takes at most b = c x max over links of (flows sharing the link in steady state) /
//   (link bandwidth), taken separately over the hops inside nodes and across them: the pipeline
//   runs at the pace of its busiest link, as NCCL's does under flow control. A stage passes a chunk
//   on after w_p = alpha_p + b_p and takes the next one b_p later (alpha_p, b_p: the largest of the
//   kinds of hop at that stage).
// - On a contention-free network that gives T = sum_p w_p + (K - 1) max_p b_p (a deterministic
//   tandem pipeline). The regular cases, h stages each way of alpha + b:
//   one node of n GPUs: 2(n-1) alpha + (2(n-1) + K - 1) b, with K b = 2S/beta (S/beta at n = 2);
//   m single-GPU nodes: 2 ceil(log2 m) alpha + (2 ceil(log2 m) + K - 1) b, K b = L S / (2 beta),
//   L = 2, 3, 4 for m = 2, 3, >= 4 (flows on the busiest NIC: a node interior in one tree and a
//   leaf in the other has 3 + 1). At large S both tend to 2S/beta, NCCL's algBw = busBw / 2.
struct TreePlan {
  struct Edge {
    Rank parent = 0;
    Rank child = 0;
    int depth = 0;        // the child's depth, 1 below the root
    bool across = false;  // between nodes
  };
  // channels x 2 trees; shared with every plan of the same group (its shape does not depend on
  // the bytes or the protocol)
  std::vector<std::shared_ptr<const std::vector<Edge>>> trees;
  int channels = 1;
  int height = 0;       // h
  int chunks = 1;       // K
  Bytes chunk{0};       // c
  Bytes wire_chunk{0};  // c over the protocol's bandwidth factor: what a chunk's flow carries
  Seconds intra_alpha{0}, net_alpha{0};              // a hop's latency under the protocol
  Seconds intra_route_alpha{0}, net_route_alpha{0};  // a flow's own route latency
  Seconds intra_busy{0}, net_busy{0};                // b of the hops inside and across nodes
  std::vector<Seconds> stage_time;                   // w_p, p = 0 .. 2h-1
  std::vector<Seconds> stage_gap;                    // b_p
  Seconds time() const;                              // the closed form above
};
// Under one of NCCL's protocols (LL, LL128, Simple; kAuto: none) each hop's latency is NCCL's tree
// hardware latency for it (the catalog's latency x hwLat[tree][protocol] / hwLat[ring][LL] of its
// kind of hop, core/collectives/nccl_model.h nccl_hw_latency_us), every flow carries its chunk
// over the protocol's bandwidth factor (nccl_tree_bandwidth_factor: 1 / 3.8, 120 / 128 or 7 / 9,
// 1), and with `bus_cap` (NCCL's tree bus-bandwidth cap, 0: none) every stage takes a chunk no
// faster than 4 channels c / bus_cap, so that the whole moves at most at algBw = bus_cap / 2.
// A `chunk_size` above 0 replaces NCCL's tree chunk rule (NVLS-tree's rails use NVLS-tree's).
// Empty trees when the group is not the same number of ranks on every node.
TreePlan double_binary_tree(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes,
                            CollectiveProtocol protocol = CollectiveProtocol::kAuto,
                            BytesPerSecond bus_cap = BytesPerSecond(0),
                            Bytes chunk_size = Bytes(0));

// NCCL's NVLS-tree all-reduce (multi-node NVLS; NCCL src/device/all_reduce.h runTreeNvls, cost in
// src/tuning/nvls.cc): inside each node the NVSwitch reduces and multicasts (as NVLS on one node,
// every GPU link carrying S (1 + 1/g) / eta each way), and across nodes g concurrent double binary
// trees, one per local GPU index (rail), each all-reducing the S / g its GPU owns over one GPU per
// node, through that GPU's NIC (TreePlan, under Simple, every hop NCCL's NVLS-tree network latency:
// the route's latency x hwLat[NET][NVLSTREE] / hwLat[NET][RING][LL] = 20.9 / 2.7). NCCL pipelines
// the two; dtsim runs them side by side, the NVLS flows after the trees' 2h hop latencies, so
//   T = max(2h a_net + a_link + X / beta, T_tree) + L - a_link,
// with L NCCL's 25 us NVLS latency, a_link half an NVLink hop, X the bytes per GPU link and T_tree
// the slowest rail tree's pipelined time (TreePlan::time), its chunk NCCL's NVLS-tree chunk (512
// KiB halved to 256, 128, 64 and 32 KiB while S is below 32, 16, 4 and 1 times 16 channels x g
// heads x the chunk: src/enqueue.cc); at large S the slower of the two parts' bandwidths, plus
// NCCL's latency 25 us + 2 h x 20.9 us. With `bus_cap` (NCCL's NVLS-tree bus-bandwidth cap,
// nccl_nvls_tree_bus_bandwidth_cap_GBps; 0: none) X is at least S beta / algBw with algBw = bus_cap
// n / (2 (n - 1)). Needs NVSwitch multicast (nvls_supported) and the same g ranks on each of m >= 2
// nodes; `rails` is empty otherwise.
struct NvlsTreePlan {
  std::vector<std::vector<Rank>> nodes;  // ranks_by_node
  std::vector<TreePlan> rails;           // one per local index, over one GPU per node
  Bytes per_link{0};                     // X
  Seconds tree_latency{0};               // 2 h a_net
  Seconds link_alpha{0};                 // a_link
  BytesPerSecond link_beta{0};           // beta, the fabric's usable bandwidth
  Seconds nvls_latency{0};               // L
  Seconds time() const;                  // the closed form above
};
NvlsTreePlan nvls_tree_plan(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes,
                            BytesPerSecond bus_cap = BytesPerSecond(0));

// NCCL's CollNet-direct all-reduce on switches that reduce in the network (NVIDIA SHARP; NCCL
// src/device/all_reduce.h runCollNetDirect, cost in src/graph/tuning.cc ncclTopoTuneModel): inside
// each node of g GPUs a reduce-scatter that makes every GPU the head of S / g; each head sends its
// S / g once through its NIC to the switches, which reduce across the m nodes and send the sum back
// (S / g in); then an all-gather inside the node. A node's NICs carry S each way, against the
// ring's 2 (n - 1) / n S. NCCL pipelines the three parts; dtsim runs them side by side as
// concurrent flows: every ordered GPU pair of a node carries 2 S / g (its reduce-scatter and
// all-gather chunks, so each GPU link carries X_f = 2 (g - 1) / g S each way), and GPU j of node k
// sends S / g to GPU j of node k + 1 (mod m), which loads every NIC with its S / g out and in as
// the switches' reduction does (the switches' aggregation tree is not built: its bytes above the
// leaves are taken as the flows' routes carry them, its time is NCCL's latency). So
//   T = max(a_f + X_f / beta_f, a_n + S / beta_n) + L - a_n,
// with beta_f the fabric's usable bandwidth, beta_n the node's NICs' (ring_hops' network figure),
// a_f and a_n a hop's latency inside and across nodes, and L NCCL's CollNet latency
// (nccl_collnet_direct_latency_us: 44 us on 8-GPU nodes; L >= a_n). The same flows at both
// fidelities. Needs cluster.network.in_network_reduction, NVSwitch inside the nodes (NCCL turns
// CollNet-direct off without it) and the same g ranks on each of m >= 2 nodes; `nodes` is empty
// otherwise.
struct CollNetPlan {
  std::vector<std::vector<Rank>> nodes;  // ranks_by_node
  Bytes per_link{0};                     // X_f
  Bytes per_node{0};                     // S, through the node's NICs each way
  LinkCost intra, net;                   // (a_f, beta_f), (a_n, beta_n)
  Seconds latency{0};                    // L
  Seconds time() const;                  // the closed form above
};
bool collnet_supported(const std::vector<Rank>& ranks, const Cluster& cluster);
CollNetPlan collnet_plan(const std::vector<Rank>& ranks, const Cluster& cluster, Bytes bytes);

// NCCL's PAT all-gather and reduce-scatter (Parallel Aggregated Trees, NCCL >= 2.23, one GPU per
// node only: src/graph/tuning.cc ncclPatEnable; schedule in src/include/collectives.h
// PatAGAlgorithm / PatRSAlgorithm), a Bruck-like schedule: ceil(log2 n) steps, step k of an
// all-gather sending min(2^k, n - 2^k) blocks of S / n from rank i to rank i - 2^k (the
// reduce-scatter the same steps in reverse order, to i + 2^k), so each rank sends and receives
// (n - 1) / n S in all. NCCL's model charges PAT busBw x 0.75 (its measured efficiency, on the
// ring graph's bandwidth) and a latency of base 8 us + log2(n) x interLat / 3.5 + 2.8 n us with
// interLat = 14 us, the tree's network figure at one GPU per node. dtsim carries each block over
// 0.75 (as the tree's protocol factors), charges each step the route's latency x (14 / 3.5) / 2.7
// (NCCL's step latency over its LL ring network figure, which the catalog's latency is), and the
// call 8 us + 2.8 n us once:
//   T = 8 us + 2.8 n us + ceil(log2 n) a_step + (n - 1) / n S / (0.75 beta),
// beta one network flow's bandwidth (point_to_point_link). At chunk fidelity every step waits for
// its rank's previous send and receive; at collective fidelity a rank's steps run as concurrent
// flows and the remaining steps' latency follows. Applies to all-gather and reduce-scatter with one
// rank on each of n >= 2 nodes where NCCL runs the collectives; `ranks` is empty otherwise.
struct PatPlan {
  std::vector<Rank> ranks;
  std::vector<int> blocks;  // blocks each step sends, in the order the steps run
  std::vector<int> shift;   // the step's peer: rank i sends to i + shift (mod n)
  Bytes block{0};           // S / n over 0.75: what one block's flow carries
  LinkCost net;             // one network flow
  Seconds step_latency{0};  // a_step
  Seconds call_latency{0};  // 8 us + 2.8 n us
  Seconds time() const;     // the closed form above
};
bool pat_supported(const CollectiveOp& op, const std::vector<Rank>& ranks, const Cluster& cluster);
PatPlan pat_plan(const CollectiveOp& op, const std::vector<Rank>& ranks, const Cluster& cluster);

// At collective fidelity the ring, all-to-all and tree merge their independent flows that share
// both endpoints into one flow carrying their bytes (merge_parallel_flows); merge_pairs = false
// keeps them apart, for tests that check the merge.
CollectiveSchedule decompose(const CollectiveOp& op, const std::vector<Rank>& ranks,
                             const Cluster& cluster, Fidelity fidelity, bool merge_pairs = true);

// Replaces independent transfers (no `after`) that share src and dst by one flow with their
// bytes, in order of first appearance; delays and dependent flows stay as they are.
void merge_parallel_flows(std::vector<Flow>& flows);

}  // namespace dtsim
