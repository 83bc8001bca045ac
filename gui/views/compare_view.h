// The compare view: a prediction against a measurement (or any two results of dtsim simulate
// --json), per metric and per op kind, with signed errors; and, when both traces are given,
// the two timelines one above the other, zoomed and panned together.
//
// Contract:
// - set_files() runs driver::compare_results (the code of `dtsim compare`), so the table holds
//   exactly the errors the CLI prints: error = (predicted - measured) / measured, shown in
//   percent with its sign (positive: the prediction is slower or larger). Where it is undefined
//   (measured 0, predicted not) the cell says so.
// - Rows: the metrics first (step time, compute, exposed communication, pipeline bubble,
//   straggler wait, peak memory), then the busy time per op kind.
// - A file that cannot be compared (unreadable, not a result, missing a key), or a trace that
//   cannot be loaded, is shown as a message in the view with the file named; set_files does
//   not throw. error() returns that message, empty when all went well.
// - The timelines are joined both ways through set_time_range / time_range_changed: a zoom or
//   pan in one shows the same microseconds in the other. Both start at their trace's start.
#pragma once

#include <QString>
#include <QWidget>

#include "driver/compare.h"

class QLabel;
class QTableWidget;
class QSplitter;

namespace dtsim::gui {

class TimelineView;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  void set_files(const QString& predicted_json, const QString& measured_json,
                 const QString& predicted_trace = {}, const QString& measured_trace = {});

  // What the view shows, for the app and for tests.
  const driver::Comparison& comparison() const { return comparison_; }
  QTableWidget* table() const { return table_; }
  TimelineView* predicted_timeline() const { return predicted_timeline_; }
  TimelineView* measured_timeline() const { return measured_timeline_; }
  QString error() const { return error_; }

  // "+12.3 %", "-0.5 %", "0.0 %"; "undefined (measured 0)" when there is no error.
  static QString format_error(const std::optional<double>& error);
  // A value with its unit: seconds as "1.234 s" / "12.3 ms", bytes as GiB.
  static QString format_value(double value, const std::string& unit);

 private:
  void fill_table();

  driver::Comparison comparison_;
  QString error_;
  QLabel* header_ = nullptr;
  QTableWidget* table_ = nullptr;
  QSplitter* timelines_ = nullptr;
  TimelineView* predicted_timeline_ = nullptr;
  TimelineView* measured_timeline_ = nullptr;
};

}  // namespace dtsim::gui
