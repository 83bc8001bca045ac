#include "gui/views/compare_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/base/units.h"
#include "gui/views/timeline_view.h"
#include "gui/views/trace_model.h"

namespace dtsim::gui {
namespace {

// Errors are coloured amber beyond 10 % and red beyond 25 %, so a reader finds the misses first.
constexpr double kGoodError = 0.10, kPoorError = 0.25;
// The compare table's rows that stay in view above the timelines.
constexpr int kMinRowsShown = 6;

QString message_of(const std::exception& e) {
  if (const auto* input = dynamic_cast<const InputError*>(&e)) {
    QStringList lines;
    for (const auto& d : input->diagnostics()) lines << QString::fromStdString(d.render());
    return lines.join('\n');
  }
  return QString::fromStdString(e.what());
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel("No comparison: choose a predicted and a measured result (JSON)", this);
  header_->setWordWrap(true);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, 4, this);
  table_->setHorizontalHeaderLabels({"metric", "predicted", "measured", "error (%)"});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  timelines_ = new QSplitter(Qt::Vertical, this);
  predicted_timeline_ = new TimelineView(timelines_);
  measured_timeline_ = new TimelineView(timelines_);
  timelines_->addWidget(predicted_timeline_);
  timelines_->addWidget(measured_timeline_);
  timelines_->setVisible(false);
  // Joined both ways; time_range_changed comes only from the user, so there is no echo.
  connect(predicted_timeline_, &TimelineView::time_range_changed, measured_timeline_,
          &TimelineView::set_time_range);
  connect(measured_timeline_, &TimelineView::time_range_changed, predicted_timeline_,
          &TimelineView::set_time_range);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(table_);
  splitter->addWidget(timelines_);
  // The table keeps its rows in view however many lanes the timelines below it hold.
  splitter->setCollapsible(0, false);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  layout->addWidget(header_);
  layout->addWidget(splitter, 1);
}

QString CompareView::format_error(const std::optional<double>& error) {
  if (!error) return "undefined (measured 0)";
  return QString("%1%2 %").arg(*error > 0 ? "+" : "").arg(*error * 100, 0, 'f', 1);
}

QString CompareView::format_value(double value, const std::string& unit) {
  if (unit == "s") return QString::fromStdString(format_duration(Seconds(value)));
  if (unit == "bytes") return QString::fromStdString(format_bytes(Bytes(value)));
  return QString::number(value, 'g', 6) + " " + QString::fromStdString(unit);
}

void CompareView::set_files(const QString& predicted_json, const QString& measured_json,
                            const QString& predicted_trace, const QString& measured_trace) {
  error_.clear();
  comparison_ = {};
  table_->setRowCount(0);
  predicted_timeline_->set_trace(nullptr);
  measured_timeline_->set_trace(nullptr);
  timelines_->setVisible(false);
  try {
    comparison_ =
        driver::compare_results(predicted_json.toStdString(), measured_json.toStdString());
  } catch (const std::exception& e) {
    error_ = message_of(e);
    header_->setText("Cannot compare: " + error_);
    header_->setStyleSheet("color: #c62828");
    return;
  }
  header_->setStyleSheet({});
  header_->setText(QString("%1 (%2, %3) against %4 (%5, %6); error = (predicted - measured) / "
                           "measured, positive when the prediction is slower or larger")
                       .arg(QString::fromStdString(comparison_.predicted_file),
                            QString::fromStdString(comparison_.predicted_source),
                            QString::fromStdString(comparison_.predicted_engine),
                            QString::fromStdString(comparison_.measured_file),
                            QString::fromStdString(comparison_.measured_source),
                            QString::fromStdString(comparison_.measured_engine)));
  // What dtsim real said of the machine it measured on, and results of different jobs.
  QStringList said;
  for (const auto& w : comparison_.warnings)
    said << "warning: the two results are of different jobs: " + QString::fromStdString(w);
  for (const auto& d : comparison_.disturbed) said << "warning: " + QString::fromStdString(d);
  for (const auto& d : comparison_.conditions) said << QString::fromStdString(d);
  if (!said.isEmpty()) header_->setText(header_->text() + "\n" + said.join('\n'));
  fill_table();

  if (predicted_trace.isEmpty() || measured_trace.isEmpty()) return;
  try {
    predicted_timeline_->set_trace(TraceModel::load(predicted_trace));
    measured_timeline_->set_trace(TraceModel::load(measured_trace));
  } catch (const std::exception& e) {
    error_ = message_of(e);
    header_->setText(header_->text() + "\nCannot show the timelines: " + error_);
    predicted_timeline_->set_trace(nullptr);
    measured_timeline_->set_trace(nullptr);
    return;
  }
  // The same span of time in both: the longer trace's, from each trace's start.
  const auto& p = *predicted_timeline_->trace();
  const auto& m = *measured_timeline_->trace();
  const double length = std::max(p.end_us() - p.start_us(), m.end_us() - m.start_us());
  predicted_timeline_->set_time_range(p.start_us(), p.start_us() + length);
  measured_timeline_->set_time_range(m.start_us(), m.start_us() + length);
  timelines_->setVisible(true);
}

void CompareView::fill_table() {
  const auto add_rows = [this](const std::vector<driver::ComparedValue>& values,
                               const QString& suffix) {
    for (const auto& v : values) {
      const int row = table_->rowCount();
      table_->insertRow(row);
      const QString name = QString::fromStdString(v.name) + suffix;
      table_->setItem(row, 0, new QTableWidgetItem(name));
      auto* predicted = new QTableWidgetItem(format_value(v.predicted, v.unit));
      auto* measured = new QTableWidgetItem(format_value(v.measured, v.unit));
      auto* error = new QTableWidgetItem(format_error(v.error));
      for (auto* item : {predicted, measured, error})
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      // The signed fraction, for sorting and for the app's own use.
      if (v.error) error->setData(Qt::UserRole, *v.error);
      if (v.error && std::fabs(*v.error) > kPoorError)
        error->setForeground(QColor(198, 40, 40));
      else if (v.error && std::fabs(*v.error) > kGoodError)
        error->setForeground(QColor(190, 120, 0));
      table_->setItem(row, 1, predicted);
      table_->setItem(row, 2, measured);
      table_->setItem(row, 3, error);
    }
  };
  add_rows(comparison_.metrics, "");
  add_rows(comparison_.by_kind, " (busy time per step)");
  table_->resizeColumnsToContents();
  // At least kMinRowsShown rows (all of them when fewer) stay visible beside the timelines.
  const int shown = std::min(table_->rowCount(), kMinRowsShown);
  const int row_height = table_->rowCount() > 0 ? table_->rowHeight(0)
                                                : table_->verticalHeader()->defaultSectionSize();
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + shown * row_height +
                           2 * table_->frameWidth() + 2);
}

}  // namespace dtsim::gui
