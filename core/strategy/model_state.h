// Bytes of model state per device: weights, gradients and optimizer states.
//
// Contract: follows Rajbhandari et al. 2020 (ZeRO), section 3.1 and Table 1 (docs/reference.md):
// mixed-precision Adam keeps 2 bytes of 16-bit weights, 2 bytes of 16-bit gradients and
// K = 12 bytes of fp32 master weights, momentum and variance per parameter. Other settings
// follow the same accounting:
// - fp32/tf32 training: 4 B weights, 4 B gradients; Adam K = 8 (momentum, variance; the weights
//   are already fp32), SGD with momentum K = 4, Adafactor K = 4 x (factored second moments
//   are O(rows + cols), taken as negligible; its first moment is off by default) -> K = 0.
// - 16-bit and fp8 training: 2 B weights (fp8 GEMMs keep bf16 weights, as Transformer Engine
//   does); fp32 master weights add 4 B to K: Adam K = 12, SGD K = 8, Adafactor K = 4.
// - Gradients take the bytes of training.grad_dtype (bytes_per_element): the paper's 2 B with
//   16-bit gradients, 4 B with fp32 ones, which is Megatron-LM's bf16 default (its distributed
//   optimizer's table, docs/source/distrib_optimizer.md: "bf16 param, fp32 grads" = 2 + 4 + 12 =
//   18 B/param without ZeRO, 6 + 12/d with the optimizer sharded). The optimizer states do not
//   depend on it.
// The ZeRO stage divides optimizer states (stage >= 1), gradients (>= 2) and weights (3) by the
// data-parallel size.
#pragma once

#include "core/base/dtype.h"
#include "core/base/units.h"
#include "core/config/config.h"

namespace dtsim {

struct ModelStateBytes {
  Bytes weights{0};
  Bytes gradients{0};
  Bytes optimizer{0};
  Bytes total() const { return weights + gradients + optimizer; }
};

// Bytes per parameter of the optimizer states (K in the ZeRO paper).
double optimizer_bytes_per_parameter(DType precision, Optimizer optimizer);
// Bytes per parameter of the weights as stored and communicated: 1 with FP8 parameters
// (training.fp8_params), else the training precision's 16 or 32 bits.
double weight_bytes_per_parameter(DType precision, bool fp8_params = false);
// Bytes per parameter of the gradients as accumulated and reduced (training.grad_dtype).
double gradient_bytes_per_parameter(DType grad_dtype);

ModelStateBytes model_state_bytes(double parameters, DType precision, DType grad_dtype,
                                  Optimizer optimizer, int zero_stage, int data_parallel,
                                  bool fp8_params = false);

}  // namespace dtsim
