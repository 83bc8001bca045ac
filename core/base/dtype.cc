#include "core/base/dtype.h"

namespace dtsim {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp8:
      return "fp8";
  }
  return "fp32";
}

std::optional<DType> dtype_from_string(std::string_view s) {
  for (DType t : {DType::kFp32, DType::kTf32, DType::kFp16, DType::kBf16, DType::kFp8})
    if (to_string(t) == s) return t;
  return std::nullopt;
}

}  // namespace dtsim
