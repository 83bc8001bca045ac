// dtsim-gui: the desktop application (docs/design.md section 6).
//   dtsim-gui [SCENARIO] [--engine E] [--dtsim PATH]
//   dtsim-gui SCENARIO --screenshot OUT.png [--tab NAME] [--engine E]
// Exit codes: 0 success; 2 bad input (flags, a scenario with problems); 1 runtime failure.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QMessageBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "core/config/engine_choices.h"
#include "gui/app/headless.h"
#include "gui/app/main_window.h"
#include "gui/app/simulation_run.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitBadInput = 2;

const char* const kHelp =
    R"(dtsim-gui: edit a training scenario, simulate it and see where its step time goes.

Usage:
  dtsim-gui [SCENARIO] [--engine E] [--dtsim PATH]
  dtsim-gui SCENARIO --screenshot OUT.png [--tab NAME] [--engine E] [--size WxH]

The window has six tabs:
  Editor    the scenario as a form (sections cluster, model, parallelism, training, failures
            (stragglers, failures, checkpoints), simulate) beside its YAML; both stay in step,
            and every change is checked by the loader dtsim simulate uses, with problems shown
            at the field and line
  Summary   step time, throughput, MFU, memory per GPU and where one step's time goes; with a
            failure model, goodput, time to train, interruptions and the checkpoint interval
  Timeline  every rank's kernels and collectives over the step (wheel zooms, drag pans)
  Memory    memory per GPU by category against the GPU's capacity
  Scaling   a sweep of the scenario over cluster sizes: speedup, efficiency, Amdahl's fit
  Compare   two runs from the history side by side
Run (Ctrl+R) simulates the editor's scenario in a child `dtsim simulate` process; Cancel (Esc)
stops it. Untick "Trace for the Timeline" for a run whose trace would not fit in memory.
File > Export view... writes the current tab as PNG or SVG.

Options:
  SCENARIO             scenario YAML file to open (see docs/scenario-reference.md)
  --engine E           engine for runs: %ENGINES% (default: the scenario's simulate.engine)
  --dtsim PATH         the dtsim program to run (default: $DTSIM, else the one next to
                       dtsim-gui or in its build tree)
  --screenshot FILE    no window: run the simulation if the tab needs one, write the window as
                       a PNG (or SVG) image and exit: 0 written, 2 bad input, 1 failure
  --tab NAME           tab for --screenshot: editor | summary | timeline | memory | scaling |
                       compare (default summary; compare runs the other engine beside E)
  --size WxH           window size in pixels for --screenshot (default 1280x800)
  --vary KEY=VALUES    the sweep of --tab scaling (default: cluster.nodes at the scenario's
                       count and up to three halvings its parallelism and batch accept),
                       e.g. parallelism.tensor=1,2,4,8
  --timeout SECONDS    for --screenshot: stop a simulation or sweep that has not finished after
                       this long and exit 1 (default 3600)
  -h, --help           this help
  --version            the version

Examples:
  dtsim-gui scenarios/default.yaml
  dtsim-gui scenarios/default.yaml --screenshot summary.png --tab summary
  dtsim-gui scenarios/default.yaml --screenshot scaling.png --tab scaling --engine analytic
  dtsim-gui scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml --engine analytic \
      --screenshot timeline.png --tab timeline
Without a display, --screenshot draws offscreen (QT_QPA_PLATFORM=offscreen); under Xvfb
(scripts/gui-screenshots.sh) it uses the X fonts.
)";

std::string help_text() {
  std::string engines;
  for (const auto& e : dtsim::engine_choices()) engines += (engines.empty() ? "" : " | ") + e;
  std::string text = kHelp;
  const std::string marker = "%ENGINES%";
  text.replace(text.find(marker), marker.size(), engines);
  return text;
}

// Qt's own messages, marked as such; the offscreen platform's notice that it cannot resize a
// native window (it has none) says nothing to a user and is dropped.
void qt_message(QtMsgType, const QMessageLogContext&, const QString& message) {
  if (message.contains("propagateSizeHints")) return;
  std::cerr << "dtsim-gui: Qt: " << message.toStdString() << "\n";
}

