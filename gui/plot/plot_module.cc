// The entry point of the plotting module (libdtsim_plot_module.so) that `dtsim analyze --plot`
// loads on demand (core/base/module_loader.h): the dtsim program does not link Qt, so only the
// runs that draw load it. Every symbol of the static libraries inside stays local to the module.
#include "gui/plot/plot_module.h"

#include <exception>

#include "gui/plot/plot.h"
#include "gui/plot/scaling_plots.h"

extern "C" bool dtsim_plot_scaling_charts(const dtsim::driver::ScalingAnalysis* analysis, bool svg,
                                          std::string* image, std::string* error) {
  try {
    *image = dtsim::plot::render_charts(
        dtsim::plot::scaling_charts(*analysis),
        svg ? dtsim::plot::ImageFormat::kSvg : dtsim::plot::ImageFormat::kPng);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}
