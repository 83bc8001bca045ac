#include "gui/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollBar>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include "core/base/error.h"
#include "core/config/engine_choices.h"
#include "gui/app/scenario_editor.h"
#include "gui/app/summary_view.h"
#include "gui/app/yaml_edit.h"
#include "gui/views/compare_view.h"
#include "gui/views/export.h"
#include "gui/views/memory_view.h"
#include "gui/views/scaling_view.h"
#include "gui/views/timeline_view.h"
#include "gui/views/trace_model.h"

namespace dtsim::gui {

namespace {

const QStringList kTabNames{"editor", "summary", "timeline", "memory", "scaling", "compare"};

QString status_text(RunRecord::Status s) {
  switch (s) {
    case RunRecord::Status::kRunning:
      return "running";
    case RunRecord::Status::kOk:
      return "done";
    case RunRecord::Status::kDoesNotFit:
      return "does not fit";
    case RunRecord::Status::kBadInput:
      return "bad input";
    case RunRecord::Status::kFailed:
      return "failed";
    case RunRecord::Status::kCancelled:
      return "cancelled";
  }
  return {};
}

}  // namespace

QStringList MainWindow::tab_names() {
  return kTabNames;
}

MainWindow::MainWindow(const Options& options, QWidget* parent)
    : QMainWindow(parent), options_(options) {
  editor_ = new ScenarioEditor(this);
  summary_ = new SummaryView(this);
  timeline_ = new TimelineView(this);
  memory_ = new MemoryView(this);
  scaling_ = new ScalingView(this);
  scaling_->set_dtsim(options_.dtsim);
  compare_ = new CompareView(this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(editor_, "Editor");
  tabs_->addTab(summary_, "Summary");
  tabs_->addTab(timeline_, "Timeline");
  tabs_->addTab(memory_, "Memory");
  tabs_->addTab(scaling_, "Scaling");
  tabs_->addTab(compare_, "Compare");
  setCentralWidget(tabs_);
  build_run_panel();
  build_menus();
  connect(editor_, &ScenarioEditor::modified_changed, this, &MainWindow::update_title);
  connect(editor_, &ScenarioEditor::file_changed, this, &MainWindow::update_title);
  // The Scaling tab sweeps the file as saved; a run updates it to what was run.
  connect(editor_, &ScenarioEditor::file_changed, this, [this](const QString& path) {
    if (!path.isEmpty()) scaling_->set_scenario(path, {});
  });
  connect(editor_, &ScenarioEditor::validated, this, [this](bool ok) {
    const auto n = editor_->diagnostics().size();
    statusBar()->showMessage(
        ok ? "Scenario checked: no problems."
           : QString("Scenario has %1 problem%2 (see the editor).").arg(n).arg(n == 1 ? "" : "s"));
  });
  update_title();
  resize(1280, 800);
}

MainWindow::~MainWindow() {
  for (auto& t : loaders_)
    if (t) t->wait();
}

void MainWindow::build_run_panel() {
  auto* dock = new QDockWidget("Runs", this);
  dock->setObjectName("runs");
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  auto* panel = new QWidget(dock);
  auto* layout = new QVBoxLayout(panel);
  auto* controls = new QHBoxLayout;
  engine_ = new QComboBox(panel);
  engine_->addItem("scenario's engine", QString());
  for (const auto& e : engine_choice_list())
    engine_->addItem(QString::fromStdString(e.name), QString::fromStdString(e.name));
  engine_->setToolTip("The engine to run with (dtsim simulate --engine).");
  if (!options_.engine.isEmpty())
    engine_->setCurrentIndex(std::max(0, engine_->findData(options_.engine)));
  run_button_ = new QPushButton("Run", panel);
  run_button_->setToolTip("Simulate the scenario in the editor (Ctrl+R).");
  cancel_button_ = new QPushButton("Cancel", panel);
  cancel_button_->setToolTip("Stop the running simulation and every process it started.");
  cancel_button_->setEnabled(false);
  controls->addWidget(engine_, 1);
  controls->addWidget(run_button_);
  controls->addWidget(cancel_button_);
  layout->addLayout(controls);
  trace_ = new QCheckBox("Trace for the Timeline", panel);
  trace_->setChecked(true);
  trace_->setToolTip(
      "Write the run's trace (dtsim simulate --trace), which the Timeline and Compare tabs "
      "show. Untick it for a run whose trace would not fit in memory: the other tabs need none.");
  layout->addWidget(trace_);
  elapsed_ = new QLabel("No simulation running.", panel);
  phase_ = new QLabel(panel);
  phase_->setWordWrap(true);
  layout->addWidget(elapsed_);
  layout->addWidget(phase_);
  layout->addWidget(new QLabel("History (select two to compare):", panel));
  history_ = new QTableWidget(0, 5, panel);
  history_->setHorizontalHeaderLabels({"Scenario", "Engine", "Step time", "Started", "Status"});
  history_->setSelectionBehavior(QAbstractItemView::SelectRows);
  history_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  history_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  history_->verticalHeader()->hide();
  // A long scenario name is elided in its own column; the step time and the status, which
  // are short, always keep their width in view.
  history_->setWordWrap(false);
  history_->setTextElideMode(Qt::ElideMiddle);
  history_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  history_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  history_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  history_->setToolTip("Double-click a run to show it; select two and press Compare.");
  layout->addWidget(history_, 2);
  auto* compare_button = new QPushButton("Compare selected", panel);
  compare_button->setToolTip("Show the two selected runs side by side in the Compare tab.");
  layout->addWidget(compare_button);
  log_ = new QPlainTextEdit(panel);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  log_->setToolTip("What each simulation said on stderr.");
  layout->addWidget(log_, 1);
  dock->setWidget(panel);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  resizeDocks({dock}, {330}, Qt::Horizontal);

  tick_ = new QTimer(this);
  tick_->setInterval(100);
  connect(tick_, &QTimer::timeout, this, [this] {
    if (run_ && run_->running())
      elapsed_->setText(QString("Running: %1 s elapsed").arg(run_->elapsed_s(), 0, 'f', 1));
  });
  connect(run_button_, &QPushButton::clicked, this, [this] {
    QString why;
    if (!run_simulation(&why)) statusBar()->showMessage(why);
  });
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel_simulation);
  connect(history_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    if (row >= 0 && row < static_cast<int>(runs_.size())) show_run(runs_[static_cast<size_t>(row)]);
  });
  connect(compare_button, &QPushButton::clicked, this, [this] {
    const auto rows = history_->selectionModel()->selectedRows();
    if (rows.size() != 2) {
      statusBar()->showMessage("Select two runs in the history to compare them.");
      return;
    }
    compare_runs(runs_[static_cast<size_t>(rows[0].row())].id,
                 runs_[static_cast<size_t>(rows[1].row())].id);
  });
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&New", QKeySequence::New, this, [this] {
    if (confirm_discard()) editor_->set_text("");
  });
  file->addAction("&Open...", QKeySequence::Open, this, &MainWindow::do_open);
  recent_menu_ = file->addMenu("Open &Recent");
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::rebuild_recent_menu);
  file->addAction("&Save", QKeySequence::Save, this, [this] { do_save(false); });
  file->addAction("Save &As...", QKeySequence::SaveAs, this, [this] { do_save(true); });
  file->addSeparator();
  file->addAction("&Export view...", QKeySequence(Qt::CTRL | Qt::Key_E), this,
                  &MainWindow::do_export);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* edit = menuBar()->addMenu("&Edit");
  edit->addAction("&Undo", QKeySequence::Undo, this, [this] { editor_->undo(); });
  edit->addAction("&Redo", QKeySequence::Redo, this, [this] { editor_->redo(); });

  QMenu* run = menuBar()->addMenu("&Run");
  run->addAction("&Run simulation", QKeySequence(Qt::CTRL | Qt::Key_R), this, [this] {
    QString why;
    if (!run_simulation(&why)) statusBar()->showMessage(why);
  });
  run->addAction("&Cancel simulation", QKeySequence(Qt::Key_Escape), this,
                 &MainWindow::cancel_simulation);

  QMenu* view = menuBar()->addMenu("&View");
  for (int i = 0; i < tabs_->count(); ++i)
    view->addAction(tabs_->tabText(i), QKeySequence(Qt::ALT | (Qt::Key_1 + i)), this,
                    [this, i] { tabs_->setCurrentIndex(i); });
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  const QStringList files = ScenarioEditor::recent_files();
  if (files.isEmpty()) recent_menu_->addAction("(none yet)")->setEnabled(false);
  for (const QString& f : files)
    recent_menu_->addAction(f, this, [this, f] {
      if (!confirm_discard()) return;
      QString error;
      if (!open_scenario(f, &error)) QMessageBox::warning(this, "Open", error);
    });
}

