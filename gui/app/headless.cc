#include "gui/app/headless.h"

#include "driver/output_file.h"

#include <QApplication>
#include <QComboBox>
#include <QEventLoop>
#include <QFileInfo>
#include <QTimer>
#include <algorithm>
#include <iostream>

#include "core/base/error.h"
#include "gui/app/main_window.h"
#include "gui/app/scenario_editor.h"
#include "gui/app/scenario_form.h"
#include "gui/views/scaling_view.h"

namespace dtsim::gui {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitBadInput = 2;

// Messages from dtsim's own errors carry their "error: " already (Diagnostic::render).
void error_line(const QString& text) {
  std::cerr << (text.startsWith("error: ") ? "" : "error: ") << text.toStdString() << "\n";
}

// Runs one simulation in `window` and waits (in an event loop) until it is on screen. Returns
// the finished record.
// Runs `loop` until it quits or `timeout_s` passes; true when it timed out.
bool exec_within(QEventLoop& loop, double timeout_s) {
  bool timed_out = false;
  QTimer timer;
  timer.setSingleShot(true);
  QObject::connect(&timer, &QTimer::timeout, &loop, [&] {
    timed_out = true;
    loop.quit();
  });
  timer.start(static_cast<int>(std::min(timeout_s * 1000, 2e9)));
  loop.exec();
  return timed_out;
}

QString timed_out_message(double timeout_s) {
  return QString("the simulation did not finish within %1 s (--timeout) and was stopped")
      .arg(timeout_s);
}

RunRecord run_and_wait(MainWindow& window, const QString& engine, double timeout_s) {
  window.engine_choice()->setCurrentIndex(std::max(0, window.engine_choice()->findData(engine)));
  RunRecord last;
  QEventLoop loop;
  bool shown = false;
  QObject::connect(&window, &MainWindow::run_finished, &loop,
                   [&](const RunRecord& r) { last = r; });
  QObject::connect(&window, &MainWindow::run_shown, &loop, [&](int, bool) {
    shown = true;
    loop.quit();
  });
  QString why;
  if (!window.run_simulation(&why)) {
    last.status = RunRecord::Status::kFailed;
    last.message = why;
    return last;
  }
  if (!shown && exec_within(loop, timeout_s)) {
    window.cancel_simulation();
    last.status = RunRecord::Status::kFailed;
    last.message = timed_out_message(timeout_s);
  }
  return last;
}

int exit_code_of(const RunRecord& r) {
  if (r.status == RunRecord::Status::kOk) return kExitOk;
  error_line(r.message.isEmpty() ? "the simulation did not finish" : r.message);
  return r.status == RunRecord::Status::kBadInput || r.status == RunRecord::Status::kDoesNotFit
             ? kExitBadInput
             : kExitRuntime;
}

// Runs the scaling tab's sweep and waits for its charts.
int sweep_and_wait(MainWindow& window, const HeadlessRequest& request) {
  QString key = "cluster.nodes";
  QString values;
  if (!request.vary.isEmpty()) {
    key = request.vary.section('=', 0, 0);
    values = request.vary.section('=', 1);
  } else {
    values = suggested_node_sweep(request.scenario);
  }
  window.scaling()->set_scenario(request.scenario, {});
  QEventLoop loop;
  bool ok = false, ended = false;
  QObject::connect(window.scaling(), &ScalingView::sweep_finished, &loop, [&](bool result) {
    ok = result;
    ended = true;
    loop.quit();
  });
  window.scaling()->start_sweep(key, values, request.engine);
  if (!ended && !window.scaling()->sweep_running() && !window.scaling()->error().isEmpty()) {
    error_line(window.scaling()->error());
    return kExitBadInput;
  }
  if (!ended && exec_within(loop, request.timeout_s)) {
    window.scaling()->cancel_sweep();
    error_line(timed_out_message(request.timeout_s));
    return kExitRuntime;
  }
  if (!ok) {
    error_line(window.scaling()->error());
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace

bool tab_needs_run(const QString& tab) {
  return tab == "summary" || tab == "timeline" || tab == "memory" || tab == "compare";
}

int take_screenshot(const HeadlessRequest& request) {
  const QString suffix = QFileInfo(request.output).suffix().toLower();
  if (suffix != "png" && suffix != "svg") {
    error_line(request.output + ": --screenshot writes .png or .svg");
    return kExitBadInput;
  }
  // The picture may not replace the scenario it shows (also through a symbolic link).
  const QString shown = QFileInfo(request.scenario).canonicalFilePath();
  if (!shown.isEmpty() && QFileInfo(request.output).canonicalFilePath() == shown) {
    error_line(request.output + ": --screenshot cannot write over the scenario '" +
               request.scenario + "' it shows; give another path");
    return kExitBadInput;
  }
  MainWindow window(MainWindow::Options{request.dtsim, request.engine});
  QString error;
  if (!window.open_scenario(request.scenario, &error)) {
    error_line(error);
    return kExitBadInput;
  }
  if (!window.editor()->valid()) {
    for (const Diagnostic& d : window.editor()->diagnostics()) std::cerr << d.render() << "\n";
    return kExitBadInput;
  }
  window.resize(request.size);
  window.show();
  if (tab_needs_run(request.tab)) {
    const RunRecord first = run_and_wait(window, request.engine, request.timeout_s);
    if (const int code = exit_code_of(first); code != kExitOk) return code;
    if (request.tab == "compare") {
      // The scenario against itself under the other engine: where contention matters.
      const QString other = first.engine == "analytic" ? "simgrid" : "analytic";
      const RunRecord second = run_and_wait(window, other, request.timeout_s);
      if (const int code = exit_code_of(second); code != kExitOk) return code;
      window.compare_runs(first.id, second.id);
    }
  }
  if (request.tab == "scaling")
    if (const int code = sweep_and_wait(window, request); code != kExitOk) return code;
  window.select_tab(request.tab);
  // The editor's picture shows the cluster's fields beside the YAML (the first section holds
  // only the name and description).
  if (request.tab == "editor") window.editor()->form()->setCurrentIndex(1);
  // Let layouts, deferred loads and repaints settle before the picture is taken.
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QEventLoop wait;
    QTimer::singleShot(50, &wait, &QEventLoop::quit);
    wait.exec();
  }
  try {
    // A file the scenario named (a profile) was read while the picture was prepared.
    driver::refuse_unsafe_output(request.output.toStdString(), "--screenshot");
    if (suffix == "png") {
      if (!window.grab().save(request.output, "PNG")) {
        error_line(request.output + ": cannot write the image");
        return kExitRuntime;
      }
    } else {
      window.export_view(request.output);
    }
  } catch (const InputError& e) {
    error_line(QString::fromStdString(e.what()));
    return kExitBadInput;
  } catch (const std::exception& e) {
    error_line(QString::fromStdString(e.what()));
    return kExitRuntime;
  }
  std::cerr << "dtsim-gui: wrote " << request.output.toStdString() << " ("
            << request.tab.toStdString() << ", " << request.size.width() << "x"
            << request.size.height() << " px)\n";
  return kExitOk;
}

}  // namespace dtsim::gui
