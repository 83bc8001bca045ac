// The plotting module as a loadable module: its file name and entry point (gui/plot/CMakeLists.txt
// builds it; core/base/module_loader.h explains why). No Qt type appears here.
#pragma once

#include <string>

#include "driver/analysis.h"

namespace dtsim::plot {
inline constexpr const char* kPlotModule = "libdtsim_plot_module.so";
}  // namespace dtsim::plot

// Draws the scaling charts of `analysis` (scaling_charts(), render_charts()) as SVG or PNG into
// `image`; false with `error` set when drawing fails.
extern "C" bool dtsim_plot_scaling_charts(const dtsim::driver::ScalingAnalysis* analysis, bool svg,
                                          std::string* image, std::string* error);
