// The rows. Rates are in TFLOP/s as published (2 m n k over the kernel's time); where a source
// prints a table the row quotes it, and the source string says which table.
#include "core/hardware/published_rates.h"

#include <string>
#include <vector>

namespace dtsim {
namespace {

using namespace unit_literals;

// --- GEMM sources ---------------------------------------------------------------------------

// triton-lang/triton GitHub thread #7085 (2025-06-06), "release3.3 03-matrix-multiplication
// performance drop on A100": the tutorial's square sweep, cuBLAS column, FP16 (A100's FP16 and BF16
// tensor peaks are both 312 TFLOP/s).
constexpr const char* kTriton7085 =
    "triton-lang/triton GitHub thread #7085 (2025-06-06): tutorial 03 square sweep on A100, cuBLAS "
    "FP16";
// triton-lang/triton GitHub thread #6523, comment of 2025-11-25 (Triton 3.5.1): the same sweep,
// larger sizes, cuBLAS column, FP16 on A100 (variant not stated).
constexpr const char* kTriton6523 =
    "triton-lang/triton GitHub thread #6523 (comment 2025-11-25): tutorial 03 square sweep on "
    "A100, cuBLAS "
    "FP16";
// Bekman, ML Engineering (stas00/ml-engineering), compute/accelerator/README.md, "Maximum
// Achievable Matmul FLOPS": the best shape of a torch.mm sweep, mean of 100 iterations after an L2
// flush. The current table is at commit 744d01e18b; the 2024 A100 row is from 970d8bc4c6.
constexpr const char* kMamfA100 =
    "Bekman MAMF table (stas00/ml-engineering 744d01e18b): A100 SXM BF16 best shape, torch 2.6.0";
constexpr const char* kMamfA100Cuda121 =
    "Bekman MAMF table at stas00/ml-engineering 970d8bc4c6 (2024-08-06): A100 SXM BF16, CUDA 12.1";
constexpr const char* kMamfH100 =
    "Bekman MAMF table (stas00/ml-engineering 744d01e18b): H100 SXM BF16 best shape, torch 2.7.0 "
    "(the table notes H200 is the same)";
constexpr const char* kMamfH100Fp8 =
    "Bekman MAMF table (stas00/ml-engineering 744d01e18b): H100 SXM FP8 e4m3 best shape, torch "
    "2.7.0";
constexpr const char* kMamfH200Fp8 =
    "Bekman MAMF table (stas00/ml-engineering 744d01e18b): H200 SXM FP8 e4m3 best shape, torch "
    "2.7.1";
// zzc0721/torch-performance-test-data GitHub thread #79 (2025-10-18): square torch.matmul on an
// H100 80GB HBM3, torch 2.7.0+cu128, 10 warm-up and 30 timed iterations, CUDA events, mean.
constexpr const char* kSquareH100 =
    "zzc0721/torch-performance-test-data GitHub thread #79 (2025-10-18): H100 80GB HBM3 square "
    "BF16 "
    "torch.matmul, torch 2.7.0";
// deepseek-ai/DeepGEMM README at 55ab91f72f (2025-03-25), "Performance", dense GEMMs on an
// H800 SXM5 (H100 SXM compute: 1979 TFLOP/s FP8) with NVCC 12.8, FP8 e4m3 with 1x128 / 128x128
// block scaling; kineto kernel time with the L2 flushed. Only the M = 4096 rows are here: the
// M = 64 and 128 rows are memory-bound (the roofline's memory side), and K = 512 spends most of
// its time outside the main loop, which a FLOPs index cannot tell apart from a large-K GEMM.
constexpr const char* kDeepGemm =
    "deepseek-ai/DeepGEMM README at 55ab91f72f: H800 SXM5 dense FP8 (block-scaled), NVCC 12.8";
// triton-lang/triton PR #3546 (2024-04-03), "Improve fp8 performance in matmul tutorial",
// results on H100 (variant not stated): Triton's own FP8 kernel, square shapes; the only small-size
// FP8 sweep found, and a lower bound on what cuBLAS reaches there.
constexpr const char* kTritonFp8 =
    "triton-lang/triton PR #3546 (2024-04-03): tutorial square sweep on H100, Triton FP8 kernel";

GemmRow square(double n, double tflops, const char* source) {
  return GemmRow{n, n, n, FlopsPerSecond(tflops * 1e12), source};
}
GemmRow row(double m, double n, double k, double tflops, const char* source) {
  return GemmRow{m, n, k, FlopsPerSecond(tflops * 1e12), source};
}

std::vector<GemmRow> a100_bf16() {
  return {
      square(256, 3.28, kTriton7085),
      square(512, 23.83, kTriton7085),
      square(768, 58.98, kTriton7085),
      square(1024, 99.86, kTriton7085),
      square(1152, 129.83, kTriton7085),
      square(1536, 141.56, kTriton6523),
      square(2048, 143.40, kTriton6523),
      square(2560, 161.42, kTriton6523),
      square(2944, 176.10, kTriton6523),
      row(1024, 10240, 5120, 271.2, kMamfA100),
      row(6912, 16384, 2048, 267.9, kMamfA100Cuda121),
  };
}

std::vector<GemmRow> h100_bf16() {
  return {
      square(1024, 176.62, kSquareH100),        square(2048, 676.59, kSquareH100),
      row(2048, 2048, 13312, 794.5, kMamfH100), square(4096, 788.72, kSquareH100),
      square(8192, 797.51, kSquareH100),        square(10240, 719.72, kSquareH100),
  };
}

std::vector<GemmRow> hopper_fp8(GemmRow best_shape) {
  return {
      square(1024, 37.88, kTritonFp8),
      square(2048, 280.57, kTritonFp8),
      square(3072, 961.24, kTritonFp8),
      row(4096, 7168, 2048, 1168, kDeepGemm),
      row(4096, 2112, 7168, 1009, kDeepGemm),
      row(4096, 4096, 7168, 1265, kDeepGemm),
      best_shape,
      row(4096, 24576, 1536, 1125, kDeepGemm),
      row(4096, 7168, 16384, 1426, kDeepGemm),
  };
}

// --- Attention sources ----------------------------------------------------------------------

// Dao-AILab/flash-attention, assets/flash2_a100_fwd_bwd_benchmark.png and
// flash2_h100_fwd_bwd_benchmark.png (added at 4f285b3547, 2023-07-17; the FlashAttention-2
// paper's figure 4): FlashAttention-2 forward + backward, FP16/BF16, batch x seqlen = 16k, hidden
// 2048, head dimension 64 or 128, read from the bar labels. Causal runs count half the square.
constexpr const char* kFa2A100 =
    "Dao-AILab/flash-attention assets/flash2_a100_fwd_bwd_benchmark.png (4f285b3547): "
    "FlashAttention-2 fwd+bwd on A100 80GB SXM4";
constexpr const char* kFa2H100 =
    "Dao-AILab/flash-attention assets/flash2_h100_fwd_bwd_benchmark.png (4f285b3547): "
    "FlashAttention-2 fwd+bwd on H100 80GB SXM5";

std::vector<AttentionRow> series(double head_dim, bool causal, std::vector<double> seqs,
                                 std::vector<double> tflops, const char* source) {
  std::vector<AttentionRow> out;
  for (size_t i = 0; i < seqs.size(); ++i)
    out.push_back(
        AttentionRow{head_dim, causal, seqs[i], FlopsPerSecond(tflops[i] * 1e12), source});
  return out;
}

std::vector<AttentionRow> join(std::vector<std::vector<AttentionRow>> parts) {
  std::vector<AttentionRow> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<double> kSeq{512, 1024, 2048, 4096, 8192, 16384};

std::vector<AttentionRow> a100_attention() {
  return join({
      series(64, false, kSeq, {132, 153, 162, 171, 175, 176}, kFa2A100),
      // The 512-token bar is hidden behind the legend.
      series(128, false, {1024, 2048, 4096, 8192, 16384}, {173, 187, 196, 201, 203}, kFa2A100),
      series(64, true, kSeq, {88, 119, 140, 156, 165, 171}, kFa2A100),
      series(128, true, kSeq, {99, 133, 155, 173, 182, 189}, kFa2A100),
  });
}

std::vector<AttentionRow> h100_attention() {
  return join({
      series(64, false, kSeq, {215, 254, 274, 288, 294, 296}, kFa2H100),
      series(128, false, kSeq, {248, 294, 320, 326, 335, 338}, kFa2H100),
      series(64, true, kSeq, {141, 192, 232, 257, 273, 284}, kFa2H100),
      series(128, true, kSeq, {163, 221, 265, 294, 308, 328}, kFa2H100),
  });
}

// --- Memory traffic of the unfused attention core ------------------------------------------

// Dao et al. 2022, "FlashAttention" (arXiv 2205.14135v2), appendix E.6, the "Megatron" rows of
// Tables 15, 16, 18 and 19: Megatron-LM's unfused attention core (batched Q·Kᵀ, scale-softmax,
// dropout 0.1, probabilities·V) alone, forward and backward, FP16, 16 sequences x 8 heads of
// dimension 64, on one A100 40GB (1555 GB/s), mean of 100 calls; at 2048 tokens, forward 4.28 ms
// without dropout (Table 18) and 6.56 ms with it (Table 15), backward 8.86 ms (Table 19) and
// 10.80 ms (Table 16). The same device's streaming kernel reaches 0.89 of 1555 GB/s (the
// catalog's A100-SXM-40GB memory_efficiency, te42kyfo/gpu-benches gpu-stream).
constexpr const char* kFaMegatron =
    "Dao et al. 2022 (FlashAttention, arXiv 2205.14135v2), appendix E.6 Tables 15/16/18/19, "
    "Megatron rows at 2048 tokens: unfused attention core on A100 40GB";

// Each factor is the bandwidth the kernels reach by dtsim's own traffic count
// (models/transformer.cc: each batched GEMM moves e·(N_q + N_kv + N_s), softmax 2e·N_s forward
// and 3e·N_s backward, dropout (2e + 1)·N_s each way) over a streaming kernel's. The dropout
// kernel's time is the difference between the runs with and without dropout. The s² traffic
// dominates (N_s is 64x N_q here), so the GEMMs are memory-bound at this shape.
GpuSpec::TrafficFactors unfused_attention_a100() {
  const double b = 16, a = 8, s = 2048, d = 64, e = 2;
  const double n_q = b * s * a * d, n_s = b * a * s * s;
  const double gemm = e * (2 * n_q + n_s);         // Q·Kᵀ, and P·V, and each backward GEMM
  const double core_fwd = 2 * gemm + 2 * e * n_s;  // two GEMMs and the softmax
  const double core_bwd = 4 * gemm + 3 * e * n_s;  // four GEMMs and the softmax backward
  const double dropout = (2 * e + 1) * n_s;
  const double stream = 1555e9 * 0.89;  // bytes/s a streaming kernel reaches
  auto factor = [&](double bytes, double ms) { return bytes / (ms * 1e-3) / stream; };
  GpuSpec::TrafficFactors f;
  f.attention_core_forward = factor(core_fwd, 4.28);           // 0.748
  f.attention_core_backward = factor(core_bwd, 8.86);          // 0.635
  f.attention_dropout_forward = factor(dropout, 6.56 - 4.28);  // 0.851
  // Backward dropout, (10.80 - 8.86) ms, streams at 1.000 of the streaming kernel: no factor.
  f.source = kFaMegatron;
  return f;
}

void set_curves(GpuSpec& gpu, DType dtype, const std::vector<GemmRow>& gemm,
                const std::vector<AttentionRow>& attention) {
  const FlopsPerSecond peak = gpu.peak_for(dtype);
  gpu.gemm_curve[dtype] = GemmCurve::from_rows(gemm, peak, gpu.sm_count);
  if (!attention.empty()) gpu.attention_curve[dtype] = AttentionCurve::from_rows(attention, peak);
}

}  // namespace

void attach_published_rates(GpuSpec& gpu) {
  if (gpu.name == "A100-SXM-80GB" || gpu.name == "A100-SXM-40GB") {
    // MAMF's row says "A100 SXM" without the memory size: GEMM rates do not depend on it.
    for (DType t : {DType::kBf16, DType::kFp16}) set_curves(gpu, t, a100_bf16(), a100_attention());
    // A factor of the streaming kernel on the same device, so it carries over to the 80GB
    // part's HBM2e (whose streaming efficiency the catalog has from the same benchmark).
    gpu.traffic = unfused_attention_a100();
  } else if (gpu.name == "H100-SXM") {
    for (DType t : {DType::kBf16, DType::kFp16}) set_curves(gpu, t, h100_bf16(), h100_attention());
    set_curves(gpu, DType::kFp8, hopper_fp8(row(1024, 9216, 14336, 1402.6, kMamfH100Fp8)), {});
  } else if (gpu.name == "H200-SXM") {
    // The H200 is the H100 SXM's die at the same clocks and power: the MAMF table says its BF16
    // best is the same, and its faster HBM does not move a compute-bound kernel. The attention
    // rows are the H100's for the same reason.
    for (DType t : {DType::kBf16, DType::kFp16}) set_curves(gpu, t, h100_bf16(), h100_attention());
    set_curves(gpu, DType::kFp8, hopper_fp8(row(1280, 4096, 12032, 1453.4, kMamfH200Fp8)), {});
  }
}

}  // namespace dtsim
