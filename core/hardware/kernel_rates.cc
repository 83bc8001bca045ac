#include "core/hardware/kernel_rates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "core/base/error.h"

namespace dtsim {
namespace {

[[noreturn]] void bad_row(const std::string& what, const std::string& source) {
  throw InputError(Diagnostic{SourceLocation{}, "", what + " (row from " + source + ")"});
}

std::string shape_text(const GemmRow& r) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%gx%gx%g", r.m, r.n, r.k);
  return buf;
}

// Piecewise-linear interpolation of y over ascending x, clamped to the end points.
double interpolate(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (at <= x.front()) return y.front();
  if (at >= x.back()) return y.back();
  const size_t hi = std::upper_bound(x.begin(), x.end(), at) - x.begin();
  const size_t lo = hi - 1;
  if (at == x[lo]) return y[lo];
  const double w = (at - x[lo]) / (x[hi] - x[lo]);
  return (1 - w) * y[lo] + w * y[hi];
}

}  // namespace

double wave_efficiency(double batch, double m, double n, int sm_count) {
  if (batch <= 0 || m <= 0 || n <= 0 || sm_count <= 0) return 1.0;
  const double tiles = batch * std::ceil(m / kGemmTileM) * std::ceil(n / kGemmTileN);
  // Tile quantization: partial tiles at the edges compute padding.
  const double useful = batch * m * n;
  const double tile_efficiency = useful / (tiles * kGemmTileM * kGemmTileN);
  // Wave quantization: the last wave of tiles leaves SMs idle.
  const double waves = std::ceil(tiles / sm_count);
  const double wave = tiles / (waves * sm_count);
  return tile_efficiency * wave;
}

GemmCurve GemmCurve::from_rows(std::vector<GemmRow> rows, FlopsPerSecond peak, int sm_count) {
  if (peak.value() <= 0) throw InputError(Diagnostic{{}, "", "a GEMM curve needs a peak rate"});
  for (const GemmRow& r : rows) {
    if (!(r.m > 0 && r.n > 0 && r.k > 0 && std::isfinite(r.m * r.n * r.k)))
      bad_row("GEMM shape " + shape_text(r) + " needs positive finite dimensions", r.source);
    if (!(r.rate.value() > 0) || r.rate.value() > peak.value())
      bad_row("GEMM rate at " + shape_text(r) + " must be positive and at most the peak", r.source);
  }
  std::sort(rows.begin(), rows.end(),
            [](const GemmRow& a, const GemmRow& b) { return a.m * a.n * a.k < b.m * b.n * b.k; });
  GemmCurve c;
  for (const GemmRow& r : rows) {
    const double x = std::log2(2 * r.m * r.n * r.k);
    if (!c.x_.empty() && x == c.x_.back())
      bad_row("two GEMM rows share the FLOPs of " + shape_text(r), r.source);
    c.x_.push_back(x);
    c.y_.push_back(r.rate.value() / (peak.value() * wave_efficiency(1, r.m, r.n, sm_count)));
    c.ceiling_ = std::max(c.ceiling_, r.rate.value() / peak.value());
  }
  c.rows_ = std::move(rows);
  return c;
}

double GemmCurve::wave_free(double x) const {
  return interpolate(x_, y_, x);
}

double GemmCurve::efficiency(double batch, double m, double n, double k, int sm_count) const {
  const double b = batch > 0 ? batch : 1;
  const double x = std::log2(2 * b * m * n * k);
  return std::min(ceiling_, wave_free(x) * wave_efficiency(b, m, n, sm_count));
}

double GemmCurve::plateau() const {
  return y_.empty() ? 0 : *std::max_element(y_.begin(), y_.end());
}

AttentionCurve AttentionCurve::from_rows(std::vector<AttentionRow> rows, FlopsPerSecond peak) {
  if (peak.value() <= 0)
    throw InputError(Diagnostic{{}, "", "an attention curve needs a peak rate"});
  for (const AttentionRow& r : rows) {
    if (!(r.head_dim > 0 && r.seq > 0))
      bad_row("attention rows need a positive head dimension and sequence length", r.source);
    if (!(r.rate.value() > 0) || r.rate.value() > peak.value())
      bad_row("attention rate must be positive and at most the peak", r.source);
  }
  std::sort(rows.begin(), rows.end(), [](const AttentionRow& a, const AttentionRow& b) {
    return std::tie(a.causal, a.head_dim, a.seq) < std::tie(b.causal, b.head_dim, b.seq);
  });
  AttentionCurve c;
  for (const AttentionRow& r : rows) {
    const double lhd = std::log2(r.head_dim);
    if (c.eff_.empty() || c.eff_.back().causal != r.causal || c.eff_.back().log_head_dim != lhd)
      c.eff_.push_back(Series{r.causal, lhd, {}, {}});
    Series& s = c.eff_.back();
    const double x = std::log2(r.seq);
    if (!s.x.empty() && s.x.back() == x) bad_row("two attention rows share one shape", r.source);
    s.x.push_back(x);
    s.y.push_back(r.rate.value() / peak.value());
  }
  c.rows_ = std::move(rows);
  return c;
}

double AttentionCurve::series_at(const Series& s, double x) const {
  return interpolate(s.x, s.y, x);
}

double AttentionCurve::efficiency(double head_dim, double seq, bool causal) const {
  const double lhd = std::log2(std::max(head_dim, 1.0));
  const double x = std::log2(std::max(seq, 1.0));
  const Series* below = nullptr;
  const Series* above = nullptr;
  for (const Series& s : eff_) {
    if (s.causal != causal) continue;
    if (s.log_head_dim <= lhd) below = &s;
    if (s.log_head_dim >= lhd && !above) above = &s;
  }
  if (!below && !above) return 0;
  if (!below) return series_at(*above, x);
  if (!above || above == below) return series_at(*below, x);
  const double w = (lhd - below->log_head_dim) / (above->log_head_dim - below->log_head_dim);
  return (1 - w) * series_at(*below, x) + w * series_at(*above, x);
}

}  // namespace dtsim
