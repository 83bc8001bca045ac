// Qt side of the plotting module: a Chart (gui/plot/plot.h) as a QChart, for the GUI's chart
// views and for render_charts(). Only code under gui/ includes this header.
//
// Contract: make_qchart() returns a new QChart that the caller owns (a QChartView or a scene
// takes it over); it needs a QApplication. ensure_application() makes sure one exists: the
// running one, or one on the offscreen platform (no display needed).
#pragma once

#include <QtCharts/QChart>

#include "gui/plot/plot.h"

namespace dtsim::plot {

QChart* make_qchart(const Chart& chart);

// The running QApplication, or a new one on the offscreen platform that lives until the process
// ends. Throws RuntimeError when a QCoreApplication that is not a QApplication is running.
void ensure_application();

}  // namespace dtsim::plot