bool MainWindow::open_scenario(const QString& path, QString* error) {
  if (!editor_->open(path, error)) return false;
  tabs_->setCurrentWidget(editor_);
  return true;
}

void MainWindow::do_open() {
  if (!confirm_discard()) return;
  const QString start =
      editor_->file_path().isEmpty() ? QDir::currentPath() : QFileInfo(editor_->file_path()).path();
  const QString path = QFileDialog::getOpenFileName(this, "Open scenario", start,
                                                    "Scenarios (*.yaml *.yml);;All files (*)");
  if (path.isEmpty()) return;
  QString error;
  if (!open_scenario(path, &error)) QMessageBox::warning(this, "Open", error);
}

void MainWindow::do_save(bool as) {
  QString error;
  if (!as && !editor_->file_path().isEmpty()) {
    if (!editor_->save(&error)) QMessageBox::warning(this, "Save", error);
    return;
  }
  const QString path = QFileDialog::getSaveFileName(this, "Save scenario as", editor_->file_path(),
                                                    "Scenarios (*.yaml *.yml)");
  if (path.isEmpty()) return;
  if (!editor_->save_as(path, &error)) QMessageBox::warning(this, "Save", error);
}

void MainWindow::do_export() {
  const QString name = tabs_->tabText(tabs_->currentIndex()).toLower();
  const QString path =
      QFileDialog::getSaveFileName(this, "Export view", QDir::current().filePath(name + ".png"),
                                   "PNG image (*.png);;SVG drawing (*.svg)");
  if (path.isEmpty()) return;
  try {
    export_view(path);
    statusBar()->showMessage("Exported the " + name + " view to " + path);
  } catch (const std::exception& e) {
    QMessageBox::warning(this, "Export view", QString::fromStdString(e.what()));
  }
}

