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
#pragma once

#include <vector>

namespace dtsim {

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

}  // namespace dtsim
