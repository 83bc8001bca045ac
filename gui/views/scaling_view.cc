#include "gui/views/scaling_view.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <QtCharts/QChartView>
#include <set>

#include "core/base/error.h"
#include "driver/predict.h"
#include "driver/sweep_results.h"
#include "gui/plot/qt_chart.h"
#include "gui/plot/scaling_plots.h"

namespace dtsim::gui {
namespace {

// Keys people scale along, with values that make a first sweep (each one a doubling series, so
// the log axes of the charts space them evenly).
struct CommonKey {
  const char* key;
  const char* values;
};
constexpr CommonKey kCommonKeys[] = {
    {"cluster.nodes", "1,2,4,8"},
    {"parallelism.tensor", "1,2,4,8"},
    {"parallelism.pipeline", "1,2,4"},
    {"training.micro_batch_size", "1,2,4,8"},
};

constexpr int kStderrLinesKept = 12;  // enough for a child's error and the sweep's summary
constexpr int kKillAfter_ms = 2000;   // after SIGTERM, before SIGKILL

QString message_of(const std::exception& e) {
  if (const auto* input = dynamic_cast<const InputError*>(&e)) {
    QStringList lines;
    for (const auto& d : input->diagnostics()) lines << QString::fromStdString(d.render());
    return lines.join('\n');
  }
  return QString::fromStdString(e.what());
}

QString fit_line(const char* law, const driver::SerialFractionFit& fit) {
  return QString("%1: f = %2 (%3 % of the baseline's time), %4 % interval [%5, %6]")
      .arg(law)
      .arg(fit.serial_fraction, 0, 'g', 4)
      .arg(fit.serial_fraction * 100, 0, 'g', 3)
      .arg(fit.confidence * 100, 0, 'g', 3)
      .arg(fit.interval_low, 0, 'g', 4)
      .arg(fit.interval_high, 0, 'g', 4);
}

// The x key: the GPU count when it changes between the ok rows (what `dtsim analyze` uses by
// default), else the key the sweep varied (a parallel degree at a fixed GPU count).
std::string choose_x_key(const driver::ResultsFile& results) {
  std::set<double> gpus;
  int ok = 0;
  for (const auto& row : results.rows) {
    if (!row.ok()) continue;
    ++ok;
    if (auto g = driver::number_of(row, "config.gpus")) gpus.insert(*g);
  }
  if (static_cast<int>(gpus.size()) == ok || results.varied_keys.empty()) return "config.gpus";
  return results.varied_keys.front();
}

// The charts share a panel at a laptop's size: smaller type for titles, axis titles and legends,
// and thin margins, so that their text is drawn whole rather than elided.
void fit_to_panel(QChart* chart) {
  QFont small = chart->legend()->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  chart->legend()->setFont(small);
  chart->setMargins(QMargins(4, 4, 4, 4));
  QFont title = chart->titleFont();
  title.setPointSizeF(small.pointSizeF() * 1.1);
  chart->setTitleFont(title);
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setTitleFont(small);
    axis->setLabelsFont(small);
  }
}

}  // namespace