void MainWindow::export_view(const QString& path) {
  export_widget(tabs_->currentWidget(), path);
}

bool MainWindow::confirm_discard() {
  if (!editor_->modified()) return true;
  const auto answer = QMessageBox::question(
      this, "Unsaved changes", "The scenario has unsaved changes. Discard them?",
      QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Cancel);
  return answer == QMessageBox::Discard;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!confirm_discard()) {
    event->ignore();
    return;
  }
  if (run_ && run_->running()) run_->cancel();
  event->accept();
}

void MainWindow::update_title() {
  const QString file =
      editor_->file_path().isEmpty() ? "untitled.yaml" : QFileInfo(editor_->file_path()).fileName();
  setWindowTitle(file + "[*] - dtsim-gui");
  setWindowModified(editor_->modified());
}

void MainWindow::log(const QString& text) {
  log_->appendPlainText(text);
  // The newest line stays in view, as a terminal's would.
  log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
}

bool MainWindow::select_tab(const QString& name) {
  const qsizetype i = kTabNames.indexOf(name.toLower());
  if (i < 0) return false;
  tabs_->setCurrentIndex(static_cast<int>(i));
  return true;
}

QWidget* MainWindow::tab(const QString& name) const {
  const qsizetype i = kTabNames.indexOf(name.toLower());
  return i < 0 ? nullptr : tabs_->widget(static_cast<int>(i));
}

bool MainWindow::run_simulation(QString* why) {
  auto refuse = [&](const QString& reason) {
    if (why) *why = reason;
    return false;
  };
  if (run_ && run_->running()) return refuse("A simulation is running; cancel it or wait.");
  editor_->refresh();
  if (!editor_->valid())
    return refuse("The scenario has problems (listed in the editor); fix them to run it.");
  if (!session_dir_.isValid()) return refuse("Cannot create a folder for the run's files.");
  const int id = next_run_id_++;
  const QString run_dir = QDir(session_dir_.path()).filePath(QString("run-%1").arg(id));
  QDir().mkpath(run_dir);
  RunRequest request;
  request.dtsim = options_.dtsim;
  request.engine = engine_->currentData().toString();
  request.run_dir = run_dir;
  request.label = editor_->scenario_name();
  request.trace = trace_->isChecked();
  if (!editor_->file_path().isEmpty() && !editor_->modified()) {
    request.scenario_file = editor_->file_path();
  } else {
    // Unsaved text runs from a copy; its relative profile still resolves from the file's folder.
    request.scenario_file = QDir(run_dir).filePath("scenario.yaml");
    QSaveFile copy(request.scenario_file);
    if (!copy.open(QIODevice::WriteOnly)) return refuse("Cannot write " + request.scenario_file);
    copy.write(editor_->text().toUtf8());
    if (!copy.commit()) return refuse("Cannot write " + request.scenario_file);
    try {
      const auto entries = yaml_entries(editor_->text().toStdString());
      auto it = entries.find("cluster.profile");
      if (it != entries.end() && !it->second.text.empty() && !editor_->file_path().isEmpty() &&
          QFileInfo(QString::fromStdString(it->second.text)).isRelative())
        request.overrides << "cluster.profile=" +
                                 QFileInfo(editor_->file_path())
                                     .dir()
                                     .absoluteFilePath(QString::fromStdString(it->second.text));
    } catch (const YamlEditError&) {
      // The loader accepted the text, so it parses; nothing to add.
    }
  }
  scaling_->set_scenario(request.scenario_file, request.overrides);
  if (run_) run_->deleteLater();
  run_ = new SimulationRun(this);
  connect(run_, &SimulationRun::progress, this, [this](const QString& line) {
    phase_->setText(line);
    log(line);
  });
  connect(run_, &SimulationRun::finished, this, &MainWindow::on_run_finished);
  log(QString("run %1: dtsim simulate %2%3")
          .arg(id)
          .arg(request.scenario_file)
          .arg(request.engine.isEmpty() ? QString() : " --engine " + request.engine));
  run_->start(request, id);
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  elapsed_->setText("Running: 0.0 s elapsed");
  phase_->setText("starting dtsim simulate");
  tick_->start();
  return true;
}

