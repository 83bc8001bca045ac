// Published single-device kernel benchmarks, row by row with their sources, attached to the
// catalog's GPUs (core/hardware/kernel_rates.h says how a row becomes a rate at other shapes).
//
// Contract:
// - attach_published_rates(gpu) fills gpu.gemm_curve and gpu.attention_curve for the GPUs that
//   have published sweeps (A100 SXM, H100 SXM, H200 SXM) and leaves every other GPU as it is.
// - Every row is a microbenchmark of one kernel on one device; none is a training run.
//   docs/evidence/kernel-benchmark-sources.md describes each source's method and caveats.
// - A100 has no FP8 tensor cores, so it has no FP8 rows; FP16 uses the BF16 rows (the same tensor
//   peak on every GPU here).
#pragma once

#include "core/hardware/catalog.h"

namespace dtsim {

void attach_published_rates(GpuSpec& gpu);

}  // namespace dtsim
