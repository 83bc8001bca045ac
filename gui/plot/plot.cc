#include "gui/plot/plot.h"

#include <QBuffer>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
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
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/base/error.h"
#include "gui/plot/qt_chart.h"

namespace dtsim::plot {
namespace {

QString qs(const std::string& text) {
  return QString::fromStdString(text);
}

// A tidy upper end for an axis: the data's maximum plus a margin, so the top point is not on the
// frame.
double upper_end(double max_value, double min_value) {
  if (!std::isfinite(max_value) || max_value <= min_value) return min_value + 1;
  return max_value + 0.08 * (max_value - min_value);
}

// A base-2 logarithmic axis over [low, high], with a margin of a tenth of a doubling on either
// side so that the end points stay off the frame.
QAbstractAxis* log_axis(double low, double high) {
  auto* axis = new QLogValueAxis();
  axis->setBase(2);
  axis->setLabelFormat("%g");
  axis->setRange(low / 1.07, high * 1.07);
  axis->setMinorTickCount(-1);
  return axis;
}

// A linear axis: from `low` to above `high` with round tick values when `from_low` (a value
// axis that starts at a meaningful 0), else over [low, high] with a small margin.
QAbstractAxis* linear_axis(double low, double high, bool from_low) {
  auto* axis = new QValueAxis();
  if (from_low) {
    axis->setRange(low, upper_end(high, low));
    axis->applyNiceNumbers();
  } else {
    const double margin = high > low ? 0.04 * (high - low) : 0.5;
    axis->setRange(low - margin, high + margin);
  }
  axis->setLabelFormat("%g");
  return axis;
}

// A linear axis like linear_axis(low, high, false) labelled at `ticks` only.
QAbstractAxis* ticked_axis(double low, double high, const std::vector<double>& ticks) {
  auto* axis = new QCategoryAxis();
  const double margin = high > low ? 0.04 * (high - low) : 0.5;
  axis->setRange(low - margin, high + margin);
  axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  axis->setStartValue(low - margin);
  for (double t : ticks) {
    char label[32];
    std::snprintf(label, sizeof label, "%g", t);
    axis->append(label, t);
  }
  return axis;
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

  double y_low = std::numeric_limits<double>::infinity();
  for (const Series& s : spec.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.y[i]) && s.y[i] > 0) y_low = std::min(y_low, s.y[i]);
  QAbstractAxis* x_axis = spec.log_x && x_min > 0 ? log_axis(x_min, x_max)
                          : spec.x_ticks.empty()  ? linear_axis(x_min, x_max, false)
                                                  : ticked_axis(x_min, x_max, spec.x_ticks);
  QAbstractAxis* y_axis = spec.log_y && std::isfinite(y_low) ? log_axis(y_low, y_max)
                                                             : linear_axis(spec.y_min, y_max, true);
  x_axis->setTitleText(qs(spec.x_label));
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
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      // A logarithmic axis has no place for zero or below.
      if ((spec.log_x && s.x[i] <= 0) || (spec.log_y && s.y[i] <= 0)) continue;
      series->append(s.x[i], s.y[i]);
    }
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
      const double v =
          i < layer.values.size() && std::isfinite(layer.values[i]) ? layer.values[i] : 0;
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
  y_axis->applyNiceNumbers();
  y_axis->setLabelFormat("%g");
  y_axis->setTitleText(qs(spec.y_label));
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  bars->attachAxis(x_axis);
  bars->attachAxis(y_axis);
  return chart;
}

// Qt's messages in dtsim's own application: the one that says XDG_RUNTIME_DIR is unset (Qt then
// uses /tmp/runtime-USER, which is fine for drawing a file) is dropped; the rest reach stderr
// marked as Qt's, so that a missing font or plugin still shows.
void forward_qt_message(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (type == QtDebugMsg || type == QtInfoMsg) return;
  if (message.startsWith("QStandardPaths: XDG_RUNTIME_DIR")) return;
  std::fprintf(stderr, "warning: Qt: %s\n", message.toLocal8Bit().constData());
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
  qInstallMessageHandler(forward_qt_message);
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
    chart->setGeometry(
        QRectF(0, static_cast<double>(i) * page.chart_height_px, width, page.chart_height_px));
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
