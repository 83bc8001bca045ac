// dtsim-gui at a laptop's window size (1280x800 pixels), on the offscreen platform: what each
// tab shows must be in view and whole, not behind scroll arrows, elided or drawn over itself.
// Each case measures the widgets' geometry after a real run of dtsim (or a result it wrote).
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QFontMetricsF>
#include <QHeaderView>
#include <QPlainTextEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gui/app/main_window.h"
#include "gui/app/scenario_editor.h"
#include "gui/app/scenario_form.h"
#include "gui/app/summary_view.h"
#include "gui/plot/plot.h"
#include "gui/plot/scaling_plots.h"
#include "gui/views/compare_view.h"
#include "gui/views/memory_view.h"
#include "gui/views/scaling_view.h"
#include "gui/views/timeline_view.h"
#include "gui/views/trace_model.h"
#include "tests/gui_app/gui_test_support.h"

using namespace dtsim;
using namespace dtsim::gui;
using dtsim::gui::testing::run_to_end;

namespace {

const QString kSource = DTSIM_SOURCE_DIR;
const QString kDefault = kSource + "/scenarios/default.yaml";
const QString kGpt3 = kSource + "/scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml";
const QString kFailures = kSource + "/scenarios/llama3-405b-16384-h100-failures.yaml";
const QSize kLaptop(1280, 800);

// Runs here take the analytic engine unless a case says otherwise.
MainWindow::Options options(const QString& engine = "analytic") {
  return testing::options(engine);
}

// Runs `dtsim ARGS` to its end; its exit code (-1 when it did not start or end).
int run_dtsim(const QStringList& args) {
  QProcess p;
  p.setProgram(qEnvironmentVariable("DTSIM"));
  p.setArguments(args);
  p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  p.setStandardOutputFile(QProcess::nullDevice());
  p.start();
  if (!p.waitForFinished(120000) || p.exitStatus() != QProcess::NormalExit) return -1;
  return p.exitCode();
}

void settle() {
  for (int i = 0; i < 3; ++i) {
    QApplication::processEvents();
    QTest::qWait(20);
  }
}

}  // namespace

class GuiLayoutTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void editor_sections_all_in_view();
  void history_keeps_step_time_and_status_in_view();
  void run_log_follows_the_newest_line();
  void summary_of_a_failures_scenario();
  void memory_labels_do_not_overlap_at_16_stages();
  void compare_table_keeps_its_rows_beside_many_lanes();
  void scaling_offers_node_counts_the_scenario_accepts();
  void scaling_gpu_axis_ticks_at_the_swept_counts();
  void a_run_without_a_trace();

 private:
  QTemporaryDir dir_;
};

void GuiLayoutTest::initTestCase() {
  qRegisterMetaType<RunRecord>();
  qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toLocal8Bit());
  become_subreaper();
  QVERIFY2(QFileInfo(qEnvironmentVariable("DTSIM")).isExecutable(),
           "set DTSIM to the dtsim program (ctest does)");
}

// Every section of the form has its tab in view: no scroll arrows hide some of them.
void GuiLayoutTest::editor_sections_all_in_view() {
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  QString error;
  QVERIFY(window.open_scenario(kDefault, &error));
  settle();
  QTabBar* bar = window.editor()->form()->tabBar();
  QVERIFY(bar->count() >= 7);
  QVERIFY(!bar->usesScrollButtons());
  for (int i = 0; i < bar->count(); ++i) {
    const QRect r = bar->tabRect(i);
    QVERIFY2(r.left() >= 0 && r.right() < bar->width(),
             qPrintable(QString("tab %1 (%2) at x %3..%4 outside the bar's %5 px")
                            .arg(i)
                            .arg(bar->tabText(i))
                            .arg(r.left())
                            .arg(r.right())
                            .arg(bar->width())));
    // Whole, not elided: the tab is as wide as its name.
    QVERIFY2(r.width() >= bar->fontMetrics().horizontalAdvance(bar->tabText(i)),
             qPrintable(bar->tabText(i) + " is elided"));
  }
}

