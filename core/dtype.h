// Numeric formats that training computes and communicates in.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dtsim {

enum class DType { kFp32, kTf32, kFp16, kBf16, kFp8 };

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

std::string_view to_string(DType t);  // "fp32", "tf32", "fp16", "bf16", "fp8"
std::optional<DType> dtype_from_string(std::string_view s);

}  // namespace dtsim
