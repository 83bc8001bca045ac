// The hardware catalog against the published figures in docs/reference.md and the vendor
// datasheets named in each entry's source, plus the look-up, fallback and rendering contracts.
#include "core/hardware/catalog.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <sstream>
#include <string>

#include "core/hardware/catalog_markdown.h"

namespace dtsim {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const GpuSpec& gpu(std::string_view name) {
  const GpuSpec* spec = find_gpu(name);
  EXPECT_NE(spec, nullptr) << name;
  static const GpuSpec kMissing{};
  return spec ? *spec : kMissing;
}

double peak_tflops(std::string_view name, DType t) {
  return gpu(name).peak_for(t).value() / kTera;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TEST(HardwareCatalog, GpuPeaksMatchReference) {
  // docs/reference.md "Hardware": dense BF16/FP16 peaks.
  EXPECT_DOUBLE_EQ(peak_tflops("V100-SXM2-32GB", DType::kFp16), 125);
  EXPECT_DOUBLE_EQ(peak_tflops("A100-SXM-40GB", DType::kBf16), 312);
  EXPECT_DOUBLE_EQ(peak_tflops("A100-SXM-80GB", DType::kBf16), 312);
  EXPECT_DOUBLE_EQ(peak_tflops("A100-SXM-80GB", DType::kFp32), 19.5);
  EXPECT_DOUBLE_EQ(peak_tflops("A100-SXM-80GB", DType::kTf32), 156);
  EXPECT_NEAR(peak_tflops("H100-SXM", DType::kBf16), 989, 1);
  EXPECT_NEAR(peak_tflops("H100-SXM", DType::kFp8), 1979, 1);
  EXPECT_NEAR(peak_tflops("H200-SXM", DType::kBf16), 989, 1);
  EXPECT_NEAR(peak_tflops("MI250X", DType::kBf16), 383, 1);
  EXPECT_NEAR(peak_tflops("MI300X", DType::kBf16), 1307, 1);
  EXPECT_DOUBLE_EQ(peak_tflops("Gaudi2", DType::kBf16), 432);
  EXPECT_DOUBLE_EQ(peak_tflops("TPU-v4", DType::kBf16), 275);
  EXPECT_DOUBLE_EQ(peak_tflops("TPU-v5p", DType::kBf16), 459);
}

// The rows added for PCIe boards, Ada, Blackwell and CDNA 4, against the datasheets their source
// names: dense peaks (half of NVIDIA's sparsity figures), memory and its bandwidth.
TEST(HardwareCatalog, NewerGpusMatchTheirDatasheets) {
  for (const char* a100 : {"A100-PCIe-40GB", "A100-PCIe-80GB"}) {
    EXPECT_DOUBLE_EQ(peak_tflops(a100, DType::kBf16), 312) << a100;
    EXPECT_FALSE(gpu(a100).supports(DType::kFp8)) << a100;
    EXPECT_EQ(gpu(a100).default_intra_node, "pcie-gen4") << a100;
  }
  EXPECT_DOUBLE_EQ(gpu("A100-PCIe-40GB").memory_bandwidth.value(), 1555 * kGiga);
  EXPECT_DOUBLE_EQ(gpu("A100-PCIe-80GB").memory_bandwidth.value(), 1935 * kGiga);
  EXPECT_DOUBLE_EQ(gpu("A100-PCIe-80GB").memory.value(), 80 * kGiB);

  // H100 PCIe datasheet: 1,513 (BF16) and 3,026 (FP8) TFLOP/s with sparsity; 51 FP32; 2 TB/s.
  EXPECT_DOUBLE_EQ(peak_tflops("H100-PCIe", DType::kBf16), 1513.0 / 2);
  EXPECT_DOUBLE_EQ(peak_tflops("H100-PCIe", DType::kFp8), 3026.0 / 2);
  EXPECT_DOUBLE_EQ(peak_tflops("H100-PCIe", DType::kTf32), 756.0 / 2);
  EXPECT_DOUBLE_EQ(peak_tflops("H100-PCIe", DType::kFp32), 51);
  EXPECT_DOUBLE_EQ(gpu("H100-PCIe").memory_bandwidth.value(), 2 * kTera);
  EXPECT_EQ(gpu("H100-PCIe").sm_count, 114);

  // L40S datasheet, dense column: BF16 362.05 (its sparsity column prints 733), FP8 733 (1,466
  // with sparsity); 48 GB GDDR6 at 864 GB/s.
  EXPECT_DOUBLE_EQ(peak_tflops("L40S", DType::kBf16), 362.05);
  EXPECT_DOUBLE_EQ(peak_tflops("L40S", DType::kFp8), 1466.0 / 2);
  EXPECT_DOUBLE_EQ(gpu("L40S").memory.value(), 48 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("L40S").memory_bandwidth.value(), 864 * kGiga);

  // DGX B200: 72 PFLOP/s FP8 with sparsity over 8 GPUs, 1,440 GB and 64 TB/s HBM3e.
  EXPECT_DOUBLE_EQ(peak_tflops("B200-SXM", DType::kFp8), 72000.0 / 8 / 2);
  EXPECT_DOUBLE_EQ(peak_tflops("B200-SXM", DType::kBf16), 2250);
  EXPECT_DOUBLE_EQ(gpu("B200-SXM").memory.value(), 1440.0 / 8 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("B200-SXM").memory_bandwidth.value(), 64 * kTera / 8);
  EXPECT_EQ(gpu("B200-SXM").default_intra_node, "nvswitch-nvlink5");

  // GB200 NVL72, per rack of 72: 360 PFLOP/s BF16 and 720 FP8 with sparsity; 576 TB/s.
  EXPECT_DOUBLE_EQ(peak_tflops("GB200-NVL72", DType::kBf16), 360000.0 / 72 / 2);
  EXPECT_DOUBLE_EQ(peak_tflops("GB200-NVL72", DType::kFp8), 720000.0 / 72 / 2);
  EXPECT_DOUBLE_EQ(gpu("GB200-NVL72").memory_bandwidth.value(), 576 * kTera / 72);
  EXPECT_EQ(gpu("GB200-NVL72").default_intra_node, "nvswitch-nvlink5");

  // MI355X: 256 CUs x 2.4 GHz x 4096 (FP16) and 8192 (FP8) FLOP per clock; 288 GB, 8 TB/s.
  EXPECT_NEAR(peak_tflops("MI355X", DType::kBf16), 256 * 2.4e9 * 4096 / kTera, 0.1);
  EXPECT_NEAR(peak_tflops("MI355X", DType::kFp8), 256 * 2.4e9 * 8192 / kTera, 0.1);
  EXPECT_FALSE(gpu("MI355X").supports(DType::kTf32));
  EXPECT_DOUBLE_EQ(gpu("MI355X").memory.value(), 288 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("MI355X").memory_bandwidth.value(), 8 * kTera);
}

TEST(HardwareCatalog, NewerFabricsAndNetworksMatchTheirDatasheets) {
  // GB200 NVL72: 130 TB/s of NVLink over 72 GPUs, bidirectional, is NVLink 5's 900 GB/s per
  // direction per GPU, so the rack's GPUs use the B200 board's fabric.
  const IntraNodeFabricSpec* nvlink5 = find_fabric("nvswitch-nvlink5");
  EXPECT_NEAR(nvlink5->per_gpu_bandwidth.value() * 2 * 72, 130 * kTera, 0.5 * kTera);
  EXPECT_NE(nvlink5->source.find("NVL72"), std::string::npos);
  // MI355X: 7 Infinity Fabric links at 153.6 GB/s bidirectional.
  const IntraNodeFabricSpec* mi355x = find_fabric("infinity-fabric-mi355x");
  ASSERT_NE(mi355x, nullptr);
  EXPECT_DOUBLE_EQ(mi355x->per_gpu_bandwidth.value(), 7 * 153.6 / 2 * kGiga);
  EXPECT_EQ(mi355x->kind, FabricKind::kMesh);
  // ConnectX-8 SuperNIC: 800 Gb/s, InfiniBand XDR or Ethernet.
  EXPECT_DOUBLE_EQ(find_network("roce-800g")->port_bandwidth.value(), 100 * kGiga);
  EXPECT_NE(find_network("ib-xdr")->source.find("ConnectX-8"), std::string::npos);
  EXPECT_NE(find_network("ib-ndr")->source.find("ConnectX-7"), std::string::npos);
}

TEST(HardwareCatalog, H200ComputeEqualsH100) {
  const GpuSpec& h100 = gpu("H100-SXM");
  const GpuSpec& h200 = gpu("H200-SXM");
  EXPECT_EQ(h100.peak, h200.peak);
  EXPECT_GT(h200.memory, h100.memory);
}

TEST(HardwareCatalog, GpuMemoryMatchesReference) {
  EXPECT_DOUBLE_EQ(gpu("V100-SXM2-32GB").memory_bandwidth.value(), 900 * kGiga);
  EXPECT_DOUBLE_EQ(gpu("A100-SXM-40GB").memory_bandwidth.value(), 1555 * kGiga);
  EXPECT_DOUBLE_EQ(gpu("A100-SXM-80GB").memory_bandwidth.value(), 2039 * kGiga);
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").memory_bandwidth.value(), 3.35 * kTera);
  EXPECT_DOUBLE_EQ(gpu("H200-SXM").memory_bandwidth.value(), 4.8 * kTera);
  EXPECT_NEAR(gpu("MI250X").memory_bandwidth.value(), 3.2 * kTera, 0.1 * kTera);
  EXPECT_DOUBLE_EQ(gpu("MI300X").memory_bandwidth.value(), 5.3 * kTera);
  EXPECT_NEAR(gpu("Gaudi2").memory_bandwidth.value(), 2.46 * kTera, 0.01 * kTera);
  EXPECT_DOUBLE_EQ(gpu("TPU-v4").memory_bandwidth.value(), 1.2 * kTera);
  EXPECT_DOUBLE_EQ(gpu("TPU-v5p").memory_bandwidth.value(), 2.765 * kTera);

  // HBM capacities are stored in GiB (see the note at the top of core/hardware/catalog.cc).
  EXPECT_DOUBLE_EQ(gpu("A100-SXM-40GB").memory.value(), 40 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("A100-SXM-80GB").memory.value(), 80 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("H100-SXM").memory.value(), 80 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("H200-SXM").memory.value(), 141 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("MI300X").memory.value(), 192 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("TPU-v4").memory.value(), 32 * kGiB);
  EXPECT_DOUBLE_EQ(gpu("TPU-v5p").memory.value(), 95 * kGiB);
}

TEST(HardwareCatalog, EveryGpuIsComplete) {
  EXPECT_EQ(gpu_catalog().size(), 18u);
  for (const GpuSpec& g : gpu_catalog()) {
    SCOPED_TRACE(g.name);
    EXPECT_FALSE(g.vendor.empty());
    EXPECT_FALSE(g.source.empty());
    EXPECT_FALSE(g.efficiency_source.empty());
    EXPECT_FALSE(g.peak.empty());
    for (const auto& [dtype, rate] : g.peak) EXPECT_GT(rate.value(), 0) << to_string(dtype);
    EXPECT_GT(g.memory.value(), 0);
    EXPECT_GT(g.memory_bandwidth.value(), 0);
    EXPECT_NE(find_fabric(g.default_intra_node), nullptr) << g.default_intra_node;
    for (double e : {g.gemm_efficiency, g.attention_efficiency, g.memory_efficiency}) {
      EXPECT_GT(e, 0);
      EXPECT_LE(e, 1);
    }
    EXPECT_GT(g.kernel_launch_overhead.value(), 0);
    // Lower-precision formats are never slower than higher-precision ones on one device.
    if (g.supports(DType::kFp8) && g.supports(DType::kBf16)) {
      EXPECT_GE(g.peak_for(DType::kFp8), g.peak_for(DType::kBf16));
    }
    if (g.supports(DType::kTf32) && g.supports(DType::kFp32)) {
      EXPECT_GE(g.peak_for(DType::kTf32), g.peak_for(DType::kFp32));
    }
  }
}

TEST(HardwareCatalog, UncalibratedEfficienciesSaySo) {
  // An entry that keeps all of the header's defaults must say that they are assumed.
  const GpuSpec defaults{};
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.gemm_efficiency == defaults.gemm_efficiency &&
        g.memory_efficiency == defaults.memory_efficiency) {
      EXPECT_NE(g.efficiency_source.find("assumed default, not yet calibrated"), std::string::npos)
          << g.name;
    }
  }
}

