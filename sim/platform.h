// The cluster as a SimGrid platform, built in C++ (no XML). Internal to sim/.
//
// Contract:
// - Every GPU (global rank r) is two SimGrid hosts: `gpu-r`, which runs its kernels and owns its
//   intra-node link, and `nic-r`, its endpoint on the inter-node network. The executor sends a flow
//   between gpu hosts when both ranks share a node and between nic hosts otherwise, so intra-node
//   and inter-node routes never mix; links that both really share (a PCIe GPU link in front of
//   the NIC) appear in both routes.
// - Node: a star zone; each GPU has a split-duplex link to the node's switch at the fabric's
//   per-GPU bandwidth (NVSwitch: full bisection), half the hop latency in each direction.
// - NICs: nics_per_node split-duplex links per node at nic_bandwidth x protocol_efficiency; GPU
//   i uses NIC i x nics / gpus (GPU-NIC affinity). Half the network latency on each side.
// - Topology: star (one non-blocking switch); fat-tree (leaf zones of nodes_per_leaf nodes whose
//   aggregated uplink carries their NIC bandwidth / oversubscription; cluster.network.nodes_per_leaf,
//   by default 32 NICs per leaf as on 64-port NDR switches with half their ports down); rail-optimized (rail zone k
//   holds NIC k of every node; rails meet at a spine through uplinks / oversubscription).
// - Compute hosts run at the GPU's dense peak for the training precision; a kernel is an Exec of
//   (roofline seconds x peak) FLOPs, so its duration is exactly the roofline time.
// - One `timer` host with a million cores times delays and zero-time joins without sharing.
#pragma once

#include <simgrid/s4u.hpp>

#include <vector>

#include "core/scenario.h"

namespace dtsim::sim {

struct Platform {
  std::vector<simgrid::s4u::Host*> gpu;  // by global rank
  std::vector<simgrid::s4u::Host*> nic;  // by global rank
  simgrid::s4u::Host* timer = nullptr;
  double gpu_speed = 1;                  // FLOP/s of every gpu host
  int nodes_per_leaf = 1;
};

// Builds the platform into the current Engine (which must exist and have no platform yet).
Platform build_platform(const ClusterConfig& cluster, DType precision);

}  // namespace dtsim::sim
