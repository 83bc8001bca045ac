// Numeric formats that training computes and communicates in.
#pragma once

#include <string_view>

#include "core/base/enum_table.h"

namespace dtsim {

enum class DType { kFp32, kTf32, kFp16, kBf16, kFp8 };
inline constexpr auto kDTypeNames = make_enum_table<DType>({{DType::kFp32, "fp32"},
                                                            {DType::kTf32, "tf32"},
                                                            {DType::kFp16, "fp16"},
                                                            {DType::kBf16, "bf16"},
                                                            {DType::kFp8, "fp8"}});
constexpr std::string_view to_string(DType t) {
  return kDTypeNames.to_string(t);
}

// Storage size of one element in bytes. TF32 is stored as FP32.
constexpr double bytes_per_element(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kTf32:
      return 4.0;
    case DType::kFp16:
    case DType::kBf16:
      return 2.0;
    case DType::kFp8:
      return 1.0;
  }
  return 4.0;
}

// Bytes of one stored activation, weight or gradient element when training at this precision:
// fp32/tf32 training keeps 4-byte tensors; fp16, bf16 and fp8 training keep 16-bit ones (fp8
// runs only the GEMMs in 8 bits, as Transformer Engine does; Korthikanti et al. 2022's 2-byte
// accounting).
constexpr double training_bytes_per_element(DType t) {
  return t == DType::kFp32 || t == DType::kTf32 ? 4.0 : 2.0;
}

}  // namespace dtsim