TEST(HardwareCatalog, PeakForFallsBackToNearestFormat) {
  const GpuSpec& v100 = gpu("V100-SXM2-32GB");
  EXPECT_FALSE(v100.supports(DType::kBf16));
  EXPECT_FALSE(v100.supports(DType::kFp8));
  EXPECT_FALSE(v100.supports(DType::kTf32));
  EXPECT_DOUBLE_EQ(v100.peak_for(DType::kBf16).value(), 125 * kTera);   // bf16 -> fp16
  EXPECT_DOUBLE_EQ(v100.peak_for(DType::kFp8).value(), 125 * kTera);    // fp8 -> bf16 -> fp16
  EXPECT_DOUBLE_EQ(v100.peak_for(DType::kTf32).value(), 15.7 * kTera);  // tf32 -> fp32

  const GpuSpec& a100 = gpu("A100-SXM-80GB");
  EXPECT_FALSE(a100.supports(DType::kFp8));
  EXPECT_DOUBLE_EQ(a100.peak_for(DType::kFp8).value(), 312 * kTera);  // fp8 -> bf16

  const GpuSpec& gaudi2 = gpu("Gaudi2");
  EXPECT_DOUBLE_EQ(gaudi2.peak_for(DType::kFp16).value(), 432 * kTera);  // fp16 -> bf16
  // No fp32 or tf32 figure: the lowest published peak, the conservative choice.
  EXPECT_DOUBLE_EQ(gaudi2.peak_for(DType::kFp32).value(), 432 * kTera);
  EXPECT_DOUBLE_EQ(gaudi2.peak_for(DType::kTf32).value(), 432 * kTera);

  EXPECT_DOUBLE_EQ(gpu("TPU-v4").peak_for(DType::kFp32).value(), 275 * kTera);

  GpuSpec fp32_only;
  fp32_only.peak = {{DType::kFp32, FlopsPerSecond(10 * kTera)}};
  for (DType t : {DType::kFp8, DType::kBf16, DType::kFp16, DType::kTf32})
    EXPECT_DOUBLE_EQ(fp32_only.peak_for(t).value(), 10 * kTera) << to_string(t);

  GpuSpec no_peaks;
  EXPECT_DOUBLE_EQ(no_peaks.peak_for(DType::kBf16).value(), 0);
}

