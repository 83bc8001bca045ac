// The scaling view: vary one key of the scenario (the GPU count, a parallel degree, the
// micro-batch size, or any key), run the sweep as a child `dtsim sweep`, and show where scaling
// stops: speedup with the ideal and the Amdahl and Gustafson fits, efficiency, the step time by
// cause, and the fitted serial fraction f with its interval and the speedup limit 1/f.
//
// Contract:
// - The sweep is `dtsim sweep SCENARIO [--set k=v]... --vary KEY=VALUES -o TMP.csv --engine E
//   -j N`, run through QProcess: the UI thread never waits for it. Its stderr lines
//   "sweep: N/M ..." drive the progress bar; cancel_sweep() (the Cancel button) ends it
//   (SIGTERM, which makes the sweep kill its children; SIGKILL two seconds later if it is still
//   there). sweep_started() is emitted when the process starts, sweep_finished(ok) once when it
//   ends: ok when it exited 0 and its results could be analysed.
// - load_results() reads a results file of dtsim sweep (driver::read_results) and runs the
//   analysis of `dtsim analyze` (driver::analyze_results) along config.gpus when the GPU count
//   differs between the ok rows, else along the first varied key; the charts are
//   plot::scaling_charts of that analysis, drawn by plot::make_qchart, so they are the charts
//   `dtsim analyze --plot` draws. The full text report of `dtsim analyze` is shown too.
// - Problems (no scenario, a sweep that fails, a file that cannot be analysed) are shown in the
//   view with the tool's own message; nothing throws.
// - The temporary results files live in a folder that is removed with the view.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>

#include "driver/analysis.h"

class QComboBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTemporaryDir;

namespace dtsim::gui {

// Node counts for a first strong-scaling sweep of a scenario, four when it allows: its own count
// and the halvings of it that the loader accepts with the scenario's parallelism and batch (the
// model's tensor x pipeline GPUs must fit, the batch must divide), then doublings above it (up to
// 8x) for the points still missing; comma-separated, ascending. "1,2,4,8" when the scenario
// itself does not load (the sweep then says why).
QString suggested_node_sweep(const QString& scenario_file, const QStringList& overrides = {});

class ScalingView : public QWidget {
  Q_OBJECT

 public:
  explicit ScalingView(QWidget* parent = nullptr);
  ~ScalingView() override;

  // The scenario to sweep and the --set overrides the user's run has. The cluster.nodes values
  // offered become suggested_node_sweep()'s for it (unless the user typed others).
  void set_scenario(const QString& path, const QStringList& overrides);
  // The values field as it stands.
  QString sweep_values() const;
  // The dtsim program to run; by default "dtsim" beside the application, else on PATH.
  void set_dtsim(const QString& dtsim_program);
  // Reads and analyses a results file of dtsim sweep, and shows it (see the contract).
  void load_results(const QString& results_file);

  // The Run button: sweeps `key` over `values` ("1,2,4,8" or "range(1,8,1)"), with `engine`
  // ("analytic", "simgrid"; empty: the scenario's own).
  void start_sweep(const QString& key, const QString& values, const QString& engine);
  void cancel_sweep();
  bool sweep_running() const;

  // What the view shows, for the app and for tests.
  const std::optional<driver::ScalingAnalysis>& analysis() const { return analysis_; }
  QString fit_text() const;
  QString error() const { return error_; }
  int progress_value() const;
  int progress_maximum() const;
  int chart_count() const { return chart_count_; }

 signals:
  void sweep_started();
  void sweep_finished(bool ok);

 private:
  void run_clicked();
  void key_chosen(const QString& key);
  void read_stderr();
  void process_finished(int exit_code, QProcess::ExitStatus status);
  void process_failed(QProcess::ProcessError error);
  void show_error(const QString& message);
  void clear_charts();
  void set_running(bool running);

  QString scenario_;
  QStringList overrides_;
  QString node_values_;  // suggested_node_sweep() for the scenario; "" until one loads
  QString dtsim_;
  std::optional<driver::ScalingAnalysis> analysis_;
  QString error_;
  int chart_count_ = 0;

  QComboBox* key_ = nullptr;
  QLineEdit* values_ = nullptr;
  QComboBox* engine_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* fit_ = nullptr;
  QPlainTextEdit* report_ = nullptr;
  QGridLayout* charts_ = nullptr;

  QProcess* process_ = nullptr;
  std::unique_ptr<QTemporaryDir> work_dir_;
  QString results_file_;
  QByteArray stderr_buffer_;
  QStringList stderr_tail_;
  bool cancelled_ = false;
  bool finish_reported_ = false;
  int sweep_number_ = 0;
};

}  // namespace dtsim::gui