QString suggested_node_sweep(const QString& scenario_file, const QStringList& overrides) {
  const QString fallback = kCommonKeys[0].values;
  std::vector<std::string> sets;
  for (const QString& o : overrides) sets.push_back(o.toStdString());
  const std::string file = scenario_file.toStdString();
  int nodes = 0;
  try {
    nodes = driver::load(file, sets).cluster.nodes;
  } catch (const std::exception&) {
    return fallback;
  }
  auto loads = [&](int n) {
    auto with = sets;
    with.push_back("cluster.nodes=" + std::to_string(n));
    try {
      driver::load(file, with);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  constexpr int kPoints = 4;
  std::vector<int> counts{nodes};
  for (int n = nodes; n % 2 == 0 && n > 1 && static_cast<int>(counts.size()) < kPoints;) {
    n /= 2;
    if (!loads(n)) break;  // a halving that does not fit its parallelism; smaller ones won't
    counts.insert(counts.begin(), n);
  }
  // Too few below it (a small cluster, or halvings the parallelism refuses): doublings above.
  for (int n = nodes; static_cast<int>(counts.size()) < kPoints && n <= (1 << 20) / 2;) {
    n *= 2;
    if (loads(n)) counts.push_back(n);
    if (n >= nodes * 8) break;
  }
  QStringList text;
  for (int n : counts) text << QString::number(n);
  return text.join(',');
}

ScalingView::ScalingView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);

  auto* controls = new QHBoxLayout();
  key_ = new QComboBox(this);
  key_->setEditable(true);  // any scenario key, typed
  for (const auto& k : kCommonKeys) key_->addItem(k.key);
  key_->setToolTip("the scenario key to vary: pick a common one or type any key path");
  values_ = new QLineEdit(kCommonKeys[0].values, this);
  values_->setPlaceholderText("1,2,4,8 or range(1,8,1)");
  values_->setToolTip("values of the key: a list, or range(first,last,step)");
  engine_ = new QComboBox(this);
  engine_->addItem("analytic");
  engine_->addItem("simgrid");
  engine_->setToolTip(
      "analytic: closed form, instant; simgrid: discrete-event simulation with contention");
  run_ = new QPushButton("Run sweep", this);
  cancel_ = new QPushButton("Cancel", this);
  cancel_->setEnabled(false);
  controls->addWidget(new QLabel("vary", this));
  controls->addWidget(key_, 2);
  controls->addWidget(new QLabel("over", this));
  controls->addWidget(values_, 2);
  controls->addWidget(new QLabel("engine", this));
  controls->addWidget(engine_);
  controls->addWidget(run_);
  controls->addWidget(cancel_);
  layout->addLayout(controls);

  auto* progress_row = new QHBoxLayout();
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat("no sweep running");
  status_ =
      new QLabel("Choose a key and its values, then run the sweep, or open a results file", this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_row->addWidget(progress_, 1);
  progress_row->addWidget(status_, 3);
  layout->addLayout(progress_row);

  fit_ = new QLabel(this);
  fit_->setWordWrap(true);
  fit_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(fit_);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  auto* chart_area = new QWidget(splitter);
  charts_ = new QGridLayout(chart_area);
  charts_->setContentsMargins(0, 0, 0, 0);
  report_ = new QPlainTextEdit(splitter);
  report_->setReadOnly(true);
  report_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  report_->setPlaceholderText("The report of dtsim analyze appears here");
  splitter->addWidget(chart_area);
  splitter->addWidget(report_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  layout->addWidget(splitter, 1);

  connect(run_, &QPushButton::clicked, this, &ScalingView::run_clicked);
  connect(cancel_, &QPushButton::clicked, this, &ScalingView::cancel_sweep);
  connect(key_, &QComboBox::textActivated, this, &ScalingView::key_chosen);

  const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath("dtsim");
  dtsim_ = QFileInfo(beside).isExecutable() ? beside : QString("dtsim");
}

ScalingView::~ScalingView() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    // The view is going away: end the sweep and every process under it, and do not report.
    process_->disconnect(this);
    const auto group = static_cast<pid_t>(process_->processId());
    if (group > 0) ::kill(-group, SIGTERM);
    process_->terminate();
    if (!process_->waitForFinished(kKillAfter_ms)) {
      if (group > 0) ::kill(-group, SIGKILL);
      process_->kill();
      process_->waitForFinished(kKillAfter_ms);
    }
  }
}

void ScalingView::set_scenario(const QString& path, const QStringList& overrides) {
  if (path == scenario_ && overrides == overrides_ && !node_values_.isEmpty()) return;
  scenario_ = path;
  overrides_ = overrides;
  // Offer node counts this scenario accepts, unless the user has typed values of their own.
  const QString offered = node_values_.isEmpty() ? QString(kCommonKeys[0].values) : node_values_;
  node_values_ = suggested_node_sweep(path, overrides);
  if (key_->currentText() == kCommonKeys[0].key && values_->text() == offered)
    values_->setText(node_values_);
}

QString ScalingView::sweep_values() const {
  return values_->text();
}

void ScalingView::set_dtsim(const QString& dtsim_program) {
  dtsim_ = dtsim_program;
}

void ScalingView::key_chosen(const QString& key) {
  for (const auto& k : kCommonKeys)
    if (key == k.key) values_->setText(k.values);
  if (key == kCommonKeys[0].key && !node_values_.isEmpty()) values_->setText(node_values_);
}

void ScalingView::run_clicked() {
  start_sweep(key_->currentText().trimmed(), values_->text().trimmed(), engine_->currentText());
}

bool ScalingView::sweep_running() const {
  return process_ && process_->state() != QProcess::NotRunning;
}

int ScalingView::progress_value() const {
  return progress_->value();
}
int ScalingView::progress_maximum() const {
  return progress_->maximum();
}

void ScalingView::set_running(bool running) {
  run_->setEnabled(!running);
  cancel_->setEnabled(running);
  key_->setEnabled(!running);
  values_->setEnabled(!running);
  engine_->setEnabled(!running);
}