TEST(HardwareCatalog, FabricsMatchReference) {
  // docs/reference.md: A100 12 NVLinks x 25 GB/s, H100/H200 18 NVLinks = 450 GB/s per direction.
  EXPECT_DOUBLE_EQ(find_fabric("nvswitch-nvlink3")->per_gpu_bandwidth.value(), 300 * kGiga);
  EXPECT_DOUBLE_EQ(find_fabric("nvswitch-nvlink4")->per_gpu_bandwidth.value(), 450 * kGiga);
  EXPECT_DOUBLE_EQ(find_fabric("nvswitch-nvlink5")->per_gpu_bandwidth.value(), 900 * kGiga);
  EXPECT_DOUBLE_EQ(find_fabric("nvswitch-nvlink2")->per_gpu_bandwidth.value(), 150 * kGiga);
  EXPECT_DOUBLE_EQ(find_fabric("nvlink-hybrid-cube-mesh")->per_gpu_bandwidth.value(), 150 * kGiga);
  EXPECT_EQ(find_fabric("nvlink-hybrid-cube-mesh")->kind, FabricKind::kMesh);
  // NCCL per-step LL latencies: NVLink 0.6 us, PCIe 1.0 us.
  EXPECT_DOUBLE_EQ(find_fabric("nvswitch-nvlink4")->latency.value(), 0.6e-6);
  EXPECT_DOUBLE_EQ(find_fabric("pcie-gen4")->latency.value(), 1.0e-6);
  EXPECT_EQ(find_fabric("pcie-gen5")->kind, FabricKind::kPcie);
  // PCIe x16 per direction, 128b/130b: 15.75, 31.5, 63 GB/s.
  EXPECT_NEAR(find_fabric("pcie-gen3")->per_gpu_bandwidth.value(), 15.75 * kGiga, 1e6);
  EXPECT_NEAR(find_fabric("pcie-gen4")->per_gpu_bandwidth.value(), 31.5 * kGiga, 1e6);
  EXPECT_NEAR(find_fabric("pcie-gen5")->per_gpu_bandwidth.value(), 63.0 * kGiga, 1e6);
  // TPU v5p: 1200 GB/s bidirectional ICI.
  EXPECT_DOUBLE_EQ(find_fabric("ici-v5p")->per_gpu_bandwidth.value(), 600 * kGiga);
}

