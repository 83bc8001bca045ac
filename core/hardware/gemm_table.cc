#include "core/hardware/gemm_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/base/error.h"

namespace dtsim {
namespace {

std::string whole(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string shape_text(double m, double n, double k) {
  return "m=" + whole(m) + " n=" + whole(n) + " k=" + whole(k);
}

std::string values_text(const std::vector<double>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + whole(values[i]);
  return out + "}";
}

[[noreturn]] void reject(const std::string& message) {
  throw InputError(Diagnostic{SourceLocation{}, "", message});
}

bool valid_dimension(double v) {
  return std::isfinite(v) && v >= 1 && v == std::floor(v);
}

// Where x falls on an ascending axis: the lower grid index and the weight of the next one, in
// log2 space. Outside the axis (or on a one-value axis) the edge index with weight 0, which is the
// clamp; on a grid value its own index with weight exactly 0, so grid points reproduce exactly.
struct AxisPosition {
  size_t lower = 0;
  double weight = 0;  // of lower + 1, in [0, 1)
};

AxisPosition locate(const std::vector<double>& axis, double x) {
  if (!(x > axis.front())) return {0, 0};  // also NaN: the smallest shape
  if (x >= axis.back()) return {axis.size() - 1, 0};
  const size_t upper = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x) -
                                           axis.begin());  // axis[upper - 1] <= x < axis[upper]
  const size_t lower = upper - 1;
  if (x == axis[lower]) return {lower, 0};
  const double lo = std::log2(axis[lower]), hi = std::log2(axis[upper]);
  return {lower, std::clamp((std::log2(x) - lo) / (hi - lo), 0.0, 1.0)};
}

// a at weight 0, b at weight 1, and never outside [min(a, b), max(a, b)], so that rounding cannot
// carry an interpolated rate past its corners.
double lerp(double a, double b, double w) {
  if (w == 0) return a;
  const double v = a + w * (b - a);
  return std::clamp(v, std::min(a, b), std::max(a, b));
}

}  // namespace

GemmTable GemmTable::from_samples(const std::vector<GemmPoint>& samples) {
  if (samples.empty()) reject("the GEMM table has no samples");
  std::map<std::tuple<double, double, double>, FlopsPerSecond> by_shape;
  for (const GemmPoint& p : samples) {
    for (auto [name, v] : {std::pair{"m", p.m}, std::pair{"n", p.n}, std::pair{"k", p.k}})
      if (!valid_dimension(v))
        reject(std::string("a GEMM sample's ") + name +
               " must be a whole number of at least 1, found " + format_number("%g", v));
    if (!std::isfinite(p.rate.value()) || p.rate.value() <= 0)
      reject("the GEMM sample at " + shape_text(p.m, p.n, p.k) +
             " needs a positive, finite rate, found " + format_flop_rate(p.rate));
    if (!by_shape.emplace(std::tuple{p.m, p.n, p.k}, p.rate).second)
      reject("the GEMM sample at " + shape_text(p.m, p.n, p.k) + " is given twice");
  }
  GemmTable t;
  for (const auto& [shape, rate] : by_shape) {
    t.m_.push_back(std::get<0>(shape));
    t.n_.push_back(std::get<1>(shape));
    t.k_.push_back(std::get<2>(shape));
  }
  for (auto* axis : {&t.m_, &t.n_, &t.k_}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  // Every m x n x k must be measured: a missing corner would leave interpolation undefined.
  t.rates_.reserve(t.m_.size() * t.n_.size() * t.k_.size());
  for (double m : t.m_)
    for (double n : t.n_)
      for (double k : t.k_) {
        auto it = by_shape.find(std::tuple{m, n, k});
        if (it == by_shape.end())
          reject("the GEMM grid is not complete: m in " + values_text(t.m_) + ", n in " +
                 values_text(t.n_) + " and k in " + values_text(t.k_) +
                 " need every combination measured, and " + shape_text(m, n, k) + " is missing");
        t.rates_.push_back(it->second);
      }
  return t;
}

FlopsPerSecond GemmTable::rate(double m, double n, double k) const {
  if (empty()) throw std::logic_error("GemmTable::rate on an empty table");
  const AxisPosition pm = locate(m_, m), pn = locate(n_, n), pk = locate(k_, k);
  // Corner indices: on an edge (weight 0) the upper corner is never weighed, so it may repeat the
  // lower one.
  auto next = [](const AxisPosition& p, const std::vector<double>& axis) {
    return std::min(p.lower + 1, axis.size() - 1);
  };
  const size_t i0 = pm.lower, i1 = next(pm, m_);
  const size_t j0 = pn.lower, j1 = next(pn, n_);
  const size_t l0 = pk.lower, l1 = next(pk, k_);
  auto along_k = [&](size_t i, size_t j) {
    return lerp(at(i, j, l0).value(), at(i, j, l1).value(), pk.weight);
  };
  auto along_n = [&](size_t i) { return lerp(along_k(i, j0), along_k(i, j1), pn.weight); };
  return FlopsPerSecond(lerp(along_n(i0), along_n(i1), pm.weight));
}

FlopsPerSecond GemmTable::rate_at_largest() const {
  if (empty()) throw std::logic_error("GemmTable::rate_at_largest on an empty table");
  return rates_.back();  // m-major order ends at the largest m, n and k
}

FlopsPerSecond GemmTable::best_rate() const {
  if (empty()) return FlopsPerSecond(0);
  return *std::max_element(rates_.begin(), rates_.end());
}

std::vector<GemmPoint> GemmTable::points() const {
  std::vector<GemmPoint> out;
  out.reserve(rates_.size());
  for (size_t i = 0; i < m_.size(); ++i)
    for (size_t j = 0; j < n_.size(); ++j)
      for (size_t l = 0; l < k_.size(); ++l) out.push_back({m_[i], n_[j], k_[l], at(i, j, l)});
  return out;
}

}  // namespace dtsim
