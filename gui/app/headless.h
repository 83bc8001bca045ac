// `dtsim-gui SCENARIO --screenshot OUT.png [--tab NAME] [--engine E]`: opens the scenario, runs
// the simulation when the tab shows a result, renders the window with that tab in front, writes
// the image and returns, for docs and tests (docs/design.md section 6).
//
// Contract: returns the process's exit code: 0 written; 2 bad input (a scenario with problems,
// printed to stderr as the CLI prints them; a run the child refused as bad input); 1 any other
// failure (a run that failed, an image that cannot be written). Needs a QApplication (any
// platform: offscreen draws without a display, Xvfb with real fonts).
#pragma once

#include <QSize>
#include <QString>

namespace dtsim::gui {

struct HeadlessRequest {
  QString scenario;
  QString output;  // .png (or .svg)
  QString tab = "summary";
  QString engine;           // "" for the scenario's own
  QString dtsim;            // the dtsim program
  QSize size{1280, 800};    // the window's size, so images have a known size
  QString vary;             // scaling tab: "KEY=V1,V2,..."; "" for nodes around the scenario's
  double timeout_s = 3600;  // a simulation or sweep still running after this is stopped (exit 1)
};

int take_screenshot(const HeadlessRequest& request);

// Which tabs need a simulation before they show anything.
bool tab_needs_run(const QString& tab);

}  // namespace dtsim::gui
