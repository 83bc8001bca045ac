// The hardware catalog: GPUs, intra-node fabrics and networks, each figure with its source.
//
// Contract:
// - Every numeric field is in base units (FLOP/s, bytes, bytes/s, seconds) and every catalog
//   entry carries a `source` naming the spec sheet or paper it comes from; docs/hardware.md is
//   generated from this catalog (`dtsim catalog gpus --markdown`) and checked by a test.
// - Bandwidths are per direction unless a name says otherwise.
// - Efficiency factors (fraction of peak a kernel class reaches) are model parameters, not
//   vendor figures; their source is stated separately and a scenario may override them.
// - A scenario may set any field over a catalog entry's figures; the resolved cluster names the
//   fields it set (ClusterConfig), so that every display says the entry is no longer the
//   catalog's (with_overrides).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/enum_table.h"
#include "core/base/traffic_class.h"
#include "core/base/units.h"
#include "core/hardware/gemm_table.h"
#include "core/hardware/kernel_rates.h"

namespace dtsim {

struct GpuSpec {
  std::string name;                      // "H100-SXM"
  std::string vendor;                    // "NVIDIA", "AMD", "Intel", "Google", "CPU"
  std::map<DType, FlopsPerSecond> peak;  // dense tensor-core peak per dtype; absent = unsupported
  Bytes memory{0};                       // device memory capacity
  BytesPerSecond memory_bandwidth{0};    // device memory bandwidth
  std::string default_intra_node;        // fabric of this GPU's usual board ("nvswitch-nvlink4")
  std::string source;                    // where the figures come from
  // Model parameters (not vendor figures): achieved fraction of peak for large GEMMs and for
  // attention kernels, and the fraction of memory bandwidth reached by streaming kernels.
  double gemm_efficiency = 0.75;
  double attention_efficiency = 0.5;
  double memory_efficiency = 0.85;
  Seconds kernel_launch_overhead{5e-6};
  std::string efficiency_source;
  // Streaming multiprocessors, for the GEMM wave-quantization model
  // (core/collectives/cost_model.h); 0 where the model does not apply (non-NVIDIA devices, or
  // unknown).
  int sm_count = 0;

  // Power (core/report/energy.h): the board's maximum power (its TDP or power limit), what it
  // draws idle, and the host's power per node of the GPU's reference server beyond its GPUs (the
  // CPUs' TDP; NICs come from the network's entry). 0: not in the catalog (energy not modelled).
  Watts max_power{0};
  Watts idle_power{0};
  Watts host_power{0};
  std::string power_source{};

  // Measured figures (a hardware profile, core/hardware/profile.h; empty in every catalog entry).
  // Where a dtype has a GEMM table, GEMM kernels of that dtype run at the table's rate at their
  // shape instead of the roofline (core/exec/compute_cost.h).
  std::map<DType, GemmTable> gemm_table{};
  // Published rates (core/hardware/published_rates.cc; the catalog's NVIDIA data-centre entries):
  // per-shape GEMM efficiency and fused-attention efficiency per dtype. A dtype with a curve uses
  // it instead of gemm_efficiency / attention_efficiency (core/exec/compute_cost.h); a scenario
  // that sets either efficiency drops the matching curves, so that its figure is the one used.
  std::map<DType, GemmCurve> gemm_curve{};
  std::map<DType, AttentionCurve> attention_curve{};
  // Attention rate over the GEMM table's rate at the same shape, as measured; absent: the ratio
  // attention_efficiency / gemm_efficiency.
  std::optional<double> attention_factor{};
  // Kernels measured to reach less of the memory bandwidth than a streaming kernel: their
  // achieved bandwidth over a streaming kernel's on the same GPU (so a scenario's or profile's
  // memory_efficiency scales them too); 1 where nothing was measured
  // (core/hardware/published_rates.cc cites each figure).
  struct TrafficFactors {
    double attention_core_forward = 1, attention_core_backward = 1, attention_dropout_forward = 1;
    std::string source;
    double of(TrafficClass c) const {
      switch (c) {
        case TrafficClass::kAttentionCoreForward:
          return attention_core_forward;
        case TrafficClass::kAttentionCoreBackward:
          return attention_core_backward;
        case TrafficClass::kAttentionDropoutForward:
          return attention_dropout_forward;
        case TrafficClass::kStreaming:
          break;
      }
      return 1;
    }
  };
  TrafficFactors traffic{};

