// One simulation as a child `dtsim simulate FILE --json -o RESULT [--trace TRACE] [--engine E]`
// process: SimGrid allows one simulation per process (docs/design.md section 5), and a crash or a
// SimGrid abort ends the child, never the GUI.
//
// Contract:
// - start() returns at once; the UI thread never waits for the child. progress() carries each
//   line the child writes on stderr (its phase lines, driver/progress.h); finished() comes once,
//   with the record of the run.
// - The child runs in a process group of its own and gets SIGKILL if the GUI dies
//   (PR_SET_PDEATHSIG), as driver::ChildPool's children do. cancel() kills the whole group,
//   which holds the SimGrid process the child forks, reaps what it leaves, and then reports the
//   run kCancelled: no process is left behind.
// - The dtsim program: dtsim_program() finds it (--dtsim, the DTSIM environment variable, next
//   to dtsim-gui, or the build tree's cli/dtsim).
#pragma once

#include <QDateTime>
#include <QElapsedTimer>
#include <QMetaType>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>

namespace dtsim::gui {

struct RunRequest {
  QString dtsim;          // the dtsim program
  QString scenario_file;  // what the child reads
  QString label;          // the scenario's name, for the history
  QString engine;         // "" for the scenario's simulate.engine
  QString run_dir;        // where the result and the trace go
  QStringList overrides;  // --set texts
  bool trace = true;      // write the Chrome trace the Timeline shows (--trace)
};

struct RunRecord {
  // kDoesNotFit: dtsim simulate exited 2 because the configuration's peak memory is over the
  // GPU's, with its whole result written: shown, with the verdict where the step time is.
  enum class Status { kRunning, kOk, kDoesNotFit, kBadInput, kFailed, kCancelled };
  int id = 0;
  QString label;
  QString scenario_file;
  QString engine;  // as the result names it once known
  QString result_file;
  QString trace_file;  // "" for a run made without a trace
  QDateTime started;
  double wall_s = 0;
  Status status = Status::kRunning;
  QString message;  // what went wrong, as the child said it
  nlohmann::json result;
  double step_time_s() const;
  bool has_result() const { return status == Status::kOk || status == Status::kDoesNotFit; }
};

class SimulationRun : public QObject {
  Q_OBJECT

 public:
  explicit SimulationRun(QObject* parent = nullptr);
  ~SimulationRun() override;

  void start(const RunRequest& request, int id);
  void cancel();
  bool running() const;
  qint64 process_group() const { return group_; }
  double elapsed_s() const;
  const RunRecord& record() const { return record_; }

 signals:
  void progress(const QString& line);
  void finished(const dtsim::gui::RunRecord& record);

 private:
  void on_finished(int exit_code, QProcess::ExitStatus status);
  void on_error(QProcess::ProcessError error);
  void finish(RunRecord::Status status, const QString& message);
  void reap_group_then_finish();
  void reap_step();

  QProcess* process_ = nullptr;
  RunRecord record_;
  QElapsedTimer clock_;
  QByteArray stderr_;
  QString stderr_tail_;
  qint64 group_ = 0;
  bool cancelled_ = false;
  bool done_ = true;
  int reap_tries_ = 0;
};

// The dtsim program to run: `flag` (--dtsim) when given, else $DTSIM, else `dtsim` next to this
// program, else the build tree's cli/dtsim (dtsim-gui is built as gui/app/dtsim-gui).
QString dtsim_program(const QString& flag = {});

// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that a
// cancelled child's SimGrid process is reaped here, not left as a zombie where PID 1 reaps
// nothing (containers).
void become_subreaper();

}  // namespace dtsim::gui

Q_DECLARE_METATYPE(dtsim::gui::RunRecord)
