// NVLink meshes inside a node as links rather than one per-GPU figure: the DGX-1 hybrid cube-mesh
// of 8 V100 (NVIDIA DGX-1 with Tesla V100 System Architecture whitepaper, 2017, figure 4), the
// rings NCCL's topology search finds over it, and relay routes between GPUs with no link.
//
// Contract:
// - dgx1_v100_links(): the 24 NVLink2 links of the whitepaper's cube-mesh, as pairs with a link
//   count: each GPU has 6 links to 4 peers, two of them doubled (the quads 0-3 and 4-7 are fully
//   connected and GPU i links to GPU i + 4 across them; nvidia-smi topo -m on a DGX-1V shows
//   NV1/NV2 as here). The doubled pairs form one 8-cycle (0 3 2 1 5 6 7 4), the single ones another
//   (0 1 3 7 5 4 6 2).
// - nccl_rings(): NCCL's ring search as src/graph/search.cc does it (ncclTopoCompute): for each
//   speed of the intra-node ladder (speedArrayIntra: 40, 30, 20, 18, ... GB/s on SM70/SM80), the
//   largest set of directed rings through every GPU in which each ring takes `speed` of every
//   NVLink direction it crosses, a link giving link_GBps (SM70_NVLINK_BW = 20 GB/s, src/graph/
//   topo.h) per direction; it moves to the next speed while that is more than 0.49 of the current
//   one or nothing was found, keeps the set with the largest channels x speed, and stops once
//   that reaches a GPU's whole NVLink bandwidth. The model's ring bus bandwidth is channels x
//   speed (src/graph/tuning.cc: busBw = nChannels x bw for the ring's Simple protocol).
// - relay_route(): the GPUs a flow between two GPUs crosses: [a, b] when they share a link, else
//   [a, m, b] through the lowest-numbered m linked to both (the cube-mesh has one for every pair).
// - cluster_mesh(): the link graph a cluster's nodes have, or nullptr when the node is one figure
//   per GPU. The catalog fabric nvlink-hybrid-cube-mesh (kCubeMeshFabric) on 8-GPU nodes is the
//   DGX-1 cube-mesh, with overrides of its figures; on nodes of another size there is no published
//   link graph and the per-GPU figure stands, as it does for the other fabrics of kind mesh (AMD
//   Infinity Fabric, TPU ICI, Gaudi2 RoCE: uniform meshes without a ring search modelled).
//   mesh_link_bandwidth(): one NVLink's usable rate per direction, the fabric's usable per-GPU
//   figure over a GPU's links (cube-mesh: 150 GB/s x 0.8 / 6 = 20 GB/s, NCCL's SM70_NVLINK_BW); a
//   pair's link carries that times its link count.
// - mesh_rings(): the rings a group of a node's GPUs (local indices) runs on: NCCL's search
//   (nccl_rings) over the links among those GPUs, as local indices; one ring in the given order,
//   relayed where a pair has no link, when those links hold no ring through all of them.
// - mesh_ring_bandwidth(): the bus bandwidth of ring channels that each move the same bytes per
//   hop at once: channels x the smallest, over link directions, of its rate over the hops that
//   cross it (relay routes). For NCCL's rings that is channels x speed wherever a link is full.
#pragma once

#include <string_view>
#include <vector>

#include "core/hardware/cluster.h"

namespace dtsim {

inline constexpr std::string_view kCubeMeshFabric = "nvlink-hybrid-cube-mesh";

struct NvlinkPair {
  int a = 0, b = 0;
  int links = 1;
};

struct NvlinkMesh {
  int gpus = 0;
  std::vector<NvlinkPair> pairs;

  int links_between(int a, int b) const;
  int links_of(int gpu) const;
};

NvlinkMesh dgx1_v100_links();

struct NcclRings {
  std::vector<std::vector<int>> rings;  // each a directed ring through every GPU
  double speed_GBps = 0;                // per ring
  double bus_bandwidth_GBps() const { return static_cast<double>(rings.size()) * speed_GBps; }
};

NcclRings nccl_rings(const NvlinkMesh& mesh, double link_GBps);

std::vector<int> relay_route(const NvlinkMesh& mesh, int a, int b);

const NvlinkMesh* cluster_mesh(const Cluster& cluster);
BytesPerSecond mesh_link_bandwidth(const Cluster& cluster);

std::vector<std::vector<int>> mesh_rings(const NvlinkMesh& mesh, const std::vector<int>& local,
                                         BytesPerSecond link);

// `orders`: each channel's GPUs (local indices) in ring order; `closed`: whether each order's last
// GPU sends to its first (false: a channel that leaves the node there).
BytesPerSecond mesh_ring_bandwidth(const NvlinkMesh& mesh,
                                   const std::vector<std::vector<int>>& orders, bool closed,
                                   BytesPerSecond link);

}  // namespace dtsim
