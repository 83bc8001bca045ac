// The plotting module of dtsim: charts described as plain values, drawn with Qt 6 Charts into
// SVG or PNG bytes. `dtsim analyze --plot` and the desktop GUI draw through it, so a chart looks
// the same in a file and on screen.
//
// Contract:
// - This header holds no Qt type (docs/style.md: Qt types never leave gui/), so the CLI includes
//   it; gui/plot/qt_chart.h turns a Chart into a QChart for a widget.
// - render_charts() draws the charts one above the other on one page of width_px by
//   chart_height_px * charts.size() pixels (the SVG's view box has the same size), on a white
//   background, and returns the file's bytes. It needs a QApplication: it uses the running one
//   (the GUI's), or creates one on Qt's offscreen platform, which needs no display.
// - Values are drawn as given; a chart's units are in its axis labels.
// - Not thread-safe: call it from the thread that owns (or will own) the QApplication.
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace dtsim::plot {

enum class SeriesStyle {
  kLine,            // measured or modelled values joined by a solid line
  kDashedLine,      // a model or a reference curve
  kMarkers,         // points only
  kLineAndMarkers,  // measurements: points joined by a line
};

struct Series {
  std::string name;  // the legend's text
  std::vector<double> x, y;
  SeriesStyle style = SeriesStyle::kLine;
};

// Series over a numeric x axis.
struct LineChart {
  std::string title, x_label, y_label;  // labels carry the units: "speedup (x baseline)"
  std::vector<Series> series;
  bool log_x = false;  // base-2 logarithmic x axis (doubling GPU counts are evenly spaced)
  bool log_y = false;  // base-2 logarithmic y axis (ideal speedup is then a straight line)
  double y_min = 0;    // a linear y axis starts here (0 keeps ratios honest) and ends above the
                       // data; a logarithmic one spans the data
  // A linear x axis labelled at these values only (the data's GPU counts) instead of evenly
  // spaced round numbers; empty for the latter.
  std::vector<double> x_ticks;
};

// One bar per category, split into layers stacked bottom to top.
struct StackedBarChart {
  struct Layer {
    std::string name;
    std::vector<double> values;  // one per category
  };
  std::string title, x_label, y_label;
  std::vector<std::string> categories;  // bar labels, left to right
  std::vector<Layer> layers;
};

using Chart = std::variant<LineChart, StackedBarChart>;

enum class ImageFormat { kSvg, kPng };

struct PageOptions {
  int width_px = 960;
  int chart_height_px = 520;
};

// The file's bytes: charts one above the other (see the contract).
std::string render_charts(const std::vector<Chart>& charts, ImageFormat format,
                          const PageOptions& page = {});

}  // namespace dtsim::plot