TEST(HardwareCatalog, FabricUsableBandwidthIsNcclsLinkFigure) {
  // NCCL src/graph/topo.h: NVLink 20 GB/s per link on SM70 and SM80, 20.6 on SM90, 40.1 on SM100;
  // topo.cc kvDictPciGen: x16 PCIe Gen3 12, Gen4 24, Gen5 48 GB/s.
  auto usable = [](const char* name) { return find_fabric(name)->usable_bandwidth().value(); };
  EXPECT_NEAR(usable("nvswitch-nvlink2"), 6 * 20 * kGiga, 1e3);
  EXPECT_NEAR(usable("nvlink-hybrid-cube-mesh"), 6 * 20 * kGiga, 1e3);
  EXPECT_NEAR(usable("nvswitch-nvlink3"), 12 * 20 * kGiga, 1e3);
  EXPECT_NEAR(usable("nvswitch-nvlink4"), 18 * 20.6 * kGiga, 1e3);
  EXPECT_NEAR(usable("nvswitch-nvlink5"), 18 * 40.1 * kGiga, 1e3);
  EXPECT_NEAR(usable("pcie-gen3"), 12 * kGiga, 1e3);
  EXPECT_NEAR(usable("pcie-gen4"), 24 * kGiga, 1e3);
  EXPECT_NEAR(usable("pcie-gen5"), 48 * kGiga, 1e3);
  for (const IntraNodeFabricSpec& f : fabric_catalog()) {
    SCOPED_TRACE(f.name);
    EXPECT_GT(f.protocol_efficiency, 0);
    EXPECT_LE(f.protocol_efficiency, 1);
  }
}