// A scenario with a long name: the history's step time and status stay whole and in view.
void GuiLayoutTest::history_keeps_step_time_and_status_in_view() {
  const QString file = dir_.filePath("long-name.yaml");
  {
    QFile in(kDefault);
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(in.readAll());
    text.replace(QRegularExpression("^name: .*$", QRegularExpression::MultilineOption),
                 "name: " + QString("a-scenario-with-a-very-long-descriptive-name-").repeated(3));
    QFile out(file);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(text.toUtf8());
  }
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  QString error;
  QVERIFY(window.open_scenario(file, &error));
  const RunRecord r = run_to_end(window);
  QCOMPARE(static_cast<int>(r.status), static_cast<int>(RunRecord::Status::kOk));
  settle();
  QTableWidget* h = window.history();
  const int viewport = h->viewport()->width();
  for (int column : {2, 4}) {
    const int right = h->columnViewportPosition(column) + h->columnWidth(column);
    QVERIFY2(
        right <= viewport,
        qPrintable(QString("column %1 ends at %2 of %3 px").arg(column).arg(right).arg(viewport)));
    const QString text = h->item(0, column)->text();
    QVERIFY2(h->fontMetrics().horizontalAdvance(text) < h->columnWidth(column),
             qPrintable(text + " does not fit its column"));
  }
}

void GuiLayoutTest::run_log_follows_the_newest_line() {
  MainWindow window(options());
  window.resize(kLaptop);
  // Lines logged before the window is on screen (a run started at once) and after it.
  for (int i = 0; i < 150; ++i) window.log(QString("line %1 before the window shows").arg(i));
  window.show();
  settle();
  QScrollBar* bar = window.run_log()->verticalScrollBar();
  QVERIFY(bar->maximum() > 0);
  QCOMPARE(bar->value(), bar->maximum());
  // Long lines wrap in the narrow panel, as a child's error messages do.
  for (int i = 0; i < 150; ++i)
    window.log(QString("line %1 of the run log, long enough to wrap in the panel: ").arg(i) +
               QString("word ").repeated(i % 7 == 0 ? 40 : 1));
  settle();
  QCOMPARE(bar->value(), bar->maximum());
}

// Time to train, the interruptions by cause and the checkpoint interval beside the goodput; a
// scenario without a failure model does not show them.
void GuiLayoutTest::summary_of_a_failures_scenario() {
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  QString error;
  QVERIFY(window.open_scenario(kFailures, &error));
  RunRecord r = run_to_end(window);
  QCOMPARE(static_cast<int>(r.status), static_cast<int>(RunRecord::Status::kOk));
  const auto& rel = r.result.at("reliability");
  SummaryView* s = window.summary();
  for (const char* name : {"Time to train", "Interruptions", "Checkpoint interval"})
    QVERIFY2(s->figure_shown(name), name);
  QVERIFY2(
      s->figure("Time to train")
          .startsWith(QString::number(rel.at("time_to_train_s").get<double>() / 86400, 'f', 2) +
                      " days"),
      qPrintable(s->figure("Time to train")));
  const QString interruptions = s->figure("Interruptions");
  QVERIFY2(interruptions.startsWith(QString::number(rel.at("interruptions").get<int>()) + " ("),
           qPrintable(interruptions));
  QVERIFY2(interruptions.contains(
               QString("gpu %1").arg(rel.at("interruptions_by_cause").at("gpu").get<int>())),
           qPrintable(interruptions));
  QVERIFY2(
      s->figure("Checkpoint interval")
          .startsWith(QString::number(rel.at("checkpoint_interval_steps").get<int>()) + " steps"),
      qPrintable(s->figure("Checkpoint interval")));

  QVERIFY(window.open_scenario(kDefault, &error));
  r = run_to_end(window);
  QCOMPARE(static_cast<int>(r.status), static_cast<int>(RunRecord::Status::kOk));
  QVERIFY(!s->figure_shown("Time to train"));
  QVERIFY(!s->figure_shown("Interruptions"));
}

// 16 pipeline stages at the window's width: no two peak labels overlap, and every label's text
// fits the space it is drawn in.
void GuiLayoutTest::memory_labels_do_not_overlap_at_16_stages() {
  nlohmann::json cats = {{"weights", 6.0e9},
                         {"gradients", 0.1e9},
                         {"optimizer", 0.3e9},
                         {"activations", 64e9},
                         {"buffers", 1e9}};
  nlohmann::json result = {{"memory",
                            {{"capacity_bytes", 80.0 * (1 << 30)},
                             {"peak_bytes_per_gpu", 71.4e9},
                             {"per_category_bytes", cats},
                             {"per_stage", nlohmann::json::array()}}}};
  for (int s = 0; s < 16; ++s)
    result["memory"]["per_stage"].push_back({{"stage", s},
                                             {"rank", 8 * s},
                                             {"peak_bytes", 71.4e9 - s * 1e8},
                                             {"per_category_bytes", cats}});
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  window.select_tab("memory");
  window.memory()->set_result(result);
  settle();
  const auto labels = window.memory()->chart_labels();
  QCOMPARE(static_cast<int>(window.memory()->bars().size()), 17);
  const QFontMetricsF metrics(window.memory()->font());
  int peaks = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    QVERIFY2(metrics.horizontalAdvance(labels[i].text) <= labels[i].rect.width() + 0.5,
             qPrintable(labels[i].text + " is wider than its place"));
    if (!labels[i].peak) continue;
    ++peaks;
    for (size_t j = 0; j < i; ++j)
      QVERIFY2(!labels[j].peak || !labels[j].rect.intersects(labels[i].rect),
               qPrintable(labels[j].text + " overlaps " + labels[i].text));
  }
  QVERIFY(peaks >= 9);  // most bars keep their figure
}

