// The memory view: what one GPU holds at its peak, by category (weights, gradients, optimizer
// state, activations, buffers), as stacked bars against the GPU's capacity, with the verdict
// "fits" or "does not fit" and the headroom in GiB.
//
// Contract:
// - set_result() takes a result object of `dtsim simulate --json` (docs/design.md section 5). It
//   reads memory.per_category_bytes, memory.peak_bytes_per_gpu and memory.capacity_bytes: one
//   bar, the GPU at the job's peak. When the result has memory.per_stage (one entry per pipeline
//   stage: stage, rank, peak_bytes, per_category_bytes), there is one bar per stage as well.
// - The verdict compares the peak with the capacity: "fits: 13.5 GiB of headroom (peak 66.5
//   GiB of 80.0 GiB)" or "does not fit: 3.2 GiB over ...". GiB is 2^30 bytes.
// - A result without a memory section (or with keys of the wrong type) is not an error the view
//   throws: the view says what is missing, and shows nothing else.
// - The table under the chart lists the same bytes per category and bar, in GiB.
#pragma once

#include <QRectF>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <array>
#include <vector>

#include <nlohmann/json.hpp>

class QLabel;
class QTableWidget;

namespace dtsim::gui {

class MemoryChart;

class MemoryView : public QWidget {
  Q_OBJECT

 public:
  // The categories in the order they stack, bottom to top (docs/design.md section 5's keys).
  static constexpr std::array<const char*, 5> kCategories = {"weights", "gradients", "optimizer",
                                                             "activations", "buffers"};

  struct Bar {
    QString label;                  // "peak GPU", "stage 0 (rank 0)"
    QString short_label;            // "peak", "0": under a bar too narrow for the label
    std::array<double, 5> bytes{};  // by kCategories
    double peak_bytes = 0;
  };

  // A text the chart draws: a bar's peak above it, or its name below it. Labels are shortened
  // to fit their bar's slot ("70.9 GiB" -> "70.9", "stage 3 (rank 24)" -> "stage 3" -> "3"),
  // and a peak label that would still overlap one already drawn is left out: the table lists
  // every figure.
  struct ChartLabel {
    QRectF rect;
    QString text;
    bool peak = false;  // a peak label (else a bar's name)
  };
  std::vector<ChartLabel> chart_labels() const;

  explicit MemoryView(QWidget* parent = nullptr);

  void set_result(const nlohmann::json& result);

  // What the view shows, for the app and for tests.
  const std::vector<Bar>& bars() const { return bars_; }
  double capacity_bytes() const { return capacity_bytes_; }
  bool fits() const { return fits_; }
  QString verdict() const;
  QTableWidget* table() const { return table_; }

 private:
  void show_problem(const QString& why);

  std::vector<Bar> bars_;
  double capacity_bytes_ = 0;
  bool fits_ = true;
  QLabel* verdict_ = nullptr;
  MemoryChart* chart_ = nullptr;
  QTableWidget* table_ = nullptr;
};

}  // namespace dtsim::gui
