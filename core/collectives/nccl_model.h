// NCCL's own cost model for all-reduce, all-gather and reduce-scatter (NVIDIA/nccl src/tuning,
// v2.28-2.30; all-gather and reduce-scatter from src/graph/tuning.cc ncclTopoTuneModel at v2.30,
// commit 5067397c2676d5aed50042fc39e5c8ee96eb0027): the latency and
// bandwidth NCCL predicts for each algorithm and protocol, and the one it picks.
//
// Contract:
// - Follows docs/evidence/nccl-tuning-model.md, which describes the model from NCCL's source
//   with every constant's file and function. dtsim uses it as the reference its own predictions
//   are compared with (docs/validation.md), and as the rule `algorithm: auto` will follow.
// - The topology-search results NCCL would find (channels and per-channel bandwidth per graph)
//   come from nccl_graphs(), a reduced form of NCCL's search that reproduces the graphs derived
//   by hand in the note for NVSwitch nodes with and without NICs; other systems are refused.
// - Times in microseconds, bandwidths in GB/s (decimal), as NCCL computes them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/base/enum_table.h"
#include "core/hardware/cluster.h"

namespace dtsim {

enum class NcclAlgorithm { kRing, kTree, kNvls, kNvlsTree, kPat };
inline constexpr auto kNcclAlgorithmNames =
    make_enum_table<NcclAlgorithm>({{NcclAlgorithm::kRing, "ring"},
                                    {NcclAlgorithm::kTree, "tree"},
                                    {NcclAlgorithm::kNvls, "nvls"},
                                    {NcclAlgorithm::kNvlsTree, "nvls-tree"},
                                    {NcclAlgorithm::kPat, "pat"}});
constexpr std::string_view to_string(NcclAlgorithm a) {
  return kNcclAlgorithmNames.to_string(a);
}

enum class NcclProtocol { kLL, kLL128, kSimple };
inline constexpr auto kNcclProtocolNames =
    make_enum_table<NcclProtocol>({{NcclProtocol::kLL, "LL"},
                                   {NcclProtocol::kLL128, "LL128"},
                                   {NcclProtocol::kSimple, "Simple"}});
constexpr std::string_view to_string(NcclProtocol p) {
  return kNcclProtocolNames.to_string(p);
}

struct NcclGraph {
  int channels = 0;
  double bw_intra_GBps = 0;
  double bw_inter_GBps = 0;
};

struct NcclSystem {
  int ranks = 1;
  int nodes = 1;
  int compute_capability = 90;  // 80 Ampere, 90 Hopper
  bool nvlink_intra = true;     // NVLink/NVSwitch inside nodes (else PCIe)
  NcclGraph ring, tree;
  std::optional<NcclGraph> nvls;  // NVSwitch multicast (Hopper and later)
};

struct NcclEstimate {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;
  double algbw_GBps = 0;  // after protocol caps and size-dependent corrections
  double time_us = 0;
};

// Whether NCCL runs this cluster's collectives at all: on NVIDIA GPUs, or on an inline GPU whose
// vendor is not stated (judged by its fabric, as before). Elsewhere another library runs them
// (MPI on the CPU-core device, RCCL on AMD, ...) and dtsim uses its textbook alpha-beta forms
// without NCCL's per-call terms, caps or NVLS.
bool nccl_runs_collectives(const Cluster& cluster);

// The graphs NCCL's topology search finds for `ranks` GPUs of this cluster (filling whole
// nodes). Throws InputError for systems the reduced search does not cover: GPUs NCCL does not
// run on (nccl_runs_collectives), and fabrics other than NVSwitch A100 and H100/H200 nodes.
NcclSystem nccl_system(const Cluster& cluster, int ranks);

// Every enabled algorithm and protocol for an all-reduce of `bytes`, in NCCL's order.
std::vector<NcclEstimate> nccl_all_reduce_estimates(const NcclSystem& system, double bytes);

// The fastest of them (NCCL keeps the first on ties).
NcclEstimate nccl_all_reduce_choice(const NcclSystem& system, double bytes);

// Every enabled algorithm and protocol for an all-gather or reduce-scatter whose gathered array is
// `bytes` (NCCL times them on ncclFuncMaxSendRecvCount = nRanks x count elements, src/include/
// enqueue.h, the nccl-tests S), in NCCL's order (src/graph/tuning.cc v2.30 ncclTopoTuneModel):
// - Ring under LL, LL128 and Simple: the all-reduce's bus bandwidth and caps, algBw = busBw n /
//   (n-1); latency base + (nsteps - nInter) intraLat + nInter interLat with nsteps = n - 1 and
//   nInter = N - 1; no plateau factor (that is all-reduce only, ncclTopoGetAlgoTime).
// - NVLS (Simple, one node, Hopper and later): per channel bwIntra x eta x (nCh-1)/nCh x
//   (ppn-1)/ppn, at most bwInter; algBw = nCh x that (no bus-to-algorithm conversion for
//   algorithms other than the ring); latency hwLat[NVLINK][NVLS] = 25 us, base 0. Across nodes
//   NCCL runs NVLS all-gather and reduce-scatter only with CollNet (SHARP), which is not modelled.
// - PAT (Simple, one GPU per node on two or more nodes, ncclPatEnable): the tree graph's channels x
//   (bwIntra on 2 nodes, else bwInter) x 0.75, no bus-to-algorithm conversion; latency base 8 us +
//   log2i(nodes) x 14 / 3.5 + 2.8 n us (14 us: hwLat[NET][TREE][Simple], NCCL's network figure at
//   one GPU per node).
// `kind` must be all-gather or reduce-scatter (the model is the same for both).
std::vector<NcclEstimate> nccl_gather_scatter_estimates(const NcclSystem& system, double bytes);
NcclEstimate nccl_gather_scatter_choice(const NcclSystem& system, double bytes);

// NCCL's per-call base latency (baseLat in src/tuning/cost_model.cc ncclTunerConstantsDefaults, the
// same in v2.28 src/graph/tuning.cc), in us: Ring 6.6 / 14.0 / 8.4 and Tree 6.8 / 14.0 / 8.4 for
// LL / LL128 / Simple, NVLS and NVLS-tree 0. It is paid once per call, on top of the per-step
// hardware latencies.
double nccl_base_latency_us(NcclAlgorithm algorithm, NcclProtocol protocol);

// NCCL's latency for an NVLS all-reduce inside one node, in us: hwLat[NVLINK][NVLS][Simple] = 25
// (src/tuning/cost_model.cc ncclTunerConstantsDefaults; v2.28 src/graph/tuning.cc; V20 had 23),
// with a base latency of 0, so the whole call costs 25 us plus its bytes over the NVLS bandwidth
// (docs/evidence/nccl-tuning-model.md sections 1 and 1.3). It covers the switch's reduction and
// multicast round trip, which a per-hop link latency does not.
double nccl_nvls_latency_us();

// The cap NCCL puts on a ring's bus bandwidth under a protocol (src/tuning/ring.cc), in GB/s: LL at
// most llMaxBw (141 on one Hopper node, 87.7 on one Ampere node, 39 / 39 / 20.4 on 1 / 2 / 4+
// nodes' Intel hosts), LL128 at most the ring's channels x perChMaxRingLL128Bw (36.7 Hopper, 20
// Ampere); infinity for Simple. The protocol's bandwidth factor (0.5, 0.92) comes on top.
double nccl_ring_bus_bandwidth_cap_GBps(const NcclSystem& system, NcclProtocol protocol);

// The kinds of hop NCCL's model gives a hardware latency (hwLat[NVLINK | PCI | NET]).
enum class NcclLink { kNvlink, kPci, kNet };
// NCCL's per-hop hardware latency for an algorithm and protocol, in us (src/tuning/cost_model.cc
// ncclTunerConstantsDefaults; v2.28 src/graph/tuning.cc hwLat): the ring 0.6 / 1.9 / 3.4 on NVLink,
// 1.0 / 2.5 / 5.7 on PCIe, 2.7 / 4.0 / 14 on the network; the tree 0.6 / 1.25 / 4.0, 1.0 / 1.9 /
// 4.0 and 5.0 / 8.5 / 14 (LL / LL128 / Simple); NVLS and NVLS-tree 0 except NVLS on NVLink 25 and
// NVLS-tree on the network 20.9 (Simple).
double nccl_hw_latency_us(NcclAlgorithm algorithm, NcclProtocol protocol, NcclLink link);

// The cap NCCL puts on NVLS-tree's bus bandwidth (src/tuning/nvls.cc, perChMaxNvlsTreeBw), in GB/s:
// the NVLS graph's channels x 57.7 on 2 nodes, x 45.5 on 3 or more (0 on one node, where NVLS-tree
// does not run). NCCL's algBw is bus x n / (2 (n - 1)), as for the ring.
double nccl_nvls_tree_bus_bandwidth_cap_GBps(const NcclSystem& system);

// NCCL's latency for a CollNet-direct all-reduce (SHARP) over nodes of `ppn` GPUs, in us
// (src/graph/ tuning.cc v2.30 ncclTopoTuneModel, NCCL_ALGO_COLLNET_DIRECT; the model's only
// protocol is Simple, base latency 0): 2 (min(1, ppn - 1) x 3.7 + (ppn - 1) x 0.4) + 31, with 3.7
// us hwLat[NVLINK][COLLNET_DIRECT][Simple], 0.4 us a step of arity serialisation per local rank,
// and 31 us hwLat[NET][COLLNET_DIRECT][Simple] for the switch's reduction round trip (with one GPU
// per node, NCCL's tree network figure, 14 us, as for every algorithm at ppn = 1). 44 us at ppn
// = 8.
double nccl_collnet_direct_latency_us(int ppn);

// The tree's protocol bandwidth factor against its Simple figure (src/tuning/tree.cc): LL 1 / 3.8;
// LL128 7 / 9 on one node, 120 / 128 across nodes; Simple 1.
double nccl_tree_bandwidth_factor(int nodes, NcclProtocol protocol);

// The cap NCCL puts on the tree's bus bandwidth under a protocol (src/tuning/tree.cc), in GB/s:
// channels x perChMaxTreeBw (Simple; 38.7 / 41.4 / 36.0 on 1 / 2 / 4+ Hopper nodes, 24.0 / 23.6 /
// 17.8 Ampere), times the protocol's factor; LL at most llMaxBw, LL128 at most channels x
// perChMaxTreeLL128Bw (36.7 / 36.7 / 29.0 Hopper, 20 Ampere). NCCL's tree algBw is half its bus
// bandwidth.
double nccl_tree_bus_bandwidth_cap_GBps(const NcclSystem& system, NcclProtocol protocol);

// NCCL's correction of the tree's bandwidth at a size (treeCorrectionFactor[protocol][log2(bytes /
// 64)], src/tuning/tree.cc; 1 from 256 MiB up): 0.4 to 1 at mid sizes, its measured shortfall
// there.
double nccl_tree_correction_factor(NcclProtocol protocol, double bytes);

}  // namespace dtsim
