// The hardware catalog as data. Every figure names where it comes from in `source`; the
// efficiency factors are model parameters and name theirs in `efficiency_source`.
//
// Conventions used throughout:
// - Peaks are dense (no structured sparsity). Where a datasheet only prints the sparsity figure,
//   the entry stores half of it and says so.
// - HBM capacities: vendors write "80 GB" for what is physically binary-sized HBM (stacks of 8,
//   16 or 24 GiB), so every HBM capacity here is stored in GiB (80 GB -> 80 GiB). Drivers expose
//   slightly less after their own reservations; scenarios can override.
// - Bandwidths are decimal (1 GB/s = 1e9 B/s, 1 TB/s = 1e12 B/s) and per direction, as the
//   header requires; "bidirectional" vendor figures are halved.
// - Latencies of intra-node fabrics are NCCL's per-step hardware latencies for the LL protocol
//   (NVIDIA/nccl src/graph/tuning.cc, quoted in docs/reference.md), so that the collective model
//   adds NCCL's base latencies on top without double counting.
#include "core/hardware/catalog.h"
#include "core/hardware/cluster_config.h"
#include "core/hardware/published_rates.h"

#include <algorithm>
#include <cctype>
#include <span>

namespace dtsim {
namespace {

using namespace unit_literals;

// The header's default efficiencies, kept in one place so that entries without a calibration
// source visibly inherit them.
const GpuSpec kDefaults{};

constexpr const char* kAssumedEfficiency = "assumed default, not yet calibrated";

// Bekman, "Machine Learning Engineering" (github.com/stas00/ml-engineering),
// compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS" (MAMF) tables: best mean
// TFLOP/s of a torch.matmul shape sweep on one device. A GEMM microbenchmark, not a training run.
constexpr const char* kMamf = "Bekman, ML Engineering, MAMF table";

// te42kyfo/gpu-benches (D. Ernst, FAU Erlangen) at 1c36d509ee: gpu-stream, FP64 streaming kernels
// over 1 GiB arrays at full occupancy; the "scale" kernel (one load and one store per element)
// is the access pattern of an elementwise training kernel.
constexpr const char* kGpuStream = "te42kyfo/gpu-benches gpu-stream (1c36d509ee)";
// The same repository's gpu-small-kernels: 10,000 back-to-back launches of a tiny kernel on one
// stream; the issue period of the smallest one (64 KiB moved) is the per-kernel cost.
constexpr const char* kSmallKernels = "te42kyfo/gpu-benches gpu-small-kernels (1c36d509ee)";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

template <class Spec>
const Spec* find_by_name(const std::vector<Spec>& catalog, std::string_view name) {
  for (const Spec& spec : catalog)
    if (iequals(spec.name, name)) return &spec;
  return nullptr;
}

std::vector<GpuSpec> make_gpu_catalog() {
  return {
      GpuSpec{
          .name = "V100-SXM2-32GB",
          .vendor = "NVIDIA",
          // Volta has FP16 tensor cores only: no TF32, BF16 or FP8. FP32 is the CUDA-core rate.
          .peak = {{DType::kFp32, 15.7_TFLOPS}, {DType::kFp16, 125_TFLOPS}},
          .memory = 32_GiB,
          .memory_bandwidth = 900_GBps,
          .default_intra_node = "nvlink-hybrid-cube-mesh",
          .source = "NVIDIA Tesla V100 GPU datasheet (2018), SXM2 column: FP16 tensor 125, FP32 "
                    "15.7 TFLOP/s (no TF32/BF16/FP8 on Volta); 900 GB/s HBM2; 32 GB stored as "
                    "32 GiB (4 HBM2 stacks of 8 GiB); usual board: DGX-1 hybrid cube-mesh",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = kAssumedEfficiency,
          // NVIDIA Tesla V100 whitepaper (2017): 80 SMs on the SXM2 part
          .sm_count = 80,
      },
      GpuSpec{
          .name = "A100-SXM-40GB",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 19.5_TFLOPS},
                   {DType::kTf32, 156_TFLOPS},
                   {DType::kFp16, 312_TFLOPS},
                   {DType::kBf16, 312_TFLOPS}},
          .memory = 40_GiB,
          .memory_bandwidth = 1555_GBps,
          .default_intra_node = "nvswitch-nvlink3",
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM 40GB column, dense "
                    "figures: FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s (no FP8 on Ampere); "
                    "1,555 GB/s HBM2; 40 GB stored as 40 GiB (5 HBM2 stacks of 8 GiB)",
          // The MAMF row says "A100 SXM" without the memory size; GEMM peak does not depend on it.
          .gemm_efficiency = 0.87,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = 0.89,
          .kernel_launch_overhead = Seconds(2.6e-6),
          .efficiency_source =
              std::string("gemm: ") + kMamf +
              " v2, A100 SXM BF16 271.2 of 312 TFLOP/s (torch 2.6, CUDA 12.6), and per shape in "
              "the published kernel rates; memory: " +
              kGpuStream + ", A100 40GB scale kernel 1381 of 1555 GB/s; launch: " + kSmallKernels +
              ", A100 80GB (the same chip): 2.6 us per kernel; attention: " + kAssumedEfficiency +
              " for unfused kernels, FlashAttention-2 rows for fused ones",
          // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs
          .sm_count = 108,
      },
      GpuSpec{
          .name = "A100-SXM-80GB",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 19.5_TFLOPS},
                   {DType::kTf32, 156_TFLOPS},
                   {DType::kFp16, 312_TFLOPS},
                   {DType::kBf16, 312_TFLOPS}},
          .memory = 80_GiB,
          .memory_bandwidth = 2039_GBps,
          .default_intra_node = "nvswitch-nvlink3",
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM 80GB column, dense "
                    "figures: FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s (no FP8 on Ampere); "
                    "2,039 GB/s HBM2e; 80 GB stored as 80 GiB (5 HBM2e stacks of 16 GiB)",
          .gemm_efficiency = 0.87,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = 0.85,
          .kernel_launch_overhead = Seconds(2.6e-6),
          .efficiency_source =
              std::string("gemm: ") + kMamf +
              " v2, A100 SXM BF16 271.2 of 312 TFLOP/s (torch 2.6, CUDA 12.6), and per shape in "
              "the published kernel rates; memory: " +
              kGpuStream +
              ", A100 80GB scale kernel 1732 of 2039 GB/s (a streaming read alone "
              "reaches 1.80 TB/s, 88%, in Nsight Compute: NVIDIA developer forums, 'Trouble to "
              "Reach Peak Bandwidth of A100'); launch: " +
              kSmallKernels + ", A100 80GB: 2.6 us per kernel; attention: " + kAssumedEfficiency +
              " for unfused kernels, FlashAttention-2 rows for fused ones",
          // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs
          .sm_count = 108,
      },
      GpuSpec{
          .name = "A100-PCIe-40GB",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 19.5_TFLOPS},
                   {DType::kTf32, 156_TFLOPS},
                   {DType::kFp16, 312_TFLOPS},
                   {DType::kBf16, 312_TFLOPS}},
          .memory = 40_GiB,
          .memory_bandwidth = 1555_GBps,
          .default_intra_node = "pcie-gen4",
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 40GB column, dense "
                    "figures (the same as SXM): FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s (no "
                    "FP8 on Ampere); 1,555 GB/s HBM2; 250 W; 40 GB stored as 40 GiB (5 HBM2 "
                    "stacks of 8 GiB); PCIe Gen4 x16 board (an optional NVLink bridge joins pairs "
                    "only, which this entry does not model)",
          // The MAMF row says "A100 PCIe" without the memory size; GEMM peak does not depend on it.
          .gemm_efficiency = 0.81,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, A100 PCIe BF16 252.9 of 312 TFLOP/s (torch 2.5.1, CUDA "
                               "12.4); attention, memory, launch: " +
                               kAssumedEfficiency,
          // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs
          .sm_count = 108,
      },
      GpuSpec{
          .name = "A100-PCIe-80GB",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 19.5_TFLOPS},
                   {DType::kTf32, 156_TFLOPS},
                   {DType::kFp16, 312_TFLOPS},
                   {DType::kBf16, 312_TFLOPS}},
          .memory = 80_GiB,
          .memory_bandwidth = 1935_GBps,
          .default_intra_node = "pcie-gen4",
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 80GB column, dense "
                    "figures (the same as SXM): FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s (no "
                    "FP8 on Ampere); 1,935 GB/s HBM2e; 300 W; 80 GB stored as 80 GiB (5 HBM2e "
                    "stacks of 16 GiB); PCIe Gen4 x16 board (an optional NVLink bridge joins pairs "
                    "only, which this entry does not model)",
          .gemm_efficiency = 0.81,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, A100 PCIe BF16 252.9 of 312 TFLOP/s (torch 2.5.1, CUDA "
                               "12.4); attention, memory, launch: " +
                               kAssumedEfficiency,
          // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs
          .sm_count = 108,
      },
      GpuSpec{
          .name = "H100-SXM",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 67_TFLOPS},
                   {DType::kTf32, 494.5_TFLOPS},
                   {DType::kFp16, 989.5_TFLOPS},
                   {DType::kBf16, 989.5_TFLOPS},
                   {DType::kFp8, 1979_TFLOPS}},
          .memory = 80_GiB,
          .memory_bandwidth = BytesPerSecond(3.35e12),
          .default_intra_node = "nvswitch-nvlink4",
          .source = "NVIDIA H100 Tensor Core GPU datasheet, SXM5 column, dense (half of the "
                    "sparsity figure): TF32 494.5, FP16/BF16 989.5, FP8 1979 TFLOP/s; FP32 67 "
                    "TFLOP/s (CUDA cores); 3.35 TB/s HBM3; 80 GB stored as 80 GiB (5 active HBM3 "
                    "stacks of 16 GiB)",
          .gemm_efficiency = 0.80,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = 0.66,
          .kernel_launch_overhead = Seconds(2.4e-6),
          .efficiency_source =
              std::string("gemm: ") + kMamf +
              " v2, H100 SXM BF16 794.5 of 989 TFLOP/s (torch 2.7, CUDA 12.6; FP8 1402.6 of "
              "1979 = 0.71), and per shape and dtype in the published kernel rates; memory and "
              "launch: proxy, the H200 rows (the same GH100 die and memory controllers; the source "
              "has no H100 SXM): " +
              kGpuStream + ", scale kernel 3165 of 4800 GB/s, and " + kSmallKernels +
              ", 2.4 us per kernel; attention: " + kAssumedEfficiency +
              " for unfused kernels, FlashAttention-2 rows for fused ones",
          // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs (SXM5)
          .sm_count = 132,
      },
      GpuSpec{
          .name = "H100-PCIe",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 51_TFLOPS},
                   {DType::kTf32, 378_TFLOPS},
                   {DType::kFp16, 756.5_TFLOPS},
                   {DType::kBf16, 756.5_TFLOPS},
                   {DType::kFp8, 1513_TFLOPS}},
          .memory = 80_GiB,
          .memory_bandwidth = BytesPerSecond(2.0e12),
          .default_intra_node = "pcie-gen5",
          .source = "NVIDIA H100 Tensor Core GPU datasheet, PCIe column, dense (half of the "
                    "sparsity figure): TF32 378, FP16/BF16 756.5, FP8 1513 TFLOP/s; FP32 51 "
                    "TFLOP/s (CUDA cores); 2 TB/s HBM2e; 300-350 W; 80 GB stored as 80 GiB; PCIe "
                    "Gen5 x16 board (an optional NVLink bridge joins pairs only, which this entry "
                    "does not model)",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          // MAMF has no H100 PCIe row, and the SXM row runs at twice the power limit.
          .efficiency_source = kAssumedEfficiency,
          // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 114 SMs on the PCIe part
          .sm_count = 114,
      },
      GpuSpec{
          .name = "H200-SXM",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 67_TFLOPS},
                   {DType::kTf32, 494.5_TFLOPS},
                   {DType::kFp16, 989.5_TFLOPS},
                   {DType::kBf16, 989.5_TFLOPS},
                   {DType::kFp8, 1979_TFLOPS}},
          .memory = 141_GiB,
          .memory_bandwidth = BytesPerSecond(4.8e12),
          .default_intra_node = "nvswitch-nvlink4",
          .source = "NVIDIA H200 Tensor Core GPU datasheet, SXM column, dense (half of the "
                    "sparsity figure), compute as H100 SXM5: TF32 494.5, FP16/BF16 989.5, FP8 1979 "
                    "TFLOP/s, FP32 67; 4.8 TB/s HBM3e; 141 GB stored as 141 GiB like the other "
                    "HBM entries (6 stacks of 24 GiB = 144 GiB physical)",
          // Same GH100 die and 700 W limit as H100 SXM; MAMF has no H200 row (its GH200 row runs
          // at 900 W, so it would flatter the H200).
          .gemm_efficiency = 0.80,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = 0.66,
          .kernel_launch_overhead = Seconds(2.4e-6),
          .efficiency_source =
              std::string("gemm: proxy, ") + kMamf +
              " v2 H100 SXM row (same die and power limit), 794.5 of 989 TFLOP/s, and per shape "
              "and dtype in the published kernel rates; memory: " +
              kGpuStream + ", H200 scale kernel 3165 of 4800 GB/s; launch: " + kSmallKernels +
              ", H200: 2.4 us per kernel; attention: " + kAssumedEfficiency +
              " for unfused kernels, FlashAttention-2 rows (H100) for fused ones",
          // Same GH100 die as H100 SXM5: 132 SMs (NVIDIA H200 datasheet)
          .sm_count = 132,
      },
      GpuSpec{
          .name = "L40S",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 91.6_TFLOPS},
                   {DType::kTf32, 183_TFLOPS},
                   {DType::kFp16, 362.05_TFLOPS},
                   {DType::kBf16, 362.05_TFLOPS},
                   {DType::kFp8, 733_TFLOPS}},
          .memory = 48_GiB,
          .memory_bandwidth = 864_GBps,
          .default_intra_node = "pcie-gen4",
          .source = "NVIDIA L40S GPU datasheet, dense column (the sparsity column prints about "
                    "twice): TF32 183, FP16/BF16 362.05, FP8 733 TFLOP/s; FP32 91.6 TFLOP/s; 48 GB "
                    "GDDR6 with ECC "
                    "stored as 48 GiB (24 chips of 2 GiB); 864 GB/s; 350 W; PCIe Gen4 x16, no "
                    "NVLink",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = kAssumedEfficiency,
          // NVIDIA L40S datasheet: 18,176 CUDA cores at 128 per Ada SM = 142 SMs
          .sm_count = 142,
      },
      GpuSpec{
          .name = "B200-SXM",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 80_TFLOPS},
                   {DType::kTf32, 1125_TFLOPS},
                   {DType::kFp16, 2250_TFLOPS},
                   {DType::kBf16, 2250_TFLOPS},
                   {DType::kFp8, 4500_TFLOPS}},
          .memory = 180_GiB,
          .memory_bandwidth = BytesPerSecond(8.0e12),
          .default_intra_node = "nvswitch-nvlink5",
          .source = "NVIDIA DGX B200 datasheet, one of 8 GPUs (HGX B200, 1000 W each): FP8 72 "
                    "PFLOP/s with sparsity per system = 4.5 dense per GPU; dense FP16/BF16 2250, "
                    "TF32 1125, FP32 80 TFLOP/s as tabulated from NVIDIA's specifications in "
                    "Bekman's ML Engineering TFLOPS table; 1,440 GB and 64 TB/s HBM3e per system "
                    "= 180 GB (stored as 180 GiB like the other HBM entries) and 8 TB/s per GPU",
          .gemm_efficiency = 0.78,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, B200 SXM BF16 1745.0 of 2250 TFLOP/s (torch 2.7.1, CUDA "
                               "12.8; FP8 3432.5 of 4500 = 0.76); attention, memory, launch: " +
                               kAssumedEfficiency,
          // Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling" (2025): 74 of
          // 80 SMs enabled on each of the two dies, 148 in all (NVIDIA publishes no SM count).
          .sm_count = 148,
      },
      GpuSpec{
          .name = "GB200-NVL72",
          .vendor = "NVIDIA",
          .peak = {{DType::kFp32, 80_TFLOPS},
                   {DType::kTf32, 1250_TFLOPS},
                   {DType::kFp16, 2500_TFLOPS},
                   {DType::kBf16, 2500_TFLOPS},
                   {DType::kFp8, 5000_TFLOPS}},
          .memory = 186_GiB,
          .memory_bandwidth = BytesPerSecond(8.0e12),
          .default_intra_node = "nvswitch-nvlink5",
          .source = "NVIDIA GB200 NVL72 datasheet, per rack of 72 Blackwell GPUs (one GPU here, "
                    "of a GB200 superchip's two, ~1200 W): FP16/BF16 360, TF32 180, FP8 720 "
                    "PFLOP/s with sparsity = dense 2500, 1250, 5000 TFLOP/s per GPU; FP32 5,760 "
                    "TFLOP/s = 80 per GPU; 13.4 TB HBM3e at 576 TB/s = 186 GB (stored as 186 "
                    "GiB) and 8 TB/s per GPU",
          .gemm_efficiency = 0.73,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, GB200 SXM BF16 1822.0 of 2500 TFLOP/s (torch 2.10 nightly, "
                               "CUDA 13.0; FP8 3615.6 of 5000 = 0.72); attention, memory, "
                               "launch: " +
                               kAssumedEfficiency,
          // NVIDIA publishes no SM count for the GB200's GPUs and no measurement was found, so
          // the wave-quantization model is off (0) rather than guessed from the B200.
          .sm_count = 0,
      },
      GpuSpec{
          .name = "MI250X",
          .vendor = "AMD",
          // CDNA 2 has no TF32 or FP8. FP32 is the packed-FP32 matrix rate, which is what an
          // FP32 GEMM on rocBLAS uses.
          .peak = {{DType::kFp32, 95.7_TFLOPS},
                   {DType::kFp16, 383_TFLOPS},
                   {DType::kBf16, 383_TFLOPS}},
          .memory = 128_GiB,
          .memory_bandwidth = BytesPerSecond(3.2768e12),
          .default_intra_node = "infinity-fabric-mi250x",
          .source = "AMD Instinct MI250X accelerator datasheet (2021): FP16/BF16 383.0, FP32 "
                    "matrix 95.7 TFLOP/s (no TF32/FP8 on CDNA 2); 3.2 TB/s HBM2e, exactly 3276.8 "
                    "GB/s (8 stacks x 409.6 GB/s); 128 GB stored as 128 GiB (8 stacks of 16 GiB). "
                    "Per OAM package of two GCDs: ROCm shows each GCD as a device with half of "
                    "every figure",
          .gemm_efficiency = 0.77,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v1, one MI250X GCD BF16 147.0 of 191.5 TFLOP/s (ROCm 6.2; v1 "
                               "did not flush caches between runs); attention, memory, launch: " +
                               kAssumedEfficiency,
      },
      GpuSpec{
          .name = "MI300X",
          .vendor = "AMD",
          .peak = {{DType::kFp32, 163.4_TFLOPS},
                   {DType::kTf32, 653.7_TFLOPS},
                   {DType::kFp16, 1307.4_TFLOPS},
                   {DType::kBf16, 1307.4_TFLOPS},
                   {DType::kFp8, 2614.9_TFLOPS}},
          .memory = 192_GiB,
          .memory_bandwidth = BytesPerSecond(5.3e12),
          .default_intra_node = "infinity-fabric",
          .source = "AMD Instinct MI300X accelerator datasheet, dense (non-sparsity) figures: "
                    "FP32 matrix 163.4, TF32 653.7, FP16/BF16 1307.4, FP8 2614.9 TFLOP/s; 5.3 TB/s "
                    "HBM3; 192 GB stored as 192 GiB (8 stacks of 24 GiB)",
          .gemm_efficiency = 0.51,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, MI300X BF16 668.4 of 1307.4 TFLOP/s (torch 2.5.1, ROCm 6.3, "
                               "PYTORCH_TUNABLEOP_ENABLED=1); attention, memory, launch: " +
                               kAssumedEfficiency,
      },
      GpuSpec{
          .name = "MI355X",
          .vendor = "AMD",
          // AMD publishes no TF32 matrix peak for CDNA 4, so TF32 is absent and peak_for() falls
          // back to FP32.
          .peak = {{DType::kFp32, 157.3_TFLOPS},
                   {DType::kFp16, 2516.6_TFLOPS},
                   {DType::kBf16, 2516.6_TFLOPS},
                   {DType::kFp8, 5033.2_TFLOPS}},
          .memory = 288_GiB,
          .memory_bandwidth = BytesPerSecond(8.0e12),
          .default_intra_node = "infinity-fabric-mi355x",
          .source = "AMD Instinct MI355X accelerator specifications (2025), dense (AMD's "
                    "structured-sparsity figures are twice these): FP32 matrix 157.3, FP16/BF16 "
                    "2.5 PFLOP/s, exactly 2516.6 (256 CUs x 2400 MHz x 4096 FLOP per clock), FP8 "
                    "5033.2 TFLOP/s; no TF32 matrix peak published; 8 TB/s HBM3E; 1400 W; 288 GB "
                    "stored as 288 GiB (8 stacks of 36 GiB)",
          .gemm_efficiency = 0.62,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v2, MI355X BF16 1565.0 TFLOP/s (torch 2.8, ROCm 7.0.2, "
                               "PYTORCH_TUNABLEOP_ENABLED=0) of this entry's 2516.6 peak = 0.62 "
                               "(the table divides by 2300 and prints 68%); attention, memory, "
                               "launch: " +
                               kAssumedEfficiency,
      },
      GpuSpec{
          .name = "Gaudi2",
          .vendor = "Intel",
          // FP32, TF32 and FP16 matrix modes exist but Intel publishes no peak for them, so they
          // are absent and peak_for() falls back.
          .peak = {{DType::kBf16, 432_TFLOPS}, {DType::kFp8, 865_TFLOPS}},
          .memory = 96_GiB,
          .memory_bandwidth = BytesPerSecond(2.4576e12),
          .default_intra_node = "gaudi2-roce-mesh",
          .source = "Habana Gaudi2 white paper (May 2022) and Intel Gaudi2 specifications: MME "
                    "BF16 432 (1650 MHz x 2 MMEs x 256x256 FMA x 2), FP8 865 TFLOP/s; FP32/TF32/"
                    "FP16 peaks unpublished; 2.46 TB/s HBM2e (6 stacks x 409.6 GB/s); 96 GB stored "
                    "as 96 GiB (6 stacks of 16 GiB)",
          .gemm_efficiency = 0.99,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = std::string("gemm: ") + kMamf +
                               " v1, Gaudi2 BF16 429.3 of 432 TFLOP/s (Gaudi software 1.15, "
                               "measured by Intel; v1 did not flush caches); attention, memory, "
                               "launch: " +
                               kAssumedEfficiency,
      },
      GpuSpec{
          .name = "TPU-v4",
          .vendor = "Google",
          .peak = {{DType::kBf16, 275_TFLOPS}},
          .memory = 32_GiB,
          .memory_bandwidth = 1200_GBps,
          .default_intra_node = "ici-v4",
          .source = "Google Cloud TPU v4 documentation, system architecture table: 275 TFLOP/s "
                    "BF16 per chip (no other matrix peak published); 32 GiB HBM2 at 1200 GBps",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = kAssumedEfficiency,
      },
      GpuSpec{
          .name = "TPU-v5p",
          .vendor = "Google",
          .peak = {{DType::kBf16, 459_TFLOPS}, {DType::kFp8, 459_TFLOPS}},
          .memory = 95_GiB,
          .memory_bandwidth = 2765_GBps,
          .default_intra_node = "ici-v5p",
          .source = "Google Cloud TPU v5p documentation, key specifications table: 459 TFLOP/s "
                    "BF16 and 459 FP8 per chip; 95 GiB HBM2e at 2765 GBps",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = kAssumedEfficiency,
      },
      // One x86-64 core as dtsim's CPU real mode uses it (real/cpu: one MPI rank per core, fp32
      // GEMMs in Eigen), so that `dtsim real` on a laptop has a prediction to compare with. Every
      // figure is nominal: `dtsim calibrate --cpu` writes a profile (cluster.profile) with the
      // machine's own.
      GpuSpec{
          .name = "CPU-core",
          .vendor = "CPU",
          // Eigen's GEMMs run in fp32 on the CPU back end; no other format has a peak, so
          // training.precision must be fp32 (check_precision).
          .peak = {{DType::kFp32, FlopsPerSecond(96e9)}},
          .memory = 8_GiB,
          .memory_bandwidth = 10_GBps,
          .default_intra_node = "shared-memory",
          .source = "nominal, meant to be replaced by dtsim calibrate --cpu: fp32 peak 96 GFLOP/s "
                    "= 2 FMA units x 8 fp32 lanes (256-bit AVX2) x 2 FLOP per FMA x 3.0 GHz "
                    "(assumed clock; two 256-bit FMA ports per core from Haswell on: Intel 64 and "
                    "IA-32 Architectures Optimization Reference Manual); memory 8 GiB: assumed "
                    "share of host memory per rank; memory bandwidth 10 GB/s: nominal, Little's "
                    "law for one core, about 10 outstanding cache-line misses (the L1D fill "
                    "buffers in the same manual) x 64 B over ~64 ns DRAM latency; no SMs",
          .gemm_efficiency = kDefaults.gemm_efficiency,
          .attention_efficiency = kDefaults.attention_efficiency,
          .memory_efficiency = kDefaults.memory_efficiency,
          .kernel_launch_overhead = kDefaults.kernel_launch_overhead,
          .efficiency_source = kAssumedEfficiency,
          .sm_count = 0,
      },
  };
}

// NCCL's per-step Ring LL hardware latencies (docs/reference.md, "Hardware latency per step").
constexpr Seconds kNcclNvlinkLatency = 0.6_us;
constexpr Seconds kNcclPcieLatency = 1.0_us;
constexpr Seconds kNcclNetworkLatency = 2.7_us;

// NCCL's link bandwidths over the line rate (docs/evidence/nccl-tuning-model.md section 3): NCCL's
// topology search counts an NVLink at SM70/SM80 20, SM90 20.6 and SM100 40.1 GB/s
// (src/graph/topo.h), against 25 GB/s per direction (50 on NVLink 5), and a PCIe link at
// width x kvDictPciGen / 80 GB/s (src/graph/topo.cc: x16 Gen3 12, Gen4 24, Gen5 48), against
// 128b/130b line rates of 15.75, 31.5 and 63 GB/s. These are the bandwidths NCCL's cost model and
// algorithm choice use, so dtsim's transfers and NCCL's model see the same link.
constexpr double kNvlinkSm70Efficiency = 20.0 / 25.0;
constexpr double kNvlinkSm80Efficiency = 20.0 / 25.0;
constexpr double kNvlinkSm90Efficiency = 20.6 / 25.0;
constexpr double kNvlinkSm100Efficiency = 40.1 / 50.0;
constexpr double kPcieEfficiency = 12.0 / 15.75;

std::vector<IntraNodeFabricSpec> make_fabric_catalog() {
  return {
      IntraNodeFabricSpec{
          .name = "nvswitch-nvlink2",
          .kind = FabricKind::kSwitch,
          .per_gpu_bandwidth = 150_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm70Efficiency,
          .source = "NVIDIA DGX-2 / Tesla V100 (Volta) architecture whitepaper: 6 NVLink2 links "
                    "per GPU x 25 GB/s per direction = 150 GB/s, all GPUs reach each other at full "
                    "rate through NVSwitch; latency: NCCL NVLink LL per-step 0.6 us; efficiency "
                    "0.80: NCCL counts 20 GB/s per NVLink on SM70 (src/graph/topo.h "
                    "SM70_NVLINK_BW) of the 25 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "nvswitch-nvlink3",
          .kind = FabricKind::kSwitch,
          .per_gpu_bandwidth = 300_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm80Efficiency,
          .source = "NVIDIA A100 datasheet / DGX A100: 12 NVLink3 links x 25 GB/s per direction = "
                    "300 GB/s (600 GB/s bidirectional) through NVSwitch; latency: NCCL NVLink LL "
                    "per-step 0.6 us; efficiency 0.80: NCCL counts 20 GB/s per NVLink on SM80 "
                    "(src/graph/topo.h SM80_NVLINK_BW) of the 25 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "nvswitch-nvlink4",
          .kind = FabricKind::kSwitch,
          .per_gpu_bandwidth = 450_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm90Efficiency,
          .source = "NVIDIA H100/H200 datasheets / DGX H100: 18 NVLink4 links x 25 GB/s per "
                    "direction = 450 GB/s (900 GB/s bidirectional) through NVSwitch; latency: NCCL "
                    "NVLink LL per-step 0.6 us; efficiency 0.824: NCCL counts 20.6 GB/s per NVLink "
                    "on SM90 (src/graph/topo.h SM90_NVLINK_BW) of the 25 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "nvswitch-nvlink5",
          .kind = FabricKind::kSwitch,
          .per_gpu_bandwidth = 900_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm100Efficiency,
          .source = "NVIDIA DGX B200 / Blackwell datasheet: 18 NVLink5 links x 50 GB/s per "
                    "direction = 900 GB/s (1.8 TB/s bidirectional) through NVSwitch; the same per "
                    "GPU in a GB200 NVL72 rack (datasheet: 130 TB/s over 72 GPUs, one NVLink "
                    "domain through 9 NVLink Switch trays), whose 72-GPU domain is "
                    "gpus_per_node: 72; latency: NCCL "
                    "NVLink LL per-step 0.6 us; efficiency 0.802: NCCL counts 40.1 GB/s per NVLink "
                    "on SM100 (src/graph/topo.h SM100_NVLINK_BW, v2.28) of the 50 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "nvlink-hybrid-cube-mesh",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = 150_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm70Efficiency,
          .source =
              "NVIDIA DGX-1 with Tesla V100 system architecture whitepaper: 6 NVLink2 links "
              "per GPU x 25 GB/s per direction = 150 GB/s injection; each GPU links directly "
              "to only 4 of its 7 peers (some over doubled links), the others are relayed, "
              "so one pair sees 25-50 GB/s; on 8-GPU nodes simulated as the whitepaper's 24 "
              "links (figure 4, core/hardware/nvlink_mesh.h), each at this figure / 6, and "
              "rings on NCCL's ring search over them; latency: NCCL NVLink LL per-step 0.6 us; "
              "efficiency 0.80: NCCL counts 20 GB/s per NVLink on SM70 (src/graph/topo.h "
              "SM70_NVLINK_BW) of the 25 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "nvlink-ring",
          .kind = FabricKind::kRing,
          .per_gpu_bandwidth = 100_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = kNvlinkSm80Efficiency,
          .source =
              "A modelling configuration, not one product: each GPU links to its two ring "
              "neighbours with 2 NVLink3 links each, 4 x 25 GB/s per direction (per-link rate "
              "from the NVIDIA A100 datasheet) = 100 GB/s injection; non-neighbours are "
              "relayed; latency: NCCL NVLink LL per-step 0.6 us; efficiency 0.80: NCCL counts 20 "
              "GB/s per NVLink on SM80 (src/graph/topo.h SM80_NVLINK_BW) of the 25 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "infinity-fabric",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = 448_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = 1.0,
          .source = "AMD Instinct MI300X datasheet / platform brief: 7 Infinity Fabric links per "
                    "GPU at 128 GB/s bidirectional (64 GB/s per direction) = 448 GB/s injection, "
                    "fully connected 8-GPU mesh so one pair sees 64 GB/s; latency: assumed equal "
                    "to NCCL's NVLink LL per-step 0.6 us (no RCCL figure found); efficiency 1: no "
                    "RCCL per-link figure taken, line rate used",
      },
      IntraNodeFabricSpec{
          .name = "infinity-fabric-mi250x",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = 400_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = 1.0,
          .source =
              "AMD Instinct MI250X datasheet and ROCm 'MI250 microarchitecture' page: 8 "
              "external Infinity Fabric links per package, each 16 lanes at 25 GT/s = 50 GB/s "
              "per direction, = 400 GB/s per package (the two GCDs inside a package share 4 "
              "more links, 200 GB/s); links to peers vary by board; latency: assumed equal to "
              "NCCL's NVLink LL per-step 0.6 us; efficiency 1: no RCCL per-link figure taken, line "
              "rate used",
      },
      IntraNodeFabricSpec{
          .name = "infinity-fabric-mi355x",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = BytesPerSecond(537.6e9),
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = 1.0,
          .source = "AMD Instinct MI355X specifications: 7 Infinity Fabric (4th gen) links per GPU "
                    "at 153.6 GB/s bidirectional (76.8 GB/s per direction) = 537.6 GB/s "
                    "injection, fully connected 8-GPU mesh (OAM platform) so one pair sees only "
                    "76.8 GB/s; approximate: modelled as a uniform mesh without RCCL's own ring "
                    "and channel choices; latency: assumed equal to NCCL's NVLink LL per-step 0.6 "
                    "us (no RCCL figure found); efficiency 1: no RCCL per-link figure taken, line "
                    "rate used",
      },
      IntraNodeFabricSpec{
          .name = "pcie-gen3",
          .kind = FabricKind::kPcie,
          .per_gpu_bandwidth = BytesPerSecond(15.75e9),
          .latency = kNcclPcieLatency,
          .protocol_efficiency = kPcieEfficiency,
          .source =
              "PCI Express Base Specification 3.0: x16 at 8 GT/s per lane, 128b/130b "
              "encoding = 15.75 GB/s per direction before packet overhead; latency: NCCL PCIe LL "
              "per-step 1.0 us; efficiency 0.762: NCCL counts x16 Gen3 as 16 lanes x 60 (x100 "
              "Mb/s, kvDictPciGen in src/graph/topo.cc) / 80 = 12 GB/s of the 15.75 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "pcie-gen4",
          .kind = FabricKind::kPcie,
          .per_gpu_bandwidth = BytesPerSecond(31.5e9),
          .latency = kNcclPcieLatency,
          .protocol_efficiency = kPcieEfficiency,
          .source =
              "PCI Express Base Specification 4.0: x16 at 16 GT/s per lane, 128b/130b "
              "encoding = 31.5 GB/s per direction before packet overhead; latency: NCCL PCIe "
              "LL per-step 1.0 us; efficiency 0.762: NCCL counts x16 Gen4 as 16 lanes x 120 (x100 "
              "Mb/s, kvDictPciGen in src/graph/topo.cc) / 80 = 24 GB/s of the 31.5 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "pcie-gen5",
          .kind = FabricKind::kPcie,
          .per_gpu_bandwidth = BytesPerSecond(63.0e9),
          .latency = kNcclPcieLatency,
          .protocol_efficiency = kPcieEfficiency,
          .source =
              "PCI Express Base Specification 5.0: x16 at 32 GT/s per lane, 128b/130b "
              "encoding = 63.0 GB/s per direction before packet overhead; latency: NCCL PCIe "
              "LL per-step 1.0 us; efficiency 0.762: NCCL counts x16 Gen5 as 16 lanes x 240 (x100 "
              "Mb/s, kvDictPciGen in src/graph/topo.cc) / 80 = 48 GB/s of the 63.0 GB/s line rate",
      },
      IntraNodeFabricSpec{
          .name = "ici-v4",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = 300_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = 1.0,
          .source =
              "Google Cloud TPU v4 docs and Jouppi et al., 'TPU v4: An Optically Reconfigurable "
              "Supercomputer', ISCA 2023: 3D torus (modelled as a mesh), 6 ICI links per chip at "
              "400 Gb/s = 50 GB/s per direction each = 300 GB/s; latency: assumed equal to NCCL's "
              "NVLink LL per-step 0.6 us (no public per-hop ICI figure found); efficiency 1: no "
              "public figure, line rate used",
      },
      IntraNodeFabricSpec{
          .name = "ici-v5p",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = 600_GBps,
          .latency = kNcclNvlinkLatency,
          .protocol_efficiency = 1.0,
          .source = "Google Cloud TPU v5p documentation: 1200 GBps bidirectional ICI per chip "
                    "(4800 Gbps per direction) = 600 GB/s per direction, 3D torus (modelled as a "
                    "mesh); latency: assumed equal to NCCL's NVLink LL per-step 0.6 us (no public "
                    "per-hop ICI figure found); efficiency 1: no public figure, line rate used",
      },
      IntraNodeFabricSpec{
          .name = "gaudi2-roce-mesh",
          .kind = FabricKind::kMesh,
          .per_gpu_bandwidth = BytesPerSecond(262.5e9),
          .latency = kNcclNetworkLatency,
          .protocol_efficiency = 0.90,
          .source =
              "Habana Gaudi2 white paper (May 2022): 24 on-chip 100 GbE RoCE v2 ports, 21 "
              "wired all-to-all inside an 8-card server (3 per peer, 37.5 GB/s per pair) and "
              "3 for scale-out: 21 x 12.5 GB/s = 262.5 GB/s per direction; latency: assumed "
              "equal to NCCL's network LL per-step 2.7 us (links are RoCE); efficiency 0.90: the "
              "RoCE v2 network entries' usable share (header bytes per 4096-byte payload)",
      },
      // MPI ranks of one host (the CPU-core entry's board): Open MPI's shared-memory transport
      // copies each message through a buffer both processes map.
      IntraNodeFabricSpec{
          .name = "shared-memory",
          .kind = FabricKind::kSwitch,
          .per_gpu_bandwidth = 5_GBps,
          .latency = 1_us,
          .protocol_efficiency = 1.0,
          .source = "nominal, meant to be replaced by dtsim calibrate --cpu (its point-to-point "
                    "sweep): ranks on one host exchange through shared memory, a copy in and a "
                    "copy out per message, each at the CPU-core entry's nominal 10 GB/s, so ~5 "
                    "GB/s per rank per direction; latency ~1 us: assumed, the order of a "
                    "small-message MPI ping-pong inside one host; kind switch: every rank reaches "
                    "every other through memory; efficiency 1: the figure is already a transfer "
                    "rate",
      },
  };
}

// Usable share of line rate. NCCL reaches 90-95% of an InfiniBand port (docs/reference.md); 0.92 is
// inside that range. RoCE v2 carries about 56 more header bytes per 4096-byte payload than IB
// (Ethernet + IP + UDP headers, FCS, preamble and gap), about 1.4% less goodput, hence 0.90.
constexpr double kIbEfficiency = 0.92;
constexpr double kRoceEfficiency = 0.90;
// An Ethernet cut-through switch hop takes about 0.4-0.6 us against under 0.1 us for an IB
// switch; RoCE's per-step latency adds that difference to NCCL's network figure.
constexpr Seconds kRoceLatency = 3.2_us;
// Kernel TCP/IP costs roughly 10-30 us one way per small message; 20 us is the middle.
constexpr Seconds kTcpLatency = 20_us;

constexpr const char* kIbLatencySource = "latency: NCCL network LL per-step 2.7 us";
constexpr const char* kIbEfficiencySource =
    "efficiency 0.92: NCCL's usable share of an IB port is 90-95% (docs/reference.md)";
constexpr const char* kRoceLatencySource =
    "latency 3.2 us: NCCL network LL per-step 2.7 us + 0.5 us assumed for the slower Ethernet "
    "switch hop";
constexpr const char* kRoceEfficiencySource =
    "efficiency 0.90: IB's 0.92 less ~1.4% extra RoCE v2 header bytes per 4096-byte payload";
constexpr const char* kTcpLatencySource =
    "latency 20 us: assumed, kernel TCP/IP stack costs ~10-30 us one way";

std::string network_source(const char* rate, const char* latency, const char* efficiency) {
  return std::string(rate) + "; " + latency + "; " + efficiency;
}

std::vector<NetworkSpec> make_network_catalog() {
  return {
      NetworkSpec{
          .name = "ib-edr",
          .kind = NetworkKind::kInfiniBand,
          .port_bandwidth = 100_Gbps,
          .latency = kNcclNetworkLatency,
          .protocol_efficiency = kIbEfficiency,
          .source = network_source("InfiniBand Trade Association roadmap: EDR 4x = 100 Gb/s",
                                   kIbLatencySource, kIbEfficiencySource),
      },
      NetworkSpec{
          .name = "ib-hdr",
          .kind = NetworkKind::kInfiniBand,
          .port_bandwidth = 200_Gbps,
          .latency = kNcclNetworkLatency,
          .protocol_efficiency = kIbEfficiency,
          .source = network_source("InfiniBand Trade Association roadmap: HDR 4x = 200 Gb/s",
                                   kIbLatencySource, kIbEfficiencySource),
      },
      NetworkSpec{
          .name = "ib-ndr",
          .kind = NetworkKind::kInfiniBand,
          .port_bandwidth = 400_Gbps,
          .latency = kNcclNetworkLatency,
          .protocol_efficiency = kIbEfficiency,
          .source =
              network_source("InfiniBand Trade Association roadmap: NDR 4x = 400 Gb/s; the port "
                             "of an NVIDIA ConnectX-7 NDR adapter (ConnectX-7 datasheet)",
                             kIbLatencySource, kIbEfficiencySource),
      },
      NetworkSpec{
          .name = "ib-xdr",
          .kind = NetworkKind::kInfiniBand,
          .port_bandwidth = 800_Gbps,
          .latency = kNcclNetworkLatency,
          .protocol_efficiency = kIbEfficiency,
          .source =
              network_source("InfiniBand Trade Association roadmap: XDR 4x = 800 Gb/s; the port "
                             "of an NVIDIA ConnectX-8 SuperNIC (ConnectX-8 datasheet: up "
                             "to 800 Gb/s; ConnectX-7 stops at 400 Gb/s)",
                             kIbLatencySource, kIbEfficiencySource),
      },
      NetworkSpec{
          .name = "roce-100g",
          .kind = NetworkKind::kRoCE,
          .port_bandwidth = 100_Gbps,
          .latency = kRoceLatency,
          .protocol_efficiency = kRoceEfficiency,
          .source = network_source("IEEE 802.3 100GBASE Ethernet line rate, RoCE v2",
                                   kRoceLatencySource, kRoceEfficiencySource),
      },
      NetworkSpec{
          .name = "roce-200g",
          .kind = NetworkKind::kRoCE,
          .port_bandwidth = 200_Gbps,
          .latency = kRoceLatency,
          .protocol_efficiency = kRoceEfficiency,
          .source = network_source("IEEE 802.3 200GBASE Ethernet line rate, RoCE v2",
                                   kRoceLatencySource, kRoceEfficiencySource),
      },
      NetworkSpec{
          .name = "roce-400g",
          .kind = NetworkKind::kRoCE,
          .port_bandwidth = 400_Gbps,
          .latency = kRoceLatency,
          .protocol_efficiency = kRoceEfficiency,
          .source = network_source("IEEE 802.3 400GBASE Ethernet line rate, RoCE v2 (e.g. "
                                   "an NVIDIA ConnectX-7 400GbE port)",
                                   kRoceLatencySource, kRoceEfficiencySource),
      },
      NetworkSpec{
          .name = "roce-800g",
          .kind = NetworkKind::kRoCE,
          .port_bandwidth = 800_Gbps,
          .latency = kRoceLatency,
          .protocol_efficiency = kRoceEfficiency,
          .source = network_source("IEEE 802.3df 800GBASE Ethernet line rate, RoCE v2; the "
                                   "port of an NVIDIA ConnectX-8 SuperNIC in Ethernet mode "
                                   "(ConnectX-8 datasheet: up to 800 Gb/s)",
                                   kRoceLatencySource, kRoceEfficiencySource),
      },
      // TCP efficiencies are assumed: 1500-byte frames cap goodput near 94% (90 header bytes per
      // 1448-byte segment), and host copies fall further behind as the line rate grows.
      NetworkSpec{
          .name = "eth-10g",
          .kind = NetworkKind::kEthernet,
          .port_bandwidth = 10_Gbps,
          .latency = kTcpLatency,
          .protocol_efficiency = 0.90,
          .source = network_source("IEEE 802.3 10GBASE Ethernet line rate, TCP sockets",
                                   kTcpLatencySource,
                                   "efficiency 0.90: assumed, below the ~94% goodput cap of "
                                   "1500-byte frames"),
      },
      NetworkSpec{
          .name = "eth-25g",
          .kind = NetworkKind::kEthernet,
          .port_bandwidth = 25_Gbps,
          .latency = kTcpLatency,
          .protocol_efficiency = 0.85,
          .source = network_source("IEEE 802.3 25GBASE Ethernet line rate, TCP sockets",
                                   kTcpLatencySource,
                                   "efficiency 0.85: assumed, below the ~94% goodput cap of "
                                   "1500-byte frames, host copies start to limit"),
      },
      NetworkSpec{
          .name = "eth-100g",
          .kind = NetworkKind::kEthernet,
          .port_bandwidth = 100_Gbps,
          .latency = kTcpLatency,
          .protocol_efficiency = 0.70,
          .source = network_source("IEEE 802.3 100GBASE Ethernet line rate, TCP sockets",
                                   kTcpLatencySource,
                                   "efficiency 0.70: assumed, host copies and socket threads "
                                   "limit TCP well below line rate at 100 Gb/s"),
      },
  };
}

// The formats that stand in for an absent one, in order of preference. After these, peak_for()
// takes the lowest peak the device has, which is the conservative choice.
std::span<const DType> fallbacks_for(DType t) {
  static constexpr DType kForFp8[] = {DType::kBf16, DType::kFp16};
  static constexpr DType kForBf16[] = {DType::kFp16};
  static constexpr DType kForFp16[] = {DType::kBf16};
  static constexpr DType kForTf32[] = {DType::kFp32};
  switch (t) {
    case DType::kFp8:
      return kForFp8;
    case DType::kBf16:
      return kForBf16;
    case DType::kFp16:
      return kForFp16;
    case DType::kTf32:
      return kForTf32;
    case DType::kFp32:
      return {};
  }
  return {};
}

}  // namespace

FlopsPerSecond GpuSpec::peak_for(DType t) const {
  if (auto it = peak.find(t); it != peak.end()) return it->second;
  for (DType f : fallbacks_for(t))
    if (auto it = peak.find(f); it != peak.end()) return it->second;
  // Every catalog entry has at least one peak; a user-defined GPU without any is rejected by
  // scenario validation, so 0 is only reachable from a hand-built GpuSpec.
  if (peak.empty()) return FlopsPerSecond(0);
  return std::min_element(peak.begin(), peak.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->second;
}

namespace {

// Idle power where no measurement of the board is at hand: the mean idle share of maximum power of
// the two boards measured below (A100 SXM 80 GB 62.12 of 400 W = 0.155; H100 PCIe 79.7 of 350 W =
// 0.228), an assumption stated in each entry that takes it.
constexpr double kAssumedIdleShare = 0.19;
constexpr const char* kAssumedIdle =
    "idle: assumed, 0.19 of maximum (the mean idle share of the measured A100 SXM and H100 PCIe)";
constexpr const char* kA100Idle =
    "idle 62 W: measured on a DGX A100 80 GB board (nvidia-smi, github.com/chuyishang/"
    "inference-energy results_paste.md, 'Idle power: 62.12 W')";
constexpr const char* kDgxA100Host =
    "host: DGX A100's 2x AMD EPYC 7742, 225 W TDP each (AMD EPYC 7742 product page)";
constexpr const char* kDgxH100Host =
    "host: DGX H100/H200's 2x Intel Xeon Platinum 8480C, 350 W TDP each (Intel ARK, Xeon "
    "Platinum 8480+)";

struct PowerRow {
  const char* gpu;
  double max_w, idle_w, host_w;  // idle_w < 0: kAssumedIdleShare of max_w
  const char* max_source;
  const char* idle_source;  // nullptr: kAssumedIdle
  const char* host_source;  // nullptr: no reference server in the catalog (host 0)
};

// Each board's maximum power (its TDP or configured power limit), its idle power, and the CPUs of
// its reference server (NICs are the network entry's; memory and fans are not charged).
constexpr PowerRow kPowerRows[] = {
    {"V100-SXM2-32GB", 300, -1, 270,
     "max 300 W: Patterson et al. 2021, 'Carbon Emissions and Large Neural Network Training' "
     "(arXiv 2104.10350), Table 4, V100 TDP",
     nullptr, "host: DGX-1's 2x Intel Xeon E5-2698 v4, 135 W TDP each (Intel ARK)"},
    {"A100-SXM-40GB", 400, 62.12, 450,
     "max 400 W: A100 SXM4 power limit (nvidia-smi on AWS p4d; the Llama 2 model card's "
     "'A100-80GB (TDP of 350-400W)')",
     kA100Idle, kDgxA100Host},
    {"A100-SXM-80GB", 400, 62.12, 450,
     "max 400 W: the Llama 2 model card, 'A100-80GB (TDP of 350-400W)', and the A100 SXM4 power "
     "limit",
     kA100Idle, kDgxA100Host},
    {"A100-PCIe-40GB", 250, -1, 0, "max 250 W: the A100 PCIe board's power limit", nullptr,
     nullptr},
    {"H100-SXM", 700, -1, 700, "max 700 W: the Llama 3 model card, 'H100-80GB (TDP of 700W)'",
     nullptr, kDgxH100Host},
    {"H100-PCIe", 350, 79.7, 0,
     "max 350 W: NVIDIA H100 PCIe product brief PB-11133-001_v02 (Nov 2022), maximum TDP",
     "idle 79.7 W: measured (nvidia-smi at 50 ms, github.com/GOATnote-Inc/robogoat "
     "POWER_EFFICIENCY_MEASURED.md, Nov 2025)",
     nullptr},
    {"H200-SXM", 700, -1, 700,
     "max 700 W: MLPerf Inference v4.1, NVIDIA H200-SXM-141GBx8 system notes, 'H200 TGP 700W'",
     nullptr, kDgxH100Host},
    {"B200-SXM", 1000, -1, 0,
     "max 1000 W: MLPerf Inference v6.0, Nebius B200 system notes, 'B200 TGP 1000W'", nullptr,
     nullptr},
    {"L40S", 350, -1, 0, "max 350 W: NVIDIA L40S datasheet, maximum power consumption", nullptr,
     nullptr},
    {"MI250X", 560, -1, 0, "max 560 W: AMD Instinct MI250X specification, peak board power",
     nullptr, nullptr},
    {"MI300X", 750, -1, 0,
     "max 750 W: MLPerf Inference v4.1, AMD 8xMI300X system, 'MI300X-NPS1-SPX-192GB-750W'", nullptr,
     nullptr},
};

void attach_power(GpuSpec& gpu) {
  for (const PowerRow& row : kPowerRows) {
    if (gpu.name != row.gpu) continue;
    gpu.max_power = Watts(row.max_w);
    gpu.idle_power = Watts(row.idle_w >= 0 ? row.idle_w : kAssumedIdleShare * row.max_w);
    gpu.host_power = Watts(row.host_w);
    gpu.power_source = std::string(row.max_source) + "; " +
                       (row.idle_source ? row.idle_source : kAssumedIdle) + "; " +
                       (row.host_source ? row.host_source
                                        : "host: no reference server in the catalog (0 W; set "
                                          "cluster.node_power)");
    return;
  }
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = [] {
    std::vector<GpuSpec> gpus = make_gpu_catalog();
    for (GpuSpec& gpu : gpus) {
      attach_published_rates(gpu);
      attach_power(gpu);
    }
    return gpus;
  }();
  return catalog;
}

const std::vector<IntraNodeFabricSpec>& fabric_catalog() {
  static const std::vector<IntraNodeFabricSpec> catalog = make_fabric_catalog();
  return catalog;
}

namespace {
// Switch port power: what a port's cable or transceiver draws (NVIDIA's figures); the switch's
// ASIC and fans are left out.
void attach_port_power(NetworkSpec& n) {
  if (n.name == "ib-hdr") {
    n.switch_port_power = Watts(6);
    n.power_source =
        "switch port 6 W: an HDR active cable's power per port (NVIDIA DGX SuperPOD cabling "
        "guide, 'Port Power'); NIC power not in the catalog";
  } else if (n.name == "ib-ndr") {
    n.switch_port_power = Watts(9);
    n.power_source =
        "switch port 9 W: an NDR 400G OSFP transceiver (NVIDIA MMS4X00-NS400 specification, "
        "'9 Watts maximum'); NIC power not in the catalog";
  }
}
}  // namespace

const std::vector<NetworkSpec>& network_catalog() {
  static const std::vector<NetworkSpec> catalog = [] {
    std::vector<NetworkSpec> networks = make_network_catalog();
    for (NetworkSpec& n : networks) attach_port_power(n);
    return networks;
  }();
  return catalog;
}

const GpuSpec* find_gpu(std::string_view name) {
  return find_by_name(gpu_catalog(), name);
}

const IntraNodeFabricSpec* find_fabric(std::string_view name) {
  return find_by_name(fabric_catalog(), name);
}

const NetworkSpec* find_network(std::string_view name) {
  return find_by_name(network_catalog(), name);
}

}  // namespace dtsim

namespace dtsim {

std::string with_overrides(const std::string& name, const std::vector<std::string>& overridden) {
  if (overridden.empty()) return name;
  std::string out = name + " with ";
  for (size_t i = 0; i < overridden.size(); ++i)
    out += (i == 0 ? "" : i + 1 == overridden.size() ? " and " : ", ") + overridden[i];
  return out + " set";
}

}  // namespace dtsim