TEST(HardwareCatalog, EveryFabricIsComplete) {
  for (const IntraNodeFabricSpec& f : fabric_catalog()) {
    SCOPED_TRACE(f.name);
    EXPECT_FALSE(f.source.empty());
    EXPECT_GT(f.per_gpu_bandwidth.value(), 0);
    EXPECT_GT(f.latency.value(), 0);
  }
}

TEST(HardwareCatalog, NetworksMatchReference) {
  EXPECT_DOUBLE_EQ(find_network("ib-edr")->port_bandwidth.value(), 12.5 * kGiga);
  EXPECT_DOUBLE_EQ(find_network("ib-hdr")->port_bandwidth.value(), 25 * kGiga);
  EXPECT_DOUBLE_EQ(find_network("ib-ndr")->port_bandwidth.value(), 50 * kGiga);  // 400 Gb/s
  EXPECT_DOUBLE_EQ(find_network("ib-xdr")->port_bandwidth.value(), 100 * kGiga);
  EXPECT_DOUBLE_EQ(find_network("roce-400g")->port_bandwidth.value(), 50 * kGiga);
  EXPECT_DOUBLE_EQ(find_network("eth-10g")->port_bandwidth.value(), 1.25 * kGiga);
  // NCCL's usable share of an IB port: 90-95%.
  const double ib = find_network("ib-ndr")->protocol_efficiency;
  EXPECT_GE(ib, 0.90);
  EXPECT_LE(ib, 0.95);
  // RoCE and TCP pay more latency and reach less of the line rate than InfiniBand.
  EXPECT_GT(find_network("roce-400g")->latency, find_network("ib-ndr")->latency);
  EXPECT_GT(find_network("eth-100g")->latency, find_network("roce-100g")->latency);
  EXPECT_LT(find_network("roce-400g")->protocol_efficiency, ib);
  EXPECT_LT(find_network("eth-100g")->protocol_efficiency,
            find_network("roce-100g")->protocol_efficiency);
  EXPECT_EQ(find_network("roce-200g")->kind, NetworkKind::kRoCE);
  EXPECT_EQ(find_network("eth-25g")->kind, NetworkKind::kEthernet);
}

TEST(HardwareCatalog, EveryNetworkIsComplete) {
  EXPECT_EQ(network_catalog().size(), 11u);
  for (const NetworkSpec& n : network_catalog()) {
    SCOPED_TRACE(n.name);
    EXPECT_FALSE(n.source.empty());
    EXPECT_GT(n.port_bandwidth.value(), 0);
    EXPECT_GT(n.latency.value(), 0);
    EXPECT_GT(n.protocol_efficiency, 0);
    EXPECT_LE(n.protocol_efficiency, 1);
  }
}