int bad_input(const std::string& message) {
  std::cerr << "error: " << message << "\n(dtsim-gui --help shows the options)\n";
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  // Flags first, without a QApplication: --help and bad flags need no display.
  QStringList args;
  for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  QCommandLineParser parser;
  parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  const QCommandLineOption help({"h", "help"}, "help");
  const QCommandLineOption version("version", "version");
  const QCommandLineOption engine("engine", "engine", "E");
  const QCommandLineOption dtsim("dtsim", "dtsim", "PATH");
  const QCommandLineOption screenshot("screenshot", "image", "FILE");
  const QCommandLineOption tab("tab", "tab", "NAME", "summary");
  const QCommandLineOption size("size", "size", "WxH", "1280x800");
  const QCommandLineOption vary("vary", "vary", "KEY=VALUES");
  const QCommandLineOption timeout("timeout", "timeout", "SECONDS", "3600");
  parser.addOptions({help, version, engine, dtsim, screenshot, tab, size, vary, timeout});
  parser.addPositionalArgument("scenario", "scenario");
  if (!parser.parse(args)) return bad_input(parser.errorText().toStdString());
  if (parser.isSet(help)) {
    std::cout << help_text();
    return kExitOk;
  }
  if (parser.isSet(version)) {
    std::cout << "dtsim-gui " << QT_VERSION_STR << " (Qt)\n";
    return kExitOk;
  }
  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1)
    return bad_input("one scenario at most, got " + std::to_string(positional.size()));
  const QString scenario = positional.value(0);
  const QString engine_name = parser.value(engine);
  if (!engine_name.isEmpty()) {
    const auto names = dtsim::engine_choices();
    if (std::find(names.begin(), names.end(), engine_name.toStdString()) == names.end())
      return bad_input("--engine " + engine_name.toStdString() +
                       ": not an engine (dtsim catalog engines)");
  }
  const QString tab_name = parser.value(tab).toLower();
  if (!dtsim::gui::MainWindow::tab_names().contains(tab_name))
    return bad_input("--tab " + tab_name.toStdString() + ": expected one of " +
                     dtsim::gui::MainWindow::tab_names().join(" | ").toStdString());
  const QStringList wh = parser.value(size).split('x');
  bool w_ok = false, h_ok = false;
  const QSize window_size(wh.value(0).toInt(&w_ok), wh.value(1).toInt(&h_ok));
  if (wh.size() != 2 || !w_ok || !h_ok || window_size.width() < 320 || window_size.height() < 240 ||
      window_size.width() > 8192 || window_size.height() > 8192)
    return bad_input("--size " + parser.value(size).toStdString() +
                     ": expected WIDTHxHEIGHT in pixels, from 320x240 to 8192x8192");
  const bool headless = parser.isSet(screenshot);
  if (headless && scenario.isEmpty()) return bad_input("--screenshot needs a SCENARIO to show");
  bool timeout_ok = false;
  const double timeout_s = parser.value(timeout).toDouble(&timeout_ok);
  if (!timeout_ok || !(timeout_s > 0) || timeout_s > 1e6)
    return bad_input("--timeout " + parser.value(timeout).toStdString() +
                     ": expected seconds, more than 0 and at most 1000000");
  if (parser.isSet(vary) && !parser.value(vary).contains('='))
    return bad_input("--vary " + parser.value(vary).toStdString() +
                     ": expected KEY=VALUES, e.g. cluster.nodes=1,2,4,8");

  const bool has_display = !qEnvironmentVariableIsEmpty("DISPLAY") ||
                           !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
                           !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  if (!has_display) {
    if (!headless) {
      std::cerr << "error: no display (DISPLAY is not set): start dtsim-gui in a desktop session, "
                   "or take pictures without one with --screenshot OUT.png\n";
      return kExitRuntime;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  // Qt warns on every start without XDG_RUNTIME_DIR; a private folder of this process's own
  // (owner-only, as QTemporaryDir makes it) silences it and is removed when the program ends.
  std::unique_ptr<QTemporaryDir> runtime_dir;
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
    runtime_dir =
        std::make_unique<QTemporaryDir>(QDir::temp().filePath("dtsim-gui-runtime-XXXXXX"));
    if (runtime_dir->isValid()) qputenv("XDG_RUNTIME_DIR", runtime_dir->path().toLocal8Bit());
  }

  qInstallMessageHandler(qt_message);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("dtsim");
  QApplication::setApplicationName("dtsim-gui");
  dtsim::gui::become_subreaper();
  const QString program = dtsim::gui::dtsim_program(parser.value(dtsim));

  if (headless) {
    dtsim::gui::HeadlessRequest request;
    request.scenario = scenario;
    request.output = parser.value(screenshot);
    request.tab = tab_name;
    request.engine = engine_name;
    request.dtsim = program;
    request.size = window_size;
    request.timeout_s = timeout_s;
    request.vary = parser.value(vary);
    return dtsim::gui::take_screenshot(request);
  }

  dtsim::gui::MainWindow window(dtsim::gui::MainWindow::Options{program, engine_name});
  if (!scenario.isEmpty()) {
    QString error;
    if (!window.open_scenario(scenario, &error)) {
      std::cerr << (error.startsWith("error: ") ? "" : "error: ") << error.toStdString() << "\n";
      return kExitBadInput;
    }
  }
  window.show();
  return app.exec();
}