  // Peak for a dtype; falls back to the nearest supported format (fp8 -> bf16 -> fp16, tf32 ->
  // fp32) so that a scenario never divides by zero; `supports(dtype)` tells the truth.
  FlopsPerSecond peak_for(DType t) const;
  bool supports(DType t) const { return peak.count(t) != 0; }
};

enum class FabricKind { kSwitch, kMesh, kRing, kPcie };
inline constexpr auto kFabricKindNames =
    make_enum_table<FabricKind>({{FabricKind::kSwitch, "switch"},
                                 {FabricKind::kMesh, "mesh"},
                                 {FabricKind::kRing, "ring"},
                                 {FabricKind::kPcie, "pcie"}});
constexpr std::string_view to_string(FabricKind k) {
  return kFabricKindNames.to_string(k);
}

// The links between GPUs inside one node.
struct IntraNodeFabricSpec {
  std::string name;  // "nvswitch-nvlink4", "pcie-gen5"
  FabricKind kind = FabricKind::kSwitch;
  BytesPerSecond per_gpu_bandwidth{0};  // one GPU's injection bandwidth, per direction (line rate)
  Seconds latency{0};                   // one hop, GPU to GPU
  // Usable fraction of line rate for bulk transfers: for NVLink and PCIe, NCCL's own link figure
  // (src/graph/topo.h, topo.cc) over the line rate. Every transfer inside a node runs at
  // usable_bandwidth(); per_gpu_bandwidth stays the vendor figure.
  double protocol_efficiency = 1.0;
  std::string source;

  BytesPerSecond usable_bandwidth() const { return per_gpu_bandwidth * protocol_efficiency; }
};

enum class NetworkKind { kInfiniBand, kRoCE, kEthernet };
inline constexpr auto kNetworkKindNames =
    make_enum_table<NetworkKind>({{NetworkKind::kInfiniBand, "infiniband"},
                                  {NetworkKind::kRoCE, "roce"},
                                  {NetworkKind::kEthernet, "ethernet"}});
constexpr std::string_view to_string(NetworkKind k) {
  return kNetworkKindNames.to_string(k);
}

// A network port technology between nodes.
struct NetworkSpec {
  std::string name;  // "ib-ndr", "roce-400g", "eth-100g"
  NetworkKind kind = NetworkKind::kInfiniBand;
  BytesPerSecond port_bandwidth{0};  // line rate of one port, per direction
  Seconds latency{0};                // end-to-end small-message latency across one switch
  double protocol_efficiency = 1.0;  // usable fraction of line rate for bulk transfers
  std::string source;
  // Power (core/report/energy.h): one NIC (adapter) and one switch port (the switch's power over
  // its ports); 0 where not in the catalog.
  Watts nic_power{0};
  Watts switch_port_power{0};
  std::string power_source{};
};

const std::vector<GpuSpec>& gpu_catalog();
const std::vector<IntraNodeFabricSpec>& fabric_catalog();
const std::vector<NetworkSpec>& network_catalog();

// A catalog name as displayed once a scenario set fields over it:
// "ib-ndr with nic_bandwidth and latency set"; the name alone when none were.
std::string with_overrides(const std::string& name, const std::vector<std::string>& overridden);

// Case-insensitive look-ups; nullptr when absent.
const GpuSpec* find_gpu(std::string_view name);
const IntraNodeFabricSpec* find_fabric(std::string_view name);
const NetworkSpec* find_network(std::string_view name);

}  // namespace dtsim
