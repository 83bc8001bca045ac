// dtsim-gui's main window: the scenario editor, simulations run as child processes, and the
// views of their results (Summary, Timeline, Memory, Scaling, Compare), with a history of runs.
//
// Contract:
// - The UI thread never waits: simulations run as `dtsim simulate` children (SimulationRun), and
//   traces are read into their models on a worker thread; run_shown() says when a run's results
//   and trace are all on screen.
// - Run uses the editor's text as it stands: the file itself when it is saved, else a copy in the
//   session's run folder (a relative cluster.profile still resolves from the file's folder). A
//   scenario with problems is not run: the problems are in the editor.
// - One simulation at a time; Cancel ends it with every process it started.
// - Tabs are named editor, summary, timeline, memory, scaling and compare (select_tab()), as
//   `dtsim-gui --tab` names them.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <QString>
#include <QTemporaryDir>
#include <memory>
#include <vector>

#include "gui/app/simulation_run.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTabWidget;
class QThread;
class QTimer;

namespace dtsim::gui {

class ScenarioEditor;
class SummaryView;
class TimelineView;
class MemoryView;
class ScalingView;
class CompareView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  struct Options {
    QString dtsim;   // the dtsim program (dtsim_program())
    QString engine;  // the engine to run; "" for the scenario's own
  };
  explicit MainWindow(const Options& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  bool open_scenario(const QString& path, QString* error);
  // Starts a simulation of the editor's scenario; false (with the reason) when it cannot start.
  bool run_simulation(QString* why = nullptr);
  void cancel_simulation();
  bool select_tab(const QString& name);
  QWidget* tab(const QString& name) const;
  static QStringList tab_names();
  // The two runs side by side in the Compare tab.
  void compare_runs(int first_id, int second_id);
  // Exports the current tab (PNG or SVG by the extension).
  void export_view(const QString& path);

  ScenarioEditor* editor() const { return editor_; }
  SummaryView* summary() const { return summary_; }
  SimulationRun* current_run() const { return run_; }
  const std::vector<RunRecord>& runs() const { return runs_; }
  QTableWidget* history() const { return history_; }
  TimelineView* timeline() const { return timeline_; }
  MemoryView* memory() const { return memory_; }
  ScalingView* scaling() const { return scaling_; }
  CompareView* compare() const { return compare_; }
  QComboBox* engine_choice() const { return engine_; }
  QPlainTextEdit* run_log() const { return log_; }
  // Whether runs write the trace the Timeline shows (a large run's trace may exceed the memory
  // limit that the same run without one stays under).
  QCheckBox* trace_choice() const { return trace_; }
  // Adds a line to the run log, which keeps its newest line in view.
  void log(const QString& text);

 signals:
  void run_finished(const dtsim::gui::RunRecord& record);
  // A run's results and trace are on screen (the trace failed to load when `trace_ok` is false).
  void run_shown(int id, bool trace_ok);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void build_run_panel();
  void on_run_finished(const RunRecord& record);
  void show_run(const RunRecord& record);
  void add_history_row(const RunRecord& record);
  void update_title();
  bool confirm_discard();
  void do_open();
  void do_save(bool as);
  void do_export();
  void rebuild_recent_menu();

  Options options_;
  QTemporaryDir session_dir_;
  ScenarioEditor* editor_ = nullptr;
  SummaryView* summary_ = nullptr;
  TimelineView* timeline_ = nullptr;
  MemoryView* memory_ = nullptr;
  ScalingView* scaling_ = nullptr;
  CompareView* compare_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QComboBox* engine_ = nullptr;
  QCheckBox* trace_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QLabel* elapsed_ = nullptr;
  QLabel* phase_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QTableWidget* history_ = nullptr;
  QTimer* tick_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  SimulationRun* run_ = nullptr;
  std::vector<RunRecord> runs_;
  int next_run_id_ = 1;
  int shown_run_ = 0;
  std::vector<QPointer<QThread>> loaders_;
};

}  // namespace dtsim::gui