TEST(HardwareCatalog, LookupIsCaseInsensitive) {
  EXPECT_EQ(find_gpu("h100-sxm"), find_gpu("H100-SXM"));
  EXPECT_NE(find_gpu("h100-sxm"), nullptr);
  EXPECT_EQ(find_gpu("mi300x")->name, "MI300X");
  EXPECT_EQ(find_gpu("tpu-V5P")->name, "TPU-v5p");
  EXPECT_EQ(find_fabric("NVSwitch-NVLink4")->name, "nvswitch-nvlink4");
  EXPECT_EQ(find_network("IB-NDR")->name, "ib-ndr");
  EXPECT_EQ(find_gpu("H100"), nullptr);  // no prefix matching
  EXPECT_EQ(find_gpu(""), nullptr);
  EXPECT_EQ(find_fabric("nvlink6"), nullptr);
  EXPECT_EQ(find_network("ib-ndr "), nullptr);
}

TEST(HardwareCatalog, NamesAreUniqueIgnoringCase) {
  std::set<std::string> names;
  for (const GpuSpec& g : gpu_catalog()) EXPECT_TRUE(names.insert(lower(g.name)).second) << g.name;
  names.clear();
  for (const IntraNodeFabricSpec& f : fabric_catalog())
    EXPECT_TRUE(names.insert(lower(f.name)).second) << f.name;
  names.clear();
  for (const NetworkSpec& n : network_catalog())
    EXPECT_TRUE(names.insert(lower(n.name)).second) << n.name;
}

TEST(HardwareCatalog, KindNames) {
  EXPECT_EQ(to_string(FabricKind::kSwitch), "switch");
  EXPECT_EQ(to_string(FabricKind::kMesh), "mesh");
  EXPECT_EQ(to_string(FabricKind::kRing), "ring");
  EXPECT_EQ(to_string(FabricKind::kPcie), "pcie");
  EXPECT_EQ(to_string(NetworkKind::kInfiniBand), "infiniband");
  EXPECT_EQ(to_string(NetworkKind::kRoCE), "roce");
  EXPECT_EQ(to_string(NetworkKind::kEthernet), "ethernet");
}

// Counts the '|' that delimit cells, skipping escaped ones.
int count_cell_delimiters(const std::string& line) {
  int count = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++count;
  return count;
}

TEST(HardwareMarkdown, IsDeterministicAndComplete) {
  const std::string doc = render_hardware_catalog_markdown();
  EXPECT_EQ(doc, render_hardware_catalog_markdown());
  EXPECT_EQ(doc.rfind("# Hardware catalog\n", 0), 0u);
  EXPECT_NE(doc.find("dtsim catalog hardware --markdown"), std::string::npos);
  EXPECT_NE(doc.find(render_gpu_catalog_markdown()), std::string::npos);
  EXPECT_NE(doc.find(render_fabric_catalog_markdown()), std::string::npos);
  EXPECT_NE(doc.find(render_network_catalog_markdown()), std::string::npos);
  for (const GpuSpec& g : gpu_catalog())
    EXPECT_NE(doc.find("| " + g.name + " |"), std::string::npos);
  for (const IntraNodeFabricSpec& f : fabric_catalog())
    EXPECT_NE(doc.find("| " + f.name + " |"), std::string::npos);
  for (const NetworkSpec& n : network_catalog())
    EXPECT_NE(doc.find("| " + n.name + " |"), std::string::npos);
  for (const char* unit : {"(TFLOP/s)", "(GiB)", "(GB/s", "(Gb/s)", "(us)"})
    EXPECT_NE(doc.find(unit), std::string::npos) << unit;
}

TEST(HardwareMarkdown, ShowsPublishedFigures) {
  const std::string gpus = render_gpu_catalog_markdown();
  EXPECT_NE(gpus.find("| A100-SXM-80GB | NVIDIA | 19.5 | 156 | 312 | 312 | - | 80 | 2039 |"),
            std::string::npos);
  EXPECT_NE(gpus.find("| H100-SXM | NVIDIA | 67 | 494.5 | 989.5 | 989.5 | 1979 | 80 | 3350 |"),
            std::string::npos);
  const std::string networks = render_network_catalog_markdown();
  EXPECT_NE(networks.find("| ib-ndr | infiniband | 400 | 50 | 2.7 | 0.92 | 46 |"),
            std::string::npos);
}

TEST(HardwareMarkdown, TableRowsHaveTheirHeadersColumnCount) {
  std::istringstream lines(render_hardware_catalog_markdown());
  std::string line;
  int columns = -1;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '|') {
      columns = -1;  // a table ends at the first line that is not a row
      continue;
    }
    if (columns < 0) {
      columns = count_cell_delimiters(line);
    } else {
      EXPECT_EQ(count_cell_delimiters(line), columns) << line;
    }
  }
}

}  // namespace
}  // namespace dtsim
