// The timeline (Gantt chart) of a trace: one lane per rank and stream, spans coloured by kind
// (compute, tensor-, data- and pipeline-parallel communication, other communication, pipeline
// bubble, idle time, straggler wait), with a time axis, lane names and a legend.
//
// Contract:
// - Interaction: the wheel zooms around the cursor (Ctrl or not); Shift+wheel scrolls the lanes;
//   a drag pans in time and scrolls the lanes; keys: + and - zoom, Left and Right pan, Up and
//   Down (Page Up, Page Down) scroll the lanes, Home or 0 shows the whole trace. Hovering over a
//   span shows its details (trace_model.h describe_span) in a tooltip.
// - time_range_changed is emitted when the user zooms or pans, never by set_time_range or
//   set_trace, so two views joined both ways (the compare view) cannot echo each other.
// - set_time_range takes any range of positive width (a second view may show a longer trace
//   than this one); user zooms and pans stay within the trace, give or take a margin.
// - Painting visits only the visible lanes and the spans in the visible range, through
//   lane_rects (timeline_lod.h): a frame costs O(visible lanes x (log n + visible spans)) and
//   draws at most about two rectangles per lane per pixel, whatever the trace's size.
// - The model is shared and immutable; the view keeps it alive.
#pragma once

#include <QColor>
#include <QPoint>
#include <QRectF>
#include <QWidget>
#include <memory>
#include <vector>

#include "gui/views/timeline_lod.h"
#include "gui/views/trace_model.h"

namespace dtsim::gui {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // Shows `trace` whole; nullptr clears the view.
  void set_trace(std::shared_ptr<const TraceModel> trace);
  const std::shared_ptr<const TraceModel>& trace() const { return trace_; }

  // The visible range, in the trace's microseconds (see the contract).
  void set_time_range(double start_us, double end_us);
  double range_start_us() const { return range_start_us_; }
  double range_end_us() const { return range_end_us_; }

  // What the user's gestures do, for keys, tests and the benchmark. Each emits
  // time_range_changed. factor > 1 zooms in, around `anchor` (0: left edge, 1: right edge).
  void zoom(double factor, double anchor = 0.5);
  void pan_pixels(double dx);  // a drag of dx pixels (positive moves the content right)
  void fit();                  // the whole trace
  void scroll_lanes(int lanes);
  int first_lane() const { return first_lane_; }

  // The rectangles the last paint drew (after level-of-detail merging).
  size_t last_frame_rect_count() const { return last_frame_rects_; }
  // The details of the span under `pos` (widget coordinates); empty when there is none.
  QString details_at(const QPoint& pos) const;

  static QColor kind_color(SpanKind kind);

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void time_range_changed(double start_us, double end_us);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;

 private:
  // Applies a user's range: clamped to the trace (see the contract), then signalled.
  void set_user_range(double start_us, double end_us);
  int plot_left() const;
  int plot_width() const;
  int lanes_top() const;
  int lanes_bottom() const;  // the legend sits below
  int visible_lane_count() const;
  int lane_at(int y) const;
  void paint_axis(QPainter& painter);
  void paint_lanes(QPainter& painter);
  void paint_legend(QPainter& painter);

  std::shared_ptr<const TraceModel> trace_;
  double range_start_us_ = 0, range_end_us_ = 1;
  int first_lane_ = 0;
  bool dragging_ = false;
  QPoint drag_origin_;
  double drag_start_us_ = 0;
  int drag_first_lane_ = 0;
  size_t last_frame_rects_ = 0;
  std::vector<LaneRect> lane_scratch_;
  std::vector<std::vector<QRectF>> rects_by_kind_;
};

}  // namespace dtsim::gui
