#include "gui/views/timeline_view.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

namespace dtsim::gui {
namespace {

constexpr int kLabelWidth = 210;   // lane names
constexpr int kAxisHeight = 24;    // time ticks
constexpr int kLaneHeight = 18;    // one lane, with a pixel of space above and below its spans
constexpr int kLegendHeight = 26;  // the kinds' colours
constexpr double kZoomStep = 1.25;
constexpr double kSeparatedWidth = 4;       // px: spans this wide show a gap to their neighbour
constexpr double kShortestRange_us = 0.01;  // 10 ns across the view: below any kernel
constexpr double kMargin = 0.05;            // users may pan this far past either end

// Colours chosen to stay apart for common colour blindness (a muted categorical palette);
// waiting kinds are pale so that work stands out.
constexpr std::array<QRgb, kSpanKinds> kKindColors = {
    qRgb(76, 114, 176),   // compute: blue
    qRgb(221, 132, 82),   // tensor-parallel: orange
    qRgb(85, 168, 104),   // data-parallel: green
    qRgb(129, 114, 179),  // pipeline: purple
    qRgb(147, 120, 96),   // other communication: brown
    qRgb(218, 200, 150),  // pipeline bubble: sand
    qRgb(222, 222, 222),  // idle: light grey
    qRgb(196, 78, 82),    // straggler wait: red
    qRgb(40, 40, 40),     // failure and restart: near black
};

// A tick step of 1, 2 or 5 x 10^k microseconds close to `target_us`.
double nice_step(double target_us) {
  const double power = std::pow(10.0, std::floor(std::log10(target_us)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= target_us) return m * power;
  return 10 * power;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), rects_by_kind_(kSpanKinds) {
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setToolTip({});  // tooltips come from event(): the span under the cursor
}

QColor TimelineView::kind_color(SpanKind kind) {
  return QColor(kKindColors[static_cast<size_t>(kind)]);
}

QSize TimelineView::sizeHint() const {
  const int lanes = trace_ ? static_cast<int>(trace_->lanes().size()) : 8;
  return {1000, kAxisHeight + kLegendHeight + std::clamp(lanes, 4, 32) * kLaneHeight};
}

QSize TimelineView::minimumSizeHint() const {
  return {kLabelWidth + 200, kAxisHeight + kLegendHeight + 3 * kLaneHeight};
}

void TimelineView::set_trace(std::shared_ptr<const TraceModel> trace) {
  trace_ = std::move(trace);
  first_lane_ = 0;
  if (trace_) {
    range_start_us_ = trace_->start_us();
    range_end_us_ = std::max(trace_->end_us(), trace_->start_us() + kShortestRange_us);
  } else {
    range_start_us_ = 0;
    range_end_us_ = 1;
  }
  updateGeometry();
  update();
}

void TimelineView::set_time_range(double start_us, double end_us) {
  if (!std::isfinite(start_us) || !std::isfinite(end_us) || end_us <= start_us) return;
  if (start_us == range_start_us_ && end_us == range_end_us_) return;
  range_start_us_ = start_us;
  range_end_us_ = end_us;
  update();
}

void TimelineView::set_user_range(double start_us, double end_us) {
  if (!trace_) return;
  const double total = std::max(trace_->end_us() - trace_->start_us(), kShortestRange_us);
  double width = std::clamp(end_us - start_us, kShortestRange_us, total * (1 + 2 * kMargin));
  const double center = (start_us + end_us) / 2;
  double start = center - width / 2;
  start = std::clamp(
      start, trace_->start_us() - kMargin * total,
      std::max(trace_->start_us() - kMargin * total, trace_->end_us() + kMargin * total - width));
  if (start == range_start_us_ && start + width == range_end_us_) return;
  range_start_us_ = start;
  range_end_us_ = start + width;
  update();
  emit time_range_changed(range_start_us_, range_end_us_);
}

void TimelineView::zoom(double factor, double anchor) {
  if (!trace_ || factor <= 0) return;
  const double width = range_end_us_ - range_start_us_;
  const double at = range_start_us_ + anchor * width;
  const double new_width = width / factor;
  set_user_range(at - anchor * new_width, at + (1 - anchor) * new_width);
}

void TimelineView::pan_pixels(double dx) {
  if (!trace_) return;
  const double us_per_px = (range_end_us_ - range_start_us_) / std::max(1, plot_width());
  set_user_range(range_start_us_ - dx * us_per_px, range_end_us_ - dx * us_per_px);
}

void TimelineView::fit() {
  if (!trace_) return;
  set_user_range(trace_->start_us(), trace_->end_us());
}

void TimelineView::scroll_lanes(int lanes) {
  if (!trace_) return;
  const int most = std::max(0, static_cast<int>(trace_->lanes().size()) - visible_lane_count());
  const int first = std::clamp(first_lane_ + lanes, 0, most);
  if (first == first_lane_) return;
  first_lane_ = first;
  update();
}

int TimelineView::plot_left() const {
  return std::min(kLabelWidth, width() / 3);
}
int TimelineView::plot_width() const {
  return std::max(1, width() - plot_left());
}
int TimelineView::lanes_top() const {
  return kAxisHeight;
}
int TimelineView::lanes_bottom() const {
  return std::max(lanes_top(), height() - kLegendHeight);
}
int TimelineView::visible_lane_count() const {
  return std::max(1, (lanes_bottom() - lanes_top()) / kLaneHeight);
}

int TimelineView::lane_at(int y) const {
  if (!trace_ || y < lanes_top() || y >= lanes_bottom()) return -1;
  const int lane = first_lane_ + (y - lanes_top()) / kLaneHeight;
  return lane < static_cast<int>(trace_->lanes().size()) ? lane : -1;
}

QString TimelineView::details_at(const QPoint& pos) const {
  if (!trace_ || pos.x() < plot_left()) return {};
  const int lane = lane_at(pos.y());
  if (lane < 0) return {};
  const double us_per_px = (range_end_us_ - range_start_us_) / plot_width();
  const double t = range_start_us_ + (pos.x() - plot_left()) * us_per_px;
  // Two pixels of slack, so that a span narrower than a pixel can still be pointed at.
  const int index = trace_->span_at(lane, t, 2 * us_per_px);
  if (index < 0) return {};
  return describe_span(*trace_, trace_->lanes()[static_cast<size_t>(lane)].spans[index]);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  if (!trace_) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                     "No trace: run a simulation with a trace (dtsim simulate --trace; in "
                     "dtsim-gui, tick \"Trace for the Timeline\"), or open a trace file");
    last_frame_rects_ = 0;
    return;
  }
  paint_lanes(painter);
  paint_axis(painter);
  paint_legend(painter);
}

void TimelineView::paint_axis(QPainter& painter) {
  const QRect axis(0, 0, width(), kAxisHeight);
  painter.fillRect(axis, QColor(248, 248, 248));
  painter.setPen(QColor(120, 120, 120));
  painter.drawLine(0, kAxisHeight - 1, width(), kAxisHeight - 1);
  const double us_per_px = (range_end_us_ - range_start_us_) / plot_width();
  const double step = nice_step(us_per_px * 110);  // a label every ~110 px
  // Times are shown from the trace's start, as Perfetto does.
  const double origin = trace_->start_us();
  const double first = std::ceil((range_start_us_ - origin) / step) * step + origin;
  QFontMetrics metrics(font());
  for (double t = first; t <= range_end_us_; t += step) {
    const int x = plot_left() + static_cast<int>(std::lround((t - range_start_us_) / us_per_px));
    painter.setPen(QColor(120, 120, 120));
    painter.drawLine(x, kAxisHeight - 6, x, kAxisHeight - 1);
    painter.setPen(QColor(235, 235, 235));
    painter.drawLine(x, lanes_top(), x, lanes_bottom());
    painter.setPen(Qt::black);
    painter.drawText(x + 3, kAxisHeight - 8, format_us(t - origin));
  }
  painter.fillRect(QRect(0, 0, plot_left(), kAxisHeight), QColor(248, 248, 248));
  painter.drawText(QRect(4, 0, plot_left() - 8, kAxisHeight - 2), Qt::AlignVCenter | Qt::AlignLeft,
                   "time from start; view " + format_us(range_end_us_ - range_start_us_));
}

void TimelineView::paint_lanes(QPainter& painter) {
  const auto& lanes = trace_->lanes();
  const int left = plot_left(), plot_w = plot_width();
  const double us_per_px = (range_end_us_ - range_start_us_) / plot_w;
  const int last = std::min(static_cast<int>(lanes.size()), first_lane_ + visible_lane_count());
  for (auto& rects : rects_by_kind_) rects.clear();
  size_t drawn = 0;
  for (int i = first_lane_; i < last; ++i) {
    const int y = lanes_top() + (i - first_lane_) * kLaneHeight;
    if ((i - first_lane_) % 2 == 1)
      painter.fillRect(QRect(0, y, width(), kLaneHeight), QColor(250, 250, 252));
    lane_scratch_.clear();
    lane_rects(lanes[static_cast<size_t>(i)], range_start_us_, us_per_px, plot_w, lane_scratch_);
    drawn += lane_scratch_.size();
    for (const LaneRect& r : lane_scratch_) {
      // A hairline of background between wide neighbours, so back-to-back kernels read apart.
      const double w = r.x1_px - r.x0_px;
      rects_by_kind_[static_cast<size_t>(r.kind)].emplace_back(
          left + r.x0_px, y + 2, w >= kSeparatedWidth ? w - 1 : w, kLaneHeight - 4);
    }
  }
  // One brush change per kind, and one call for all of its rectangles.
  painter.setPen(Qt::NoPen);
  for (size_t k = 0; k < rects_by_kind_.size(); ++k) {
    if (rects_by_kind_[k].empty()) continue;
    painter.setBrush(kind_color(static_cast<SpanKind>(k)));
    painter.drawRects(rects_by_kind_[k].data(), static_cast<int>(rects_by_kind_[k].size()));
  }
  last_frame_rects_ = drawn;

  // Lane names over a plain column, cut to fit.
  painter.fillRect(QRect(0, lanes_top(), left, lanes_bottom() - lanes_top()), Qt::white);
  painter.setPen(QColor(200, 200, 200));
  painter.drawLine(left - 1, lanes_top(), left - 1, lanes_bottom());
  painter.setPen(Qt::black);
  QFontMetrics metrics(font());
  for (int i = first_lane_; i < last; ++i) {
    const int y = lanes_top() + (i - first_lane_) * kLaneHeight;
    painter.drawText(
        QRect(4, y, left - 8, kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft,
        metrics.elidedText(lanes[static_cast<size_t>(i)].name, Qt::ElideMiddle, left - 8));
  }
  if (last - first_lane_ < static_cast<int>(lanes.size())) {
    painter.setPen(QColor(120, 120, 120));
    painter.drawText(QRect(4, lanes_bottom() - kLaneHeight, left - 8, kLaneHeight),
                     Qt::AlignVCenter | Qt::AlignRight,
                     QString("lanes %1-%2 of %3").arg(first_lane_ + 1).arg(last).arg(lanes.size()));
  }
}

void TimelineView::paint_legend(QPainter& painter) {
  const int top = lanes_bottom();
  painter.fillRect(QRect(0, top, width(), height() - top), QColor(248, 248, 248));
  painter.setPen(QColor(200, 200, 200));
  painter.drawLine(0, top, width(), top);
  QFontMetrics metrics(font());
  int x = 6;
  const int y = top + (kLegendHeight - 12) / 2;
  for (int k = 0; k < kSpanKinds; ++k) {
    const auto kind = static_cast<SpanKind>(k);
    if (trace_->count(kind) == 0) continue;
    painter.fillRect(QRect(x, y, 12, 12), kind_color(kind));
    painter.setPen(Qt::black);
    const QString name = span_kind_name(kind);
    painter.drawText(x + 16, y + 11, name);
    x += 16 + metrics.horizontalAdvance(name) + 14;
  }
  const QString hint = QString("%1 spans; wheel: zoom, drag: pan, Home: whole trace")
                           .arg(static_cast<qulonglong>(trace_->span_count()));
  const int hint_width = metrics.horizontalAdvance(hint);
  if (x + hint_width + 8 < width()) {
    painter.setPen(QColor(110, 110, 110));
    painter.drawText(width() - hint_width - 6, y + 11, hint);
  }
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  if (!trace_) return;
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & Qt::ShiftModifier) {
    scroll_lanes(static_cast<int>(-std::round(steps * 3)));
  } else {
    const double anchor =
        std::clamp((event->position().x() - plot_left()) / plot_width(), 0.0, 1.0);
    zoom(std::pow(kZoomStep, steps), anchor);
  }
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !trace_) return;
  dragging_ = true;
  drag_origin_ = event->position().toPoint();
  drag_start_us_ = range_start_us_;
  drag_first_lane_ = first_lane_;
  setCursor(Qt::ClosedHandCursor);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  const QPoint delta = event->position().toPoint() - drag_origin_;
  const double width_us = range_end_us_ - range_start_us_;
  const double start = drag_start_us_ - delta.x() * width_us / plot_width();
  set_user_range(start, start + width_us);
  scroll_lanes(drag_first_lane_ - delta.y() / kLaneHeight - first_lane_);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  dragging_ = false;
  unsetCursor();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoom(kZoomStep * kZoomStep);
      break;
    case Qt::Key_Minus:
      zoom(1 / (kZoomStep * kZoomStep));
      break;
    case Qt::Key_Left:
      pan_pixels(plot_width() / 10.0);
      break;
    case Qt::Key_Right:
      pan_pixels(-plot_width() / 10.0);
      break;
    case Qt::Key_Up:
      scroll_lanes(-1);
      break;
    case Qt::Key_Down:
      scroll_lanes(1);
      break;
    case Qt::Key_PageUp:
      scroll_lanes(-visible_lane_count());
      break;
    case Qt::Key_PageDown:
      scroll_lanes(visible_lane_count());
      break;
    case Qt::Key_Home:
    case Qt::Key_0:
      fit();
      break;
    default:
      QWidget::keyPressEvent(event);
  }
}

bool TimelineView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString details = details_at(help->pos());
    if (details.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), details, this);
    return true;
  }
  return QWidget::event(event);
}

}  // namespace dtsim::gui
