#include "gui/plot/plot.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <QtGui/QImage>
#include <QtGui/QPainter>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QApplication>
#include <QtWidgets/QGraphicsScene>
#include <QBuffer>
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/base/error.h"
#include "gui/plot/qt_chart.h"

namespace dtsim::plot {
namespace {

QString qs(const std::string& text) { return QString::fromStdString(text); }

// A tidy upper end for an axis: the data's maximum plus a margin, so the top point is not on the
// frame.
double upper_end(double max_value, double min_value) {
  if (!std::isfinite(max_value) || max_value <= min_value) return min_value + 1;
  return max_value + 0.08 * (max_value - min_value);
}

QChart* line_chart(const LineChart& spec) {
  auto* chart = new QChart();
  chart->setTitle(qs(spec.title));
  chart->legend()->setAlignment(Qt::AlignBottom);
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_max = -x_min;
  for (const Series& s : spec.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_max = std::max(y_max, s.y[i]);
    }
  if (!std::isfinite(x_min)) x_min = 1, x_max = 2;

  QAbstractAxis* x_axis = nullptr;
  if (spec.log_x && x_min > 0) {
    auto* log_axis = new QLogValueAxis();
    log_axis->setBase(2);
    log_axis->setLabelFormat("%g");
    // A margin of a tenth of a doubling on either side keeps the end points off the frame.
    log_axis->setRange(x_min / 1.07, x_max * 1.07);
    log_axis->setMinorTickCount(-1);
    x_axis = log_axis;
  } else {
    auto* value_axis = new QValueAxis();
    const double margin = x_max > x_min ? 0.04 * (x_max - x_min) : 0.5;
    value_axis->setRange(x_min - margin, x_max + margin);
    value_axis->setLabelFormat("%g");
    x_axis = value_axis;
  }
  x_axis->setTitleText(qs(spec.x_label));
  auto* y_axis = new QValueAxis();
  y_axis->setRange(spec.y_min, upper_end(y_max, spec.y_min));
  y_axis->setLabelFormat("%g");
  y_axis->setTitleText(qs(spec.y_label));
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);

  for (const Series& s : spec.series) {
    QXYSeries* series = nullptr;
    if (s.style == SeriesStyle::kMarkers) {
      auto* scatter = new QScatterSeries();
      scatter->setMarkerSize(10);
      series = scatter;
    } else {
      auto* line = new QLineSeries();
      if (s.style == SeriesStyle::kLineAndMarkers) line->setPointsVisible(true);
      series = line;
    }
    series->setName(qs(s.name));
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) series->append(s.x[i], s.y[i]);
    chart->addSeries(series);  // takes the theme's next colour
    if (s.style != SeriesStyle::kMarkers) {
      QPen pen = series->pen();
      pen.setWidthF(s.style == SeriesStyle::kLineAndMarkers ? 2.5 : 2);
      if (s.style == SeriesStyle::kDashedLine) pen.setStyle(Qt::DashLine);
      series->setPen(pen);
    }
    series->attachAxis(x_axis);
    series->attachAxis(y_axis);
  }
  return chart;
}

QChart* stacked_bar_chart(const StackedBarChart& spec) {
  auto* chart = new QChart();
  chart->setTitle(qs(spec.title));
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* bars = new QStackedBarSeries();
  std::vector<double> totals(spec.categories.size(), 0);
  for (const auto& layer : spec.layers) {
    auto* set = new QBarSet(qs(layer.name));
    for (size_t i = 0; i < spec.categories.size(); ++i) {
      const double v = i < layer.values.size() && std::isfinite(layer.values[i]) ? layer.values[i]
                                                                                 : 0;
      *set << v;
      totals[i] += v;
    }
    bars->append(set);
  }
  chart->addSeries(bars);
  auto* x_axis = new QBarCategoryAxis();
  for (const auto& c : spec.categories) x_axis->append(qs(c));
  x_axis->setTitleText(qs(spec.x_label));
  auto* y_axis = new QValueAxis();
  const double top = totals.empty() ? 1 : *std::max_element(totals.begin(), totals.end());
  y_axis->setRange(0, upper_end(top, 0));
  y_axis->setLabelFormat("%g");
  y_axis->setTitleText(qs(spec.y_label));
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  bars->attachAxis(x_axis);
  bars->attachAxis(y_axis);
  return chart;
}

}  // namespace

void ensure_application() {
  if (QCoreApplication::instance()) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
      throw RuntimeError("plotting needs a QApplication, and a plain QCoreApplication is running");
    return;
  }
  // Writing a file needs no display, so dtsim's own application always takes the offscreen
  // platform: an X or Wayland platform would abort the process when DISPLAY is unset or stale.
  // The command-line form wins over QT_QPA_PLATFORM. QApplication keeps argc and argv by
  // reference, hence the statics; it lives until the process ends, as Qt expects.
  static int argc = 3;
  static char program[] = "dtsim", flag[] = "-platform", platform[] = "offscreen";
  static char* argv[] = {program, flag, platform, nullptr};
  static QApplication* application = new QApplication(argc, argv);
  (void)application;
}

QChart* make_qchart(const Chart& chart) {
  return std::visit(
      [](const auto& spec) -> QChart* {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, LineChart>)
          return line_chart(spec);
        else
          return stacked_bar_chart(spec);
      },
      chart);
}

std::string render_charts(const std::vector<Chart>& charts, ImageFormat format,
                          const PageOptions& page) {
  ensure_application();
  const int width = page.width_px;
  const int height = page.chart_height_px * std::max<int>(1, static_cast<int>(charts.size()));
  QGraphicsScene scene;  // owns the charts and deletes them
  scene.setSceneRect(0, 0, width, height);
  scene.setBackgroundBrush(Qt::white);
  for (size_t i = 0; i < charts.size(); ++i) {
    QChart* chart = make_qchart(charts[i]);
    chart->setAnimationOptions(QChart::NoAnimation);
    scene.addItem(chart);
    chart->setGeometry(QRectF(0, static_cast<double>(i) * page.chart_height_px, width,
                              page.chart_height_px));
  }
  // Lays the charts out (axes, legends) before they are painted; there is no event loop here.
  QCoreApplication::processEvents();

  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  const QRectF target(0, 0, width, height);
  if (format == ImageFormat::kSvg) {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle("dtsim plot");
    QPainter painter;
    if (!painter.begin(&svg)) throw RuntimeError("cannot start drawing the SVG");
    painter.fillRect(target, Qt::white);
    scene.render(&painter, target, scene.sceneRect());
    painter.end();
  } else {
    QImage image(width, height, QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    scene.render(&painter, target, scene.sceneRect());
    painter.end();
    if (!image.save(&buffer, "PNG")) throw RuntimeError("cannot encode the PNG image");
  }
  buffer.close();
  return std::string(bytes.constData(), static_cast<size_t>(bytes.size()));
}

}  // namespace dtsim::plot
