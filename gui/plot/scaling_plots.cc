#include "gui/plot/scaling_plots.h"

#include <cmath>
#include <cstdio>

namespace dtsim::plot {
namespace {

std::string number(double v, const char* format = "%g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::vector<Chart> scaling_charts(const driver::ScalingAnalysis& a) {
  const std::string axis = driver::x_axis_name(a.x_key);
  const double x0 = a.points.front().point.x, x_last = a.points.back().point.x;
  const bool log_x = x_last / x0 >= 8;
  const std::string base = number(x0) + (a.x_key == "config.gpus" ? " GPUs" : "");

  Series measured{"measured", {}, {}, SeriesStyle::kLineAndMarkers};
  Series efficiency{"efficiency", {}, {}, SeriesStyle::kLineAndMarkers};
  Series with_failures{"with failures (x goodput)", {}, {}, SeriesStyle::kLineAndMarkers};
  for (const driver::AnalyzedPoint& p : a.points) {
    measured.x.push_back(p.point.x);
    measured.y.push_back(p.speedup);
    efficiency.x.push_back(p.point.x);
    efficiency.y.push_back(p.efficiency * 100);
    with_failures.x.push_back(p.point.x);
    with_failures.y.push_back(p.efficiency_with_failures * 100);
  }
  // The models as smooth curves: 64 points, evenly spaced on the axis as drawn.
  Series ideal{"ideal (S = n)", {}, {}, SeriesStyle::kDashedLine};
  Series amdahl{
      "Amdahl, f = " + number(a.amdahl.serial_fraction, "%.3g"), {}, {}, SeriesStyle::kDashedLine};
  Series gustafson{"Gustafson, f = " + number(a.gustafson.serial_fraction, "%.3g"),
                   {},
                   {},
                   SeriesStyle::kDashedLine};
  constexpr int kSamples = 64;
  for (int i = 0; i <= kSamples; ++i) {
    const double t = static_cast<double>(i) / kSamples;
    const double x = log_x ? x0 * std::pow(x_last / x0, t) : x0 + (x_last - x0) * t;
    const double n = x / x0;
    ideal.x.push_back(x);
    ideal.y.push_back(n);
    amdahl.x.push_back(x);
    amdahl.y.push_back(driver::amdahl_speedup(n, a.amdahl.serial_fraction));
    gustafson.x.push_back(x);
    gustafson.y.push_back(driver::gustafson_speedup(n, a.gustafson.serial_fraction));
  }
  LineChart speedup_chart{
      "Speedup over " + base + " (" + std::string(driver::scaling_kind_name(a.kind)) + " scaling)",
      axis,
      "speedup (x)",
      {ideal, amdahl, gustafson, measured},
      log_x,
      log_x,  // log-log: ideal scaling is the diagonal
      0,
      {}};

  Series full{"ideal (100 %)", {x0, x_last}, {100, 100}, SeriesStyle::kDashedLine};
  LineChart efficiency_chart{
      "Parallel efficiency", axis, "efficiency (%)", {full, efficiency}, log_x, false, 0, {}};
  // Under 8x the x axis is linear: label it at the points swept (16, 24, 32 GPUs), not at
  // evenly spaced values between them (14.08, 27.04).
  if (!log_x) speedup_chart.x_ticks = efficiency_chart.x_ticks = measured.x;
  if (a.failures_modelled) efficiency_chart.series.push_back(with_failures);

  StackedBarChart breakdown{"Where the step time goes", axis, "time per step (s)", {}, {}};
  struct Cause {
    const char* name;
    double driver::ScalingPoint::*seconds;
  };
  const Cause causes[] = {{"compute", &driver::ScalingPoint::compute_s},
                          {"exposed communication", &driver::ScalingPoint::exposed_communication_s},
                          {"pipeline bubble", &driver::ScalingPoint::pipeline_bubble_s},
                          {"straggler wait", &driver::ScalingPoint::straggler_wait_s},
                          {"other", &driver::ScalingPoint::other_s}};
  for (const auto& p : a.points) breakdown.categories.push_back(number(p.point.x));
  for (const Cause& c : causes) {
    StackedBarChart::Layer layer{c.name, {}};
    bool any = false;
    for (const auto& p : a.points) {
      layer.values.push_back(p.point.*c.seconds);
      any = any || p.point.*c.seconds > 0;
    }
    // A cause that is zero everywhere only clutters the legend; compute always shows.
    if (any || breakdown.layers.empty()) breakdown.layers.push_back(std::move(layer));
  }
  return {speedup_chart, efficiency_chart, breakdown};
}

}  // namespace dtsim::plot
