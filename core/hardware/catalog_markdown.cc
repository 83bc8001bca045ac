#include "core/hardware/catalog_markdown.h"

#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

#include "core/hardware/catalog.h"

namespace dtsim {
namespace {

// A number with at most `decimals` decimals and no trailing zeros ("989.5", "312", "0.92").
// snprintf in the "C" locale, which a library never changes, keeps the output deterministic.
std::string number(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  std::string text(buffer);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

// Table cells must not contain a bare '|' or a line break.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + c + " |";
  return out + "\n";
}

std::string header(const std::vector<std::string>& titles) {
  std::string separator = "|";
  for (size_t i = 0; i < titles.size(); ++i) separator += "---|";
  return row(titles) + separator + "\n";
}

std::string tflops(const GpuSpec& gpu, DType t) {
  if (!gpu.supports(t)) return "-";
  return number(gpu.peak.at(t).value() / 1e12, 1);
}

std::string gb_per_s(BytesPerSecond r) {
  return number(r.value() / 1e9, 3);
}

std::string microseconds(Seconds t) {
  return number(t.value() / 1e-6, 2);
}

}  // namespace

std::string render_gpu_catalog_markdown() {
  std::string out =
      "## GPUs\n\n"
      "Dense peaks (no sparsity); \"-\" marks a format the device lacks or whose peak the vendor "
      "does not publish (the simulator then falls back as GpuSpec::peak_for documents). Memory "
      "capacities are binary (GiB): vendors' \"80 GB\" of HBM is stored as 80 GiB.\n\n";
  out += header({"GPU", "Vendor", "FP32 (TFLOP/s)", "TF32 (TFLOP/s)", "FP16 (TFLOP/s)",
                 "BF16 (TFLOP/s)", "FP8 (TFLOP/s)", "Memory (GiB)", "Memory bandwidth (GB/s)",
                 "Intra-node fabric", "Source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    out += row({cell(gpu.name), cell(gpu.vendor), tflops(gpu, DType::kFp32),
                tflops(gpu, DType::kTf32), tflops(gpu, DType::kFp16), tflops(gpu, DType::kBf16),
                tflops(gpu, DType::kFp8), number(gpu.memory.value() / (1024.0 * 1024 * 1024), 2),
                gb_per_s(gpu.memory_bandwidth), cell(gpu.default_intra_node), cell(gpu.source)});
  }
  out +=
      "\nEfficiency factors are model parameters, not vendor figures: the achieved fraction of "
      "peak for large GEMMs and for attention kernels, the fraction of memory bandwidth that "
      "streaming kernels reach, and the fixed cost of one kernel launch. Where no "
      "measurement is cited, the figure is an assumed default: override it in the scenario (an "
      "inline GPU with `base:` and the field, see `cluster.gpu.base` in "
      "docs/scenario-reference.md), or measure the machine with `dtsim calibrate` and load its "
      "profile with `cluster.profile`, whose figures replace these (docs/real-mode.md, "
      "\"Profiles\"). The SM count (a vendor "
      "figure) drives GEMM tile and wave "
      "quantization (docs/models.md).\n\n";
  out += header({"GPU", "GEMM efficiency (fraction)", "Attention efficiency (fraction)",
                 "Memory efficiency (fraction)", "Kernel launch overhead (us)", "SMs",
                 "Efficiency source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    out += row({cell(gpu.name), number(gpu.gemm_efficiency, 3), number(gpu.attention_efficiency, 3),
                number(gpu.memory_efficiency, 3), microseconds(gpu.kernel_launch_overhead),
                gpu.sm_count > 0 ? std::to_string(gpu.sm_count) : std::string("-"),
                cell(gpu.efficiency_source)});
  }
  out +=
      "\n### Power\n\n"
      "The power model's figures (docs/models.md, \"Power and energy\"): each board's maximum "
      "power (TDP or power limit), its idle power, and the CPUs of its reference server, charged "
      "per node as `cluster.node_power`. \"-\": not in the catalog; set `cluster.gpu.max_power` "
      "and `cluster.gpu.idle_power` to model energy on that GPU.\n\n";
  out += header(
      {"GPU", "Maximum power (W)", "Idle power (W)", "Host power per node (W)", "Power source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    const bool known = gpu.max_power.value() > 0;
    out +=
        row({cell(gpu.name), known ? number(gpu.max_power.value(), 0) : std::string("-"),
             known ? number(gpu.idle_power.value(), 1) : std::string("-"),
             known ? number(gpu.host_power.value(), 0) : std::string("-"), cell(gpu.power_source)});
  }
  out +=
      "\n### Memory traffic of the unfused attention core\n\n"
      "Kernels of Megatron-LM's unfused attention core (`training.flash_attention: false`) reach "
      "less of the memory bandwidth than the streaming kernel of the memory-efficiency column: "
      "their traffic is priced at memory bandwidth x memory efficiency x the factor below "
      "(core/hardware/published_rates.cc, `unfused_attention_a100`; docs/models.md, \"Kernel "
      "time\"). Each factor is dtsim's traffic count for those kernels over the measured time, "
      "over the bandwidth a streaming kernel reaches on the measured device; the dropout kernel's "
      "time is the run with dropout minus the run without. A100: the FlashAttention paper's "
      "Megatron rows at 2048 tokens (16 sequences x 8 heads of dimension 64, FP16, A100 40GB at "
      "0.89 of 1555 GB/s): Q·Kᵀ, softmax and P·V forward 4.28 ms for 4429 MB (Table 18), their "
      "backward 8.86 ms for 7785 MB (Table 19), attention dropout forward 6.56 - 4.28 ms for 2684 "
      "MB (Tables 15, 18); dropout backward, 10.80 - 8.86 ms for 2684 MB (Tables 16, 19), streams "
      "at 1.00 of the streaming kernel. Relative to the streaming kernel, the factors carry over "
      "to the 80GB part and scale with a profile's or scenario's memory efficiency. GPUs not "
      "listed keep factor 1.\n\n";
  out += header({"GPU", "Attention core forward", "Attention core backward",
                 "Attention dropout forward", "Source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    if (gpu.traffic.source.empty()) continue;
    out += row({cell(gpu.name), number(gpu.traffic.attention_core_forward, 3),
                number(gpu.traffic.attention_core_backward, 3),
                number(gpu.traffic.attention_dropout_forward, 3), cell(gpu.traffic.source)});
  }
  out +=
      "\n### Published kernel rates\n\n"
      "Where a GPU has rows below for a dtype, its GEMMs and fused attention kernels of that dtype "
      "run at the rate these microbenchmarks published at their shape, interpolated between rows "
      "(core/hardware/kernel_rates.h; docs/models.md, \"Kernel time\"), instead of the "
      "efficiency above; a scenario that sets gemm_efficiency or attention_efficiency uses its "
      "figure instead. GEMM rows are interpolated over log2(FLOPs) with each row's own tile and "
      "wave quantization divided out (the wave-free efficiency column) and the target shape's put "
      "back. Attention rows are FlashAttention forward + backward, whose causal runs count half "
      "the square. docs/evidence/kernel-benchmark-sources.md gives each source's method.\n\n";
  out += header({"GPU", "dtype", "m", "n", "k", "Rate (TFLOP/s)", "Fraction of peak",
                 "Wave-free efficiency", "Source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    for (const auto& [dtype, curve] : gpu.gemm_curve) {
      for (const GemmRow& g : curve.rows()) {
        const double x = std::log2(2 * g.m * g.n * g.k);
        out += row({cell(gpu.name), std::string(to_string(dtype)), number(g.m, 0), number(g.n, 0),
                    number(g.k, 0), number(g.rate.value() / 1e12, 2),
                    number(g.rate.value() / gpu.peak_for(dtype).value(), 3),
                    number(curve.wave_free(x), 3), cell(g.source)});
      }
    }
  }
  out += "\n";
  out += header({"GPU", "dtype", "Head dimension", "Mask", "Sequence length (tokens)",
                 "Rate (TFLOP/s)", "Fraction of peak", "Source"});
  for (const GpuSpec& gpu : gpu_catalog()) {
    for (const auto& [dtype, curve] : gpu.attention_curve) {
      for (const AttentionRow& a : curve.rows()) {
        out +=
            row({cell(gpu.name), std::string(to_string(dtype)), number(a.head_dim, 0),
                 a.causal ? "causal" : "none", number(a.seq, 0), number(a.rate.value() / 1e12, 1),
                 number(a.rate.value() / gpu.peak_for(dtype).value(), 3), cell(a.source)});
      }
    }
  }
  return out;
}

std::string render_fabric_catalog_markdown() {
  std::string out =
      "## Intra-node fabrics\n\n"
      "Per-GPU bandwidth is one GPU's injection line rate per direction; on a mesh a single pair "
      "of GPUs sees less. Transfers run at the usable bandwidth, line rate x protocol efficiency "
      "(for NVLink and PCIe, the link bandwidth NCCL's topology search counts). Latency is one "
      "GPU-to-GPU hop.\n\n";
  out += header({"Fabric", "Kind", "Per-GPU bandwidth (GB/s, per direction)",
                 "Protocol efficiency (fraction)", "Usable bandwidth (GB/s)",
                 "Latency per hop (us)", "Source"});
  for (const IntraNodeFabricSpec& fabric : fabric_catalog()) {
    out += row({cell(fabric.name), std::string(to_string(fabric.kind)),
                gb_per_s(fabric.per_gpu_bandwidth), number(fabric.protocol_efficiency, 3),
                gb_per_s(fabric.usable_bandwidth()), microseconds(fabric.latency),
                cell(fabric.source)});
  }
  return out;
}

std::string render_network_catalog_markdown() {
  std::string out =
      "## Networks\n\n"
      "Line rate of one port per direction, and the usable share of it for bulk transfers "
      "(usable bandwidth = line rate x protocol efficiency).\n\n";
  out +=
      header({"Network", "Kind", "Port line rate (Gb/s)", "Port line rate (GB/s)", "Latency (us)",
              "Protocol efficiency (fraction)", "Usable bandwidth (GB/s)", "Source"});
  for (const NetworkSpec& network : network_catalog()) {
    out +=
        row({cell(network.name), std::string(to_string(network.kind)),
             number(network.port_bandwidth.value() * 8 / 1e9, 2), gb_per_s(network.port_bandwidth),
             microseconds(network.latency), number(network.protocol_efficiency, 3),
             gb_per_s(network.port_bandwidth * network.protocol_efficiency), cell(network.source)});
  }
  out +=
      "\nPower per switch port (`cluster.network.switch_port_power`; docs/models.md, \"Power and "
      "energy\"): the port's cable or transceiver, the switch's ASIC and fans left out. \"-\": "
      "not in the catalog (0 W unless the scenario sets it).\n\n";
  out += header({"Network", "Switch port power (W)", "Power source"});
  for (const NetworkSpec& network : network_catalog())
    if (network.switch_port_power.value() > 0)
      out += row({cell(network.name), number(network.switch_port_power.value(), 0),
                  cell(network.power_source)});
  return out;
}

// How to describe the systems whose shape differs from an 8-GPU board, and what the model
// approximates for each. The commands run in the doc test (tests/docs/run_doc_commands.py).
std::string render_system_notes_markdown() {
  return "## Describing rack-scale, AMD and PCIe systems\n\n"
         "dtsim's cluster is nodes of `gpus_per_node` GPUs joined by one intra-node fabric, and "
         "the nodes joined by a network.\n\n"
         "- **GB200 NVL72.** One NVLink domain of 72 GPUs is one node: `gpu: GB200-NVL72` with "
         "`gpus_per_node: 72`. Its fabric is `nvswitch-nvlink5` (`intra_node: nvswitch`), the "
         "B200 board's NVLink 5 at 900 GB/s per GPU per direction, now to any of the other 71. "
         "Each GPU has its own NIC: `nics_per_node: 72`, with `ib-ndr` for ConnectX-7 (400 Gb/s) "
         "or `ib-xdr` for a ConnectX-8 SuperNIC (800 Gb/s), `roce-800g` for 800 GbE. "
         "Approximate: the rack's NVLink Switch trays are modelled as one non-blocking switch "
         "with the per-hop latency of an 8-GPU board; NVLS (NVLink SHARP) keeps the efficiency "
         "measured on 8-GPU B200 boards; the Grace CPUs and their NVLink-C2C links are not "
         "modelled. A smaller domain (NVL36, NVL4) is the same with its own `gpus_per_node`.\n"
         "- **MI355X.** An 8-GPU OAM platform whose GPUs are joined directly, `intra_node: "
         "infinity-fabric-mi355x` (a scenario written for an NVIDIA board must name it, since "
         "`nvswitch` is an error there). Approximate: a uniform full mesh, 76.8 GB/s per pair per "
         "direction, without RCCL's own ring and channel choices; the efficiency factors beyond "
         "GEMM are assumed.\n"
         "- **PCIe boards** (A100-PCIe-40GB, A100-PCIe-80GB, H100-PCIe, L40S). The fabric is "
         "PCIe of the card's generation (`intra_node: pcie` names it). The optional NVLink bridge "
         "joins pairs only and is not modelled; describe a bridged pair as an inline fabric.\n\n"
         "Two GB200 NVL72 racks over ConnectX-8, and one MI355X platform:\n\n"
         "```sh\n"
         "# doc-test: expect \"2 nodes x 72 GB200-NVL72 = 144 GPUs\"\n"
         "# doc-test: expect \"nvswitch-nvlink5: 900.00 GB/s per GPU per direction\"\n"
         "build/cli/dtsim validate scenarios/default.yaml --set cluster.gpu=GB200-NVL72 --set "
         "cluster.nodes=2 --set cluster.gpus_per_node=72 --set cluster.network.preset=ib-xdr "
         "--set cluster.network.nics_per_node=72 --set training.global_batch_size=576\n"
         "# doc-test: expect \"infinity-fabric-mi355x: 537.60 GB/s per GPU per direction\"\n"
         "build/cli/dtsim validate scenarios/default.yaml --set cluster.gpu=MI355X --set "
         "cluster.nodes=1 --set cluster.intra_node=infinity-fabric-mi355x --set "
         "training.global_batch_size=512\n"
         "```\n";
}

std::string render_hardware_catalog_markdown() {
  std::string out =
      "# Hardware catalog\n\n"
      "This file is generated by `dtsim catalog hardware --markdown` from the catalog in "
      "core/hardware/catalog.cc and checked by a test, so edit the catalog, not this file. "
      "Bandwidths are "
      "decimal (1 GB/s = 10^9 bytes/s) and per direction; every row names its source.\n\n";
  out += render_gpu_catalog_markdown();
  out += "\n";
  out += render_fabric_catalog_markdown();
  out += "\n";
  out += render_network_catalog_markdown();
  out += "\n";
  out += render_system_notes_markdown();
  return out;
}

}  // namespace dtsim
