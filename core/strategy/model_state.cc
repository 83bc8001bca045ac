#include "core/strategy/model_state.h"

namespace dtsim {

double weight_bytes_per_parameter(DType precision, bool fp8_params) {
  // FP8 parameters (Transformer Engine's fp8_model_init, Megatron-core --fp8-param-gather): the
  // model's weights are FP8 tensors, one byte each; the optimizer keeps its fp32 master copy.
  if (fp8_params) return 1.0;
  return training_bytes_per_element(precision);
}

double gradient_bytes_per_parameter(DType grad_dtype) {
  return bytes_per_element(grad_dtype);
}

double optimizer_bytes_per_parameter(DType precision, Optimizer optimizer) {
  // fp32 master weights, unless the training tensors are fp32 already.
  const double master = training_bytes_per_element(precision) < 4 ? 4.0 : 0.0;
  switch (optimizer) {
    case Optimizer::kAdam:
      return master + 8.0;
    case Optimizer::kSgd:
      return master + 4.0;
    case Optimizer::kAdafactor:
      return master;
  }
  return master + 8.0;
}

ModelStateBytes model_state_bytes(double parameters, DType precision, DType grad_dtype,
                                  Optimizer optimizer, int zero_stage, int data_parallel,
                                  bool fp8_params) {
  const double nd = data_parallel > 0 ? data_parallel : 1;
  const double w = weight_bytes_per_parameter(precision, fp8_params) * parameters;
  const double g = gradient_bytes_per_parameter(grad_dtype) * parameters;
  const double k = optimizer_bytes_per_parameter(precision, optimizer) * parameters;
  ModelStateBytes m;
  m.weights = Bytes(zero_stage >= 3 ? w / nd : w);
  m.gradients = Bytes(zero_stage >= 2 ? g / nd : g);
  m.optimizer = Bytes(zero_stage >= 1 ? k / nd : k);
  return m;
}

}  // namespace dtsim
