// Helpers the QtTest suites of dtsim-gui share: the window's options and a run to its end.
#pragma once

#include <QSignalSpy>
#include <QString>
#include <QtTest>

#include "gui/app/main_window.h"

namespace dtsim::gui::testing {

// The dtsim program ctest names in $DTSIM, and the engine to run ("" for the scenario's own).
inline MainWindow::Options options(const QString& engine = {}) {
  return MainWindow::Options{qEnvironmentVariable("DTSIM"), engine};
}

// Runs the window's scenario and waits until its results are on screen; a default record when
// it did not start or show within `timeout_ms`.
inline RunRecord run_to_end(MainWindow& window, int timeout_ms = 120000) {
  QSignalSpy finished(&window, &MainWindow::run_finished);
  QSignalSpy shown(&window, &MainWindow::run_shown);
  QString why;
  if (!window.run_simulation(&why)) qWarning() << why;
  if (!shown.wait(timeout_ms)) return RunRecord{};
  return finished.isEmpty() ? RunRecord{} : qvariant_cast<RunRecord>(finished.first().first());
}

}  // namespace dtsim::gui::testing
