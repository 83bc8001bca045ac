// Checked narrowing of counts derived from user input.
//
// Contract: narrow<To>(v) returns v as To when To holds it exactly, and otherwise throws
// std::logic_error. It is an assertion, not input checking: the loader bounds every count a user
// can give (the schema's ranges, and cross-checks such as micro-batches per replica), so input
// never reaches the throw; if it does, dtsim stops with an internal error instead of computing
// with a wrapped value (2^31 micro-batches becoming -2^31).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace dtsim {

template <class To, class From>
To narrow(From v, const char* what) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  if (!std::in_range<To>(v))
    throw std::logic_error(std::string(what) + " = " + std::to_string(v) +
                           " does not fit the counter that holds it; the loader should have "
                           "refused this input");
  return static_cast<To>(v);
}

}  // namespace dtsim
