#include "gui/app/headless.h"

#include <QApplication>
#include <QComboBox>
#include <QEventLoop>
#include <QFileInfo>
#include <QTimer>
#include <iostream>

#include "core/base/error.h"
#include "gui/app/main_window.h"
#include "gui/app/scenario_editor.h"

namespace dtsim::gui {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitBadInput = 2;

void error_line(const QString& text) {
  std::cerr << "error: " << text.toStdString() << "\n";
}

// Runs one simulation in `window` and waits (in an event loop) until it is on screen. Returns
// the finished record.
RunRecord run_and_wait(MainWindow& window, const QString& engine) {
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
  if (!shown) loop.exec();
  return last;
}

int exit_code_of(const RunRecord& r) {
  if (r.status == RunRecord::Status::kOk) return kExitOk;
  error_line(r.message.isEmpty() ? "the simulation did not finish" : r.message);
  return r.status == RunRecord::Status::kBadInput ? kExitBadInput : kExitRuntime;
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
    const RunRecord first = run_and_wait(window, request.engine);
    if (const int code = exit_code_of(first); code != kExitOk) return code;
    if (request.tab == "compare") {
      // The scenario against itself under the other engine: where contention matters.
      const QString other = first.engine == "analytic" ? "simgrid" : "analytic";
      const RunRecord second = run_and_wait(window, other);
      if (const int code = exit_code_of(second); code != kExitOk) return code;
      window.compare_runs(first.id, second.id);
    }
  }
  window.select_tab(request.tab);
  // Let layouts, deferred loads and repaints settle before the picture is taken.
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QEventLoop wait;
    QTimer::singleShot(50, &wait, &QEventLoop::quit);
    wait.exec();
  }
  try {
    if (suffix == "png") {
      if (!window.grab().save(request.output, "PNG")) {
        error_line(request.output + ": cannot write the image");
        return kExitRuntime;
      }
    } else {
      window.export_view(request.output);
    }
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