// A 16-stage pipeline (96 lanes in its timeline) compared with itself: the table of metrics
// keeps at least six rows in view above the two timelines.
void GuiLayoutTest::compare_table_keeps_its_rows_beside_many_lanes() {
  const QString result = dir_.filePath("cmp.json"), trace = dir_.filePath("cmp-trace.json");
  QCOMPARE(run_dtsim({"simulate", kSource + "/scenarios/llama3-405b-tp8-pp16-dp128-16384-h100.yaml",
                      "--engine", "analytic", "--json", "-o", result, "--trace", trace}),
           0);
  const QStringList files{result, trace, result, trace};
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  window.select_tab("compare");
  window.compare()->set_files(files[0], files[2], files[1], files[3]);
  settle();
  QVERIFY2(window.compare()->error().isEmpty(), qPrintable(window.compare()->error()));
  QVERIFY(TraceModel::load(files[1])->lanes().size() >= 48);
  QTableWidget* t = window.compare()->table();
  QVERIFY(t->rowCount() >= 6);
  const int visible = t->viewport()->height() / t->rowHeight(0);
  QVERIFY2(visible >= 6, qPrintable(QString("%1 rows in view").arg(visible)));
}

void GuiLayoutTest::scaling_offers_node_counts_the_scenario_accepts() {
  // 128 nodes of TP 8 x PP 8: halvings to 16 nodes keep a data-parallel degree of at least 2.
  QCOMPARE(suggested_node_sweep(kGpt3), QString("16,32,64,128"));
  // 8 nodes are its smallest (64 GPUs = TP x PP): doublings above it instead.
  QCOMPARE(suggested_node_sweep(kGpt3, {"cluster.nodes=8"}), QString("8,16,32,64"));
  QCOMPARE(suggested_node_sweep(kDefault), QString("1,2,4,8"));
  // The tab offers them once the scenario is open.
  MainWindow window(options());
  QString error;
  QVERIFY(window.open_scenario(kGpt3, &error));
  QCOMPARE(window.scaling()->sweep_values(), QString("16,32,64,128"));
}

// Under 8x the GPU axis is linear: labelled at the GPU counts swept.
void GuiLayoutTest::scaling_gpu_axis_ticks_at_the_swept_counts() {
  MainWindow window(options());
  window.resize(kLaptop);
  window.show();
  QString error;
  QVERIFY(window.open_scenario(kDefault, &error));
  QSignalSpy done(window.scaling(), &ScalingView::sweep_finished);
  window.scaling()->start_sweep("cluster.nodes", "2,4,8", "analytic");
  QVERIFY(done.wait(120000));
  QVERIFY2(done.first().first().toBool(), qPrintable(window.scaling()->error()));
  const auto charts = plot::scaling_charts(*window.scaling()->analysis());
  const auto& speedup = std::get<plot::LineChart>(charts[0]);
  QVERIFY(!speedup.log_x);
  QCOMPARE(speedup.x_ticks, (std::vector<double>{16, 32, 64}));
}

// Trace off: the child writes none, the other tabs show the run, the Timeline says why it is empty.
void GuiLayoutTest::a_run_without_a_trace() {
  MainWindow window(options());
  window.show();
  QString error;
  QVERIFY(window.open_scenario(kDefault, &error));
  window.trace_choice()->setChecked(false);
  const RunRecord r = run_to_end(window);
  QCOMPARE(static_cast<int>(r.status), static_cast<int>(RunRecord::Status::kOk));
  QVERIFY(r.trace_file.isEmpty());
  QVERIFY(!QFileInfo::exists(QFileInfo(r.result_file).dir().filePath("trace.json")));
  QVERIFY(!window.timeline()->trace());
  QVERIFY(window.summary()->figure("Step time").endsWith(" s") ||
          window.summary()->figure("Step time").endsWith(" ms"));
}

QTEST_MAIN(GuiLayoutTest)
#include "gui_layout_test.moc"
