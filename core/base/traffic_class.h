// TrafficClass: which measured memory efficiency prices a kernel's device-memory traffic.
//
// Contract: a plain tag carried by a kernel (core/ir/model_graph.h Kernel, core/ir/program.h
// ComputeOp) and read by the cost model (core/exec/compute_cost.h), which multiplies the GPU's
// streaming memory efficiency by the class's factor (GpuSpec::traffic, core/hardware/catalog.h;
// 1 for kStreaming and wherever nothing was measured). Kept in base because both the IR and the
// hardware catalog name it and neither may include the other.
#pragma once

#include <cstdint>

namespace dtsim {

// Most kernels reach what a streaming kernel reaches (GpuSpec::memory_efficiency); the unfused
// attention core (batched Q·Kᵀ and probabilities·V GEMMs, scale-mask-softmax, attention dropout)
// was measured to reach less, forward and backward separately.
enum class TrafficClass : uint8_t {
  kStreaming,
  kAttentionCoreForward,     // the batched GEMMs and softmax of the unfused core, forward
  kAttentionCoreBackward,    // their backward kernels
  kAttentionDropoutForward,  // attention dropout forward: draws the mask (Philox) as it streams
};

}  // namespace dtsim
