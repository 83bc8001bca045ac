// The Summary tab: one result of `dtsim simulate --json` (docs/design.md section 5) at a glance:
// step time, throughput, MFU, memory fit, and where the step goes (compute, exposed communication,
// pipeline bubble, straggler wait, other) as one bar. Every number carries its unit.
//
// Contract: set_result() shows a result object and ignores keys it does not know; a key missing
// from the result shows as "n/a", never as 0. show_message() replaces the figures with a line of
// text (no run yet, a run that failed).
#pragma once

#include <QString>
#include <QWidget>
#include <nlohmann/json.hpp>
#include <vector>

class QLabel;
class QGridLayout;

namespace dtsim::gui {

// A horizontal bar split into the step's time categories, with a legend of seconds and shares.
class BreakdownBar : public QWidget {
  Q_OBJECT

 public:
  struct Part {
    QString name;
    double seconds = 0;
    QColor color;
  };
  explicit BreakdownBar(QWidget* parent = nullptr);
  void set_parts(std::vector<Part> parts);
  const std::vector<Part>& parts() const { return parts_; }
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<Part> parts_;
};

class SummaryView : public QWidget {
  Q_OBJECT

 public:
  explicit SummaryView(QWidget* parent = nullptr);
  void set_result(const nlohmann::json& result, const QString& title);
  void show_message(const QString& text);
  // The figure shown for a key ("Step time", "MFU", ...), for tests.
  QString figure(const QString& name) const;
  // Whether the figure is on screen: the failure model's figures (time to train, interruptions,
  // checkpoint interval) show only for a result that modelled failures.
  bool figure_shown(const QString& name) const;
  BreakdownBar* breakdown() const { return bar_; }

 private:
  QLabel* title_ = nullptr;
  QLabel* message_ = nullptr;
  QWidget* figures_ = nullptr;
  QGridLayout* grid_ = nullptr;
  struct Figure {
    QString name;
    QLabel* key = nullptr;
    QLabel* value = nullptr;
  };
  std::vector<Figure> values_;
  Figure* find_figure(const QString& name);
  void show_reliability(const nlohmann::json& result);
  BreakdownBar* bar_ = nullptr;
};

// "1.234 s", "12.3 ms": a duration with its unit.
QString format_seconds(double s);
// "80.00 GiB"
QString format_gib(double bytes);

}  // namespace dtsim::gui
