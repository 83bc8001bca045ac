// The three charts of a scaling analysis (driver/analysis.h), for `dtsim analyze --plot` and the
// GUI's scaling view:
//   1. speedup against x: the measured points, ideal scaling (S = n), and the fitted Amdahl and
//      Gustafson curves;
//   2. efficiency against x (percent), and with failures where they are modelled;
//   3. the step time broken down by cause (seconds per step), one stacked bar per point.
// Plain values only (gui/plot/plot.h). When x spans a factor of 8 or more, the x axes are base-2
// logarithmic, and the speedup chart is log-log (ideal scaling is its diagonal).
#pragma once

#include <vector>

#include "driver/analysis.h"
#include "gui/plot/plot.h"

namespace dtsim::plot {

std::vector<Chart> scaling_charts(const driver::ScalingAnalysis& analysis);

}  // namespace dtsim::plot
