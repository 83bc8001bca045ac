#include "core/collectives/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/base/error.h"

namespace dtsim {

namespace {

// Constants from src/tuning/cost_model.cc ncclTunerConstantsDefaults (same in v2.28
// src/graph/tuning.cc); see docs/evidence/nccl-tuning-model.md section 1.
constexpr std::array<double, 3> kBaseLatRing{6.6, 14.0, 8.4};
constexpr std::array<double, 3> kBaseLatTree{6.8, 14.0, 8.4};
constexpr std::array<double, 3> kHwLatNvlinkRing{0.6, 1.9, 3.4};
constexpr std::array<double, 3> kHwLatNvlinkTree{0.6, 1.25, 4.0};
constexpr std::array<double, 3> kHwLatPciRing{1.0, 2.5, 5.7};
constexpr std::array<double, 3> kHwLatPciTree{1.0, 1.9, 4.0};
constexpr std::array<double, 3> kHwLatNetRing{2.7, 4.0, 14.0};
constexpr std::array<double, 3> kHwLatNetTree{5.0, 8.5, 14.0};
constexpr double kNvlsLatNvlink = 25, kNvlsTreeLatNet = 20.9;
constexpr double kBaseLatPat = 8.0;           // baseLat[PAT], every protocol
constexpr double kNetOverheadIntel_us = 1.0;  // getNetOverhead, Intel/ARM hosts

// treeCorrectionFactor[protocol][log2(bytes / 64)] for indices below 23.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection{{
    {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1},
    {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

int log2i(double x) {
  return x < 1 ? 0 : static_cast<int>(std::floor(std::log2(x)));
}

// Highest ladder speed at or below `limit` (src/graph/search.cc speed arrays).
double ladder(const std::vector<double>& speeds, double limit) {
  for (double s : speeds)
    if (s <= limit + 1e-9) return s;
  return speeds.back();
}

}  // namespace

bool nccl_runs_collectives(const Cluster& cluster) {
  return cluster.gpu.vendor.empty() || cluster.gpu.vendor == "NVIDIA";
}

NcclSystem nccl_system(const Cluster& c, int ranks) {
  if (!nccl_runs_collectives(c))
    throw InputError(Diagnostic{SourceLocation{}, "cluster.gpu",
                                "NCCL's model covers NVIDIA GPUs only, not " + c.gpu.name +
                                    " (vendor " + c.gpu.vendor + ")"});
  NcclSystem s;
  s.ranks = ranks;
  s.nodes = std::max(1, (ranks + c.gpus_per_node - 1) / c.gpus_per_node);
  const std::string& fabric = c.intra_node.name;
  const bool hopper = fabric == "nvswitch-nvlink4";
  const bool ampere = fabric == "nvswitch-nvlink3";
  if (!hopper && !ampere)
    throw InputError(Diagnostic{
        SourceLocation{}, "cluster.intra_node",
        "NCCL's topology search is modelled for NVSwitch A100 and H100/H200 nodes only, not " +
            fabric});
  s.compute_capability = hopper ? 90 : 80;
  // NVLink bandwidth NCCL counts per GPU (src/graph/topo.h): 18 x 20.6 on SM90, 12 x 20 on SM80.
  const double nvlink_total = hopper ? 18 * 20.6 : 12 * 20.0;
  const std::vector<double> intra =
      hopper ? std::vector<double>{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3}
             : std::vector<double>{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  const std::vector<double> inter =
      hopper ? std::vector<double>{48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3}
             : std::vector<double>{48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  if (s.nodes == 1) {
    // Six channels at the fastest speed that fits, doubled with half the bandwidth
    // (ncclTopoDupChannels): 12 x 30 on H100, 12 x 20 on A100.
    const double bw = ladder(intra, nvlink_total / 6) / 2;
    s.ring = s.tree = NcclGraph{12, bw, bw};
    // NVLS: 8 channels; 9 x bw must fit (the head GPU carries its channel twice); the second pass
    // lifts bwInter up to twice bwIntra.
    if (hopper) {
      const double b = ladder(intra, nvlink_total / 9);
      s.nvls = NcclGraph{8, b, ladder(intra, 2 * b)};
    }
    return s;
  }
  // Across nodes a channel is limited by its NIC and the GPU's PCIe link (Gen5 x16: 48 GB/s on
  // H100, Gen4 x16: 24 on A100; src/graph/topo.cc), one channel per NIC. NCCL's search sees the
  // NIC's line rate, not the usable rate the other models use.
  const double nic = c.network.nic_bandwidth.value() / 1e9;
  const double pcie = hopper ? 48 : 24;
  const double bw = ladder(inter, std::min(nic, pcie));
  const int channels = c.nics();
  s.ring = NcclGraph{channels, bw, bw};
  s.tree = NcclGraph{channels, ladder(inter, std::min(2 * bw, 48.0)), bw};  // pass 2 lifts bwIntra
  // NCCL turns NVLS off where a node holds one GPU of the communicator (src/transport/nvls.cc,
  // ncclNvlsInit: gpuCount < 2).
  if (hopper && s.ranks >= 2 * s.nodes) s.nvls = NcclGraph{8, ladder(intra, nvlink_total / 9), bw};
  return s;
}

namespace {

// llMaxBws: by GPU on one node, else by CPU (the Intel row).
double ll_max_GBps(const NcclSystem& s) {
  const int col = s.nodes <= 2 ? s.nodes - 1 : 2;  // N1 / N2 / N4 columns
  return s.nodes == 1 ? (s.compute_capability >= 90 ? 141 : 87.7)
                      : std::array<double, 3>{39, 39, 20.4}[static_cast<size_t>(col)];
}

double ring_ll128_max_GBps(const NcclSystem& s) {
  return s.compute_capability >= 90 ? 36.7 : 20;
}

}  // namespace

double nccl_base_latency_us(NcclAlgorithm algorithm, NcclProtocol protocol) {
  const auto p = static_cast<size_t>(protocol);
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return kBaseLatRing[p];
    case NcclAlgorithm::kTree:
      return kBaseLatTree[p];
    case NcclAlgorithm::kNvls:
    case NcclAlgorithm::kNvlsTree:
      return 0;
    case NcclAlgorithm::kPat:
      return kBaseLatPat;
  }
  return 0;
}

double nccl_hw_latency_us(NcclAlgorithm algorithm, NcclProtocol protocol, NcclLink link) {
  const auto p = static_cast<size_t>(protocol);
  const bool simple = protocol == NcclProtocol::kSimple;
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return (link == NcclLink::kNvlink ? kHwLatNvlinkRing
              : link == NcclLink::kPci  ? kHwLatPciRing
                                        : kHwLatNetRing)[p];
    case NcclAlgorithm::kTree:
      return (link == NcclLink::kNvlink ? kHwLatNvlinkTree
              : link == NcclLink::kPci  ? kHwLatPciTree
                                        : kHwLatNetTree)[p];
    case NcclAlgorithm::kNvls:
      return simple && link == NcclLink::kNvlink ? kNvlsLatNvlink : 0;
    case NcclAlgorithm::kNvlsTree:
      return simple && link == NcclLink::kNet ? kNvlsTreeLatNet : 0;
    case NcclAlgorithm::kPat:
      return !simple ? 0 : link == NcclLink::kNet ? 14.0 : 4.0;
  }
  return 0;
}

double nccl_tree_bandwidth_factor(int nodes, NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return 1 / 3.8;
    case NcclProtocol::kLL128:
      return nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    case NcclProtocol::kSimple:
      return 1;
  }
  return 1;
}

double nccl_tree_bus_bandwidth_cap_GBps(const NcclSystem& s, NcclProtocol protocol) {
  const bool hopper = s.compute_capability >= 90;
  const int col = s.nodes <= 2 ? s.nodes - 1 : 2;  // N1 / N2 / N4 columns
  const double tree_max = hopper ? std::array<double, 3>{38.7, 41.4, 36.0}[col]
                                 : std::array<double, 3>{24.0, 23.6, 17.8}[col];
  const double simple = s.tree.channels * tree_max;
  switch (protocol) {
    case NcclProtocol::kLL:
      return std::min(simple * nccl_tree_bandwidth_factor(s.nodes, protocol), ll_max_GBps(s));
    case NcclProtocol::kLL128: {
      const double ll128_max = hopper ? std::array<double, 3>{36.7, 36.7, 29.0}[col] : 20;
      return std::min(simple * nccl_tree_bandwidth_factor(s.nodes, protocol),
                      s.tree.channels * ll128_max);
    }
    case NcclProtocol::kSimple:
      return simple;
  }
  return simple;
}

double nccl_tree_correction_factor(NcclProtocol protocol, double bytes) {
  const int index = log2i(bytes / 64);
  return index < 23 ? kTreeCorrection[static_cast<size_t>(protocol)][static_cast<size_t>(index)]
                    : 1;
}

double nccl_nvls_tree_bus_bandwidth_cap_GBps(const NcclSystem& s) {
  if (!s.nvls || s.nodes < 2) return 0;
  return s.nvls->channels * (s.nodes == 2 ? 57.7 : 45.5);
}

double nccl_collnet_direct_latency_us(int ppn) {
  const double local = ppn - 1;
  const double inter = ppn == 1 ? kHwLatNetTree[static_cast<size_t>(NcclProtocol::kSimple)] : 31;
  return 2 * (std::min(1.0, local) * 3.7 + local * 0.4) + inter;
}

double nccl_nvls_latency_us() {
  return kNvlsLatNvlink;
}

double nccl_ring_bus_bandwidth_cap_GBps(const NcclSystem& s, NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return ll_max_GBps(s);
    case NcclProtocol::kLL128:
      return s.ring.channels * ring_ll128_max_GBps(s);
    case NcclProtocol::kSimple:
      return std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::infinity();
}

std::vector<NcclEstimate> nccl_all_reduce_estimates(const NcclSystem& s, double bytes) {
  const double n = s.ranks, nodes = s.nodes, ppn = n / nodes;
  const double nsteps = 2 * (n - 1), inter_steps = nodes > 1 ? 2 * (nodes - 1) : 0;
  const bool hopper = s.compute_capability >= 90;
  const auto& intra_ring = s.nvlink_intra ? kHwLatNvlinkRing : kHwLatPciRing;
  const auto& intra_tree = s.nvlink_intra ? kHwLatNvlinkTree : kHwLatPciTree;
  std::vector<NcclEstimate> out;
  auto finish = [&](NcclEstimate e) {
    e.time_us = e.latency_us + bytes / (1000 * e.algbw_GBps);
    out.push_back(e);
  };
  for (int p = 0; p < 3; ++p) {
    const auto proto = static_cast<NcclProtocol>(p);
    // Ring (src/tuning/ring.cc).
    {
      const double bw = (s.nodes <= 2 ? s.ring.bw_intra_GBps : s.ring.bw_inter_GBps);
      double bus = s.ring.channels * bw;
      if (proto == NcclProtocol::kLL) bus = 0.5 * bus;
      if (proto == NcclProtocol::kLL128) bus = 0.92 * bus;
      bus = std::min(bus, nccl_ring_bus_bandwidth_cap_GBps(s, proto));
      double intra_lat = intra_ring[static_cast<size_t>(p)];
      if (s.nodes > 1)
        intra_lat =
            std::max(intra_lat, kNetOverheadIntel_us * (proto == NcclProtocol::kSimple ? 3 : 1));
      const double inter_lat =
          ppn == 1 ? kHwLatNetTree[static_cast<size_t>(p)] : kHwLatNetRing[static_cast<size_t>(p)];
      double lat = kBaseLatRing[static_cast<size_t>(p)] + (nsteps - inter_steps) * intra_lat +
                   inter_steps * inter_lat;
      // The ring "plateau": multi-node Simple all-reduces whose per-channel chunks reach 64 B
      // (runtime channels are twice the graph's).
      if (proto == NcclProtocol::kSimple && s.nodes > 1 &&
          bytes / (2.0 * s.ring.channels * n) >= 64)
        lat *= hopper || s.compute_capability >= 80 ? 1.4 : 1.9;
      finish(NcclEstimate{NcclAlgorithm::kRing, proto, lat, bus * n / nsteps, 0});
    }
    // Tree (src/tuning/tree.cc).
    {
      double bus = s.tree.channels * std::min(s.tree.bw_intra_GBps, s.tree.bw_inter_GBps);
      bus = std::min(0.92 * bus * nccl_tree_bandwidth_factor(s.nodes, proto),
                     nccl_tree_bus_bandwidth_cap_GBps(s, proto));
      const double algbw = 0.5 * bus * nccl_tree_correction_factor(proto, bytes);
      const double lat = kBaseLatTree[static_cast<size_t>(p)] +
                         2 * ((ppn - 1) * intra_tree[static_cast<size_t>(p)] +
                              log2i(nodes) * kHwLatNetTree[static_cast<size_t>(p)]);
      finish(NcclEstimate{NcclAlgorithm::kTree, proto, lat, algbw, 0});
    }
    // NVLS on one node, NVLS-tree across nodes: Simple only (src/tuning/nvls.cc).
    if (proto == NcclProtocol::kSimple && s.nvls && s.nvls->channels >= 2) {
      const NcclGraph& g = *s.nvls;
      const double intra_bw = g.bw_intra_GBps * 0.85 * (g.channels - 1) / g.channels * 2;
      if (s.nodes == 1) {
        const double bw = std::min(intra_bw, g.bw_inter_GBps);
        finish(NcclEstimate{NcclAlgorithm::kNvls, proto, kNvlsLatNvlink,
                            g.channels * bw * n / nsteps, 0});
      } else {
        const double inter_bw = g.bw_inter_GBps * (s.nodes <= 2 ? 2 : 1);
        const double bw =
            std::min({intra_bw, inter_bw, nccl_nvls_tree_bus_bandwidth_cap_GBps(s) / g.channels});
        const double lat = kNvlsLatNvlink + 2 * log2i(nodes) * kNvlsTreeLatNet;
        finish(NcclEstimate{NcclAlgorithm::kNvlsTree, proto, lat, g.channels * bw * n / nsteps, 0});
      }
    }
  }
  return out;
}

std::vector<NcclEstimate> nccl_gather_scatter_estimates(const NcclSystem& s, double bytes) {
  const double n = s.ranks, nodes = s.nodes, ppn = n / nodes;
  const double nsteps = n - 1, inter_steps = nodes > 1 ? nodes - 1 : 0;
  const auto& intra_ring = s.nvlink_intra ? kHwLatNvlinkRing : kHwLatPciRing;
  std::vector<NcclEstimate> out;
  auto finish = [&](NcclEstimate e) {
    e.time_us = e.latency_us + bytes / (1000 * e.algbw_GBps);
    out.push_back(e);
  };
  for (int p = 0; p < 3; ++p) {
    const auto proto = static_cast<NcclProtocol>(p);
    const auto pi = static_cast<size_t>(p);
    {  // Ring: the all-reduce's bus bandwidth and caps, n - 1 steps.
      const double bw = (s.nodes <= 2 ? s.ring.bw_intra_GBps : s.ring.bw_inter_GBps);
      double bus = s.ring.channels * bw;
      if (proto == NcclProtocol::kLL) bus = 0.5 * bus;
      if (proto == NcclProtocol::kLL128) bus = 0.92 * bus;
      bus = std::min(bus, nccl_ring_bus_bandwidth_cap_GBps(s, proto));
      double intra_lat = intra_ring[pi];
      if (s.nodes > 1)
        intra_lat =
            std::max(intra_lat, kNetOverheadIntel_us * (proto == NcclProtocol::kSimple ? 3 : 1));
      const double inter_lat = ppn == 1 ? kHwLatNetTree[pi] : kHwLatNetRing[pi];
      const double lat =
          kBaseLatRing[pi] + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      finish(NcclEstimate{NcclAlgorithm::kRing, proto, lat, bus * n / nsteps, 0});
    }
    // PAT at one GPU per node (Simple only; the tree graph, src/init.cc graphs[NCCL_ALGO_PAT]).
    if (proto == NcclProtocol::kSimple && ppn == 1 && s.nodes > 1) {
      const double bw = s.nodes <= 2 ? s.tree.bw_intra_GBps : s.tree.bw_inter_GBps;
      const double lat = kBaseLatPat + log2i(nodes) * (kHwLatNetTree[pi] / 3.5) + n * 2.8;
      finish(NcclEstimate{NcclAlgorithm::kPat, proto, lat, s.tree.channels * bw * 0.75, 0});
    }
    // NVLS inside one node (Simple only).
    if (proto == NcclProtocol::kSimple && s.nvls && s.nvls->channels >= 2 && s.nodes == 1 &&
        ppn > 1) {
      const NcclGraph& g = *s.nvls;
      const double intra_bw =
          g.bw_intra_GBps * 0.85 * (g.channels - 1) / g.channels * (ppn - 1) / ppn;
      const double bw = std::min(intra_bw, g.bw_inter_GBps);
      finish(NcclEstimate{NcclAlgorithm::kNvls, proto, kNvlsLatNvlink, g.channels * bw, 0});
    }
  }
  return out;
}

NcclEstimate nccl_gather_scatter_choice(const NcclSystem& s, double bytes) {
  const auto all = nccl_gather_scatter_estimates(s, bytes);
  NcclEstimate best = all.front();
  for (const auto& e : all)
    if (e.time_us < best.time_us) best = e;
  return best;
}

NcclEstimate nccl_all_reduce_choice(const NcclSystem& s, double bytes) {
  const auto all = nccl_all_reduce_estimates(s, bytes);
  NcclEstimate best = all.front();
  for (const auto& e : all)
    if (e.time_us < best.time_us) best = e;
  return best;
}

}  // namespace dtsim