void ScalingView::start_sweep(const QString& key, const QString& values, const QString& engine) {
  if (sweep_running()) return;
  if (scenario_.isEmpty()) {
    show_error("No scenario to sweep: open or save a scenario first");
    return;
  }
  if (key.isEmpty() || values.isEmpty()) {
    show_error("Choose a key to vary and its values (for example cluster.nodes over 1,2,4,8)");
    return;
  }
  if (!work_dir_) {
    work_dir_ = std::make_unique<QTemporaryDir>(QDir::temp().filePath("dtsim-gui-sweep-XXXXXX"));
    if (!work_dir_->isValid()) {
      show_error("Cannot create a folder for the sweep's results: " + work_dir_->errorString());
      work_dir_.reset();
      return;
    }
  }
  // The controls show what runs, also when a caller (headless screenshots, tests) started it.
  {
    const QSignalBlocker block_key(key_), block_values(values_), block_engine(engine_);
    key_->setCurrentText(key);
    values_->setText(values);
    if (!engine.isEmpty()) engine_->setCurrentText(engine);
  }
  // A new file each time: dtsim sweep refuses to overwrite a results file without --resume.
  results_file_ = work_dir_->filePath(QString("sweep-%1.csv").arg(++sweep_number_));
  QStringList arguments{"sweep", scenario_};
  for (const QString& o : overrides_) arguments << "--set" << o;
  arguments << "--vary" << key + "=" + values << "-o" << results_file_;
  if (!engine.isEmpty()) arguments << "--engine" << engine;
  arguments << "-j" << QString::number(std::max(1, QThread::idealThreadCount()));

  delete process_;
  process_ = new QProcess(this);
  process_->setProgram(dtsim_);
  process_->setArguments(arguments);
  process_->setProcessChannelMode(QProcess::SeparateChannels);
  process_->setStandardOutputFile(QProcess::nullDevice());
  process_->setChildProcessModifier([] {
    // Between fork and exec: only async-signal-safe calls. A process group of its own, so that
    // Cancel reaches every process the sweep started (its children, and theirs); SIGKILL when
    // the GUI dies, so that none outlives it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  });
  connect(process_, &QProcess::readyReadStandardError, this, &ScalingView::read_stderr);
  connect(process_, &QProcess::finished, this, &ScalingView::process_finished);
  connect(process_, &QProcess::errorOccurred, this, &ScalingView::process_failed);
  stderr_buffer_.clear();
  stderr_tail_.clear();
  cancelled_ = false;
  finish_reported_ = false;
  error_.clear();
  progress_->setRange(0, 0);  // busy until the first "sweep: N/M" line gives the count
  progress_->setFormat("%v of %m runs");
  status_->setStyleSheet({});
  status_->setText(QString("Running: dtsim sweep --vary %1=%2%3")
                       .arg(key, values, engine.isEmpty() ? "" : " --engine " + engine));
  set_running(true);
  process_->start();
  emit sweep_started();
}

void ScalingView::cancel_sweep() {
  if (!sweep_running()) return;
  cancelled_ = true;
  status_->setText("Cancelling the sweep");
  // The whole group: dtsim sweep and every process under it (a child that ignores SIGTERM, or a
  // grandchild its parent did not wait for, gets SIGKILL after kKillAfter_ms).
  const auto group = static_cast<pid_t>(process_->processId());
  if (group > 0) ::kill(-group, SIGTERM);
  process_->terminate();
  QPointer<QProcess> process = process_;
  QTimer::singleShot(kKillAfter_ms, this, [process, group] {
    if (group > 0) ::kill(-group, SIGKILL);
    if (process && process->state() != QProcess::NotRunning) process->kill();
  });
}

void ScalingView::read_stderr() {
  stderr_buffer_ += process_->readAllStandardError();
  static const QRegularExpression kProgress(R"(^sweep: (\d+)/(\d+))");
  for (;;) {
    // The sweep rewrites one line with \r on a terminal, and ends lines with \n elsewhere.
    const qsizetype end = stderr_buffer_.indexOf('\n');
    const qsizetype cr = stderr_buffer_.indexOf('\r');
    const qsizetype cut = end < 0 ? cr : cr < 0 ? end : std::min(end, cr);
    if (cut < 0) break;
    const QString line = QString::fromUtf8(stderr_buffer_.left(cut)).trimmed();
    stderr_buffer_.remove(0, cut + 1);
    if (line.isEmpty()) continue;
    stderr_tail_ << line;
    while (stderr_tail_.size() > kStderrLinesKept) stderr_tail_.removeFirst();
    const auto match = kProgress.match(line);
    if (match.hasMatch()) {
      progress_->setRange(0, match.captured(2).toInt());
      progress_->setValue(match.captured(1).toInt());
      status_->setText(line);
    }
  }
}

void ScalingView::process_failed(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || finish_reported_) return;
  finish_reported_ = true;
  set_running(false);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  show_error("Cannot start " + dtsim_ + ": " + process_->errorString() +
             " (set the dtsim program in the settings)");
  emit sweep_finished(false);
}

void ScalingView::process_finished(int exit_code, QProcess::ExitStatus status) {
  if (finish_reported_) return;
  finish_reported_ = true;
  read_stderr();
  if (!stderr_buffer_.trimmed().isEmpty()) stderr_tail_ << QString::fromUtf8(stderr_buffer_);
  set_running(false);
  if (progress_->maximum() == 0) progress_->setRange(0, 1);
  if (cancelled_) {
    status_->setText("Sweep cancelled; the runs that finished are in " + results_file_);
    emit sweep_finished(false);
    return;
  }
  if (status != QProcess::NormalExit || exit_code != 0) {
    show_error(
        QString("dtsim sweep failed (exit %1):\n%2")
            .arg(status == QProcess::NormalExit ? QString::number(exit_code) : QString("crashed"))
            .arg(stderr_tail_.join('\n')));
    emit sweep_finished(false);
    return;
  }
  load_results(results_file_);
  if (error_.isEmpty())
    status_->setText(stderr_tail_.isEmpty() ? QString("Sweep done") : stderr_tail_.last());
  emit sweep_finished(error_.isEmpty());
}

void ScalingView::show_error(const QString& message) {
  error_ = message;
  status_->setText(message);
  status_->setStyleSheet("color: #c62828");
}

void ScalingView::clear_charts() {
  while (QLayoutItem* item = charts_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  chart_count_ = 0;
}

void ScalingView::load_results(const QString& results_file) {
  error_.clear();
  analysis_.reset();
  clear_charts();
  fit_->clear();
  report_->clear();
  try {
    const driver::ResultsFile results = driver::read_results(results_file.toStdString());
    analysis_ = driver::analyze_results(results, choose_x_key(results));
  } catch (const std::exception& e) {
    show_error("Cannot analyse " + results_file + ":\n" + message_of(e));
    return;
  }
  status_->setStyleSheet({});
  status_->setText(QString("%1: %2 points along %3")
                       .arg(results_file)
                       .arg(analysis_->points.size())
                       .arg(QString::fromStdString(driver::x_axis_name(analysis_->x_key))));
  fit_->setText(fit_text());
  report_->setPlainText(QString::fromStdString(driver::render_analysis(*analysis_)));

  const std::vector<plot::Chart> charts = plot::scaling_charts(*analysis_);
  for (size_t i = 0; i < charts.size(); ++i) {
    QChart* chart = plot::make_qchart(charts[i]);
    chart->setAnimationOptions(QChart::NoAnimation);
    fit_to_panel(chart);
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(320, 240);
    // Speedup and efficiency side by side; the breakdown below them.
    const int row = static_cast<int>(i) / 2, column = static_cast<int>(i) % 2;
    charts_->addWidget(view, row, column, 1, i + 1 == charts.size() && column == 0 ? 2 : 1);
    ++chart_count_;
  }
}

QString ScalingView::fit_text() const {
  if (!analysis_) return {};
  const driver::ScalingAnalysis& a = *analysis_;
  QStringList lines;
  lines << QString("%1 scaling (%2), %3 points along %4")
               .arg(driver::scaling_kind_name(a.kind))
               .arg(QString::fromStdString(a.kind_evidence))
               .arg(a.points.size())
               .arg(QString::fromStdString(driver::x_axis_name(a.x_key)));
  QString amdahl = fit_line("Amdahl", a.amdahl);
  if (const auto limit = driver::amdahl_limit(a.amdahl.serial_fraction))
    amdahl += QString("; 1/f = %1x the baseline").arg(*limit, 0, 'f', 1);
  else
    amdahl += "; no limit from Amdahl (f <= 0)";
  lines << amdahl;
  // The global batch caps data parallelism: the limit offered is the smaller of the two.
  if (a.batch_ceiling)
    lines << QString("Batch ceiling %1x: %2")
                 .arg(*a.batch_ceiling, 0, 'g', 4)
                 .arg(QString::fromStdString(a.batch_ceiling_evidence));
  if (const auto limit = a.speedup_limit())
    lines << QString("Speedup limit: %1x the baseline (%2)")
                 .arg(*limit, 0, 'f', 1)
                 .arg(a.batch_ceiling && *limit == *a.batch_ceiling ? "the batch ceiling"
                                                                    : "Amdahl's 1/f");
  lines << fit_line("Gustafson", a.gustafson);
  const auto& last = a.points.back();
  lines << QString("At the largest point: speedup %1x, efficiency %2 %")
               .arg(last.speedup, 0, 'f', 2)
               .arg(last.efficiency * 100, 0, 'f', 1);
  return lines.join('\n');
}

}  // namespace dtsim::gui