void MainWindow::cancel_simulation() {
  if (run_ && run_->running()) {
    phase_->setText("cancelling");
    run_->cancel();
  }
}

void MainWindow::on_run_finished(const RunRecord& record) {
  tick_->stop();
  run_button_->setEnabled(true);
  cancel_button_->setEnabled(false);
  runs_.push_back(record);
  add_history_row(record);
  elapsed_->setText(QString("Last run: %1 after %2 s")
                        .arg(status_text(record.status))
                        .arg(record.wall_s, 0, 'f', 1));
  phase_->clear();
  // The command line's advice names its flag; here the flag is the Trace box.
  RunRecord shown = record;
  if (shown.message.contains("leave out --trace"))
    shown.message += "\n(In dtsim-gui: untick \"Trace for the Timeline\" in the Runs panel.)";
  if (!shown.message.isEmpty()) log(shown.message);
  emit run_finished(record);
  if (record.has_result()) {
    show_run(record);
  } else {
    summary_->show_message(QString("Run %1 %2.\n\n%3")
                               .arg(record.id)
                               .arg(status_text(record.status))
                               .arg(shown.message));
    if (record.status != RunRecord::Status::kCancelled) tabs_->setCurrentWidget(summary_);
    emit run_shown(record.id, false);
  }
}

void MainWindow::add_history_row(const RunRecord& r) {
  const int row = history_->rowCount();
  history_->insertRow(row);
  const QString step = r.has_result() ? format_seconds(r.step_time_s()) : "";
  const QStringList cells{r.label.isEmpty() ? QFileInfo(r.scenario_file).fileName() : r.label,
                          r.engine.isEmpty() ? "default" : r.engine, step,
                          r.started.toString("HH:mm:ss"), status_text(r.status)};
  for (int c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    item->setToolTip(QString("run %1 (%2): %3, %4 s wall-clock")
                         .arg(r.id)
                         .arg(cells[0])
                         .arg(r.scenario_file)
                         .arg(r.wall_s, 0, 'f', 1));
    history_->setItem(row, c, item);
  }
}

void MainWindow::show_run(const RunRecord& record) {
  shown_run_ = record.id;
  summary_->set_result(
      record.result,
      QString("%1 (run %2, %3 engine)").arg(record.label).arg(record.id).arg(record.engine));
  if (tabs_->currentWidget() == editor_) tabs_->setCurrentWidget(summary_);
  memory_->set_result(record.result);
  const int id = record.id;
  if (record.trace_file.isEmpty()) {
    timeline_->set_trace(nullptr);
    emit run_shown(id, false);
    return;
  }
  // A trace of a large run is tens of MB of JSON: read it off the UI thread.
  const QString trace_file = record.trace_file;
  QThread* loader = QThread::create([this, trace_file, id] {
    std::shared_ptr<const TraceModel> model;
    QString error;
    try {
      model = TraceModel::load(trace_file);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [this, model, error, id] {
          if (id != shown_run_) return;  // a later run is on screen
          if (model) timeline_->set_trace(model);
          if (!error.isEmpty()) log(error);
          emit run_shown(id, model != nullptr);
        },
        Qt::QueuedConnection);
  });
  connect(loader, &QThread::finished, loader, &QObject::deleteLater);
  loaders_.emplace_back(loader);
  loader->start();
}

void MainWindow::compare_runs(int first_id, int second_id) {
  const RunRecord* a = nullptr;
  const RunRecord* b = nullptr;
  for (const auto& r : runs_) {
    if (r.id == first_id) a = &r;
    if (r.id == second_id) b = &r;
  }
  if (!a || !b || !a->has_result() || !b->has_result()) {
    statusBar()->showMessage("Compare needs two runs that finished.");
    return;
  }
  compare_->set_files(a->result_file, b->result_file, a->trace_file, b->trace_file);
  tabs_->setCurrentWidget(compare_);
}

}  // namespace dtsim::gui
