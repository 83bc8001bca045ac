// The data views of dtsim-gui (gui/views): the trace model on real traces of the built dtsim,
// the timeline's painting and level of detail, the memory, compare and scaling views against
// the driver code they show, and the export to PNG and SVG. Runs on Qt's offscreen platform.
#include <gtest/gtest.h>

#include <QApplication>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QProcess>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTableWidget>
#include <QTemporaryDir>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/base/error.h"
#include "driver/analysis.h"
#include "driver/compare.h"
#include "driver/sweep_results.h"
#include "gui/views/compare_view.h"
#include "gui/views/export.h"
#include "gui/views/memory_view.h"
#include "gui/views/scaling_view.h"
#include "gui/views/timeline_lod.h"
#include "gui/views/timeline_view.h"
#include "gui/views/trace_model.h"

namespace dtsim::gui {
namespace {

const QString kDtsim = DTSIM_PROGRAM;
const QString kScenario = QString(DTSIM_SOURCE_DIR) + "/scenarios/default.yaml";

// Runs the built dtsim and fails the test on a non-zero exit.
void run_dtsim(const QStringList& arguments) {
  QProcess p;
  p.start(kDtsim, arguments);
  ASSERT_TRUE(p.waitForFinished(120000)) << "dtsim did not finish";
  ASSERT_EQ(p.exitStatus(), QProcess::NormalExit);
  ASSERT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
}

nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

// A small pipelined, tensor-parallel job with a straggler: every kind of span dtsim writes.
struct PipelinedRun {
  QTemporaryDir dir;
  QString trace, result;
  PipelinedRun(const QString& engine = "analytic", const QString& tag = "a") {
    trace = dir.filePath("trace-" + tag + ".json");
    result = dir.filePath("result-" + tag + ".json");
    run_dtsim({"simulate", kScenario, "--set", "parallelism.tensor=2", "--set",
               "parallelism.pipeline=2", "--set", "training.global_batch_size=64", "--set",
               "stragglers=[{ranks: [3], slowdown: 1.3}]", "--engine", engine, "--trace", trace,
               "--json", "-o", result});
  }
};

// A trace of `per_lane` back-to-back spans of `duration_us` on each of `lanes` compute lanes.
nlohmann::json synthetic_trace(int lanes, int per_lane, double duration_us) {
  nlohmann::json events = nlohmann::json::array();
  for (int l = 0; l < lanes; ++l) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", l * 64},
                      {"args", {{"name", "rank " + std::to_string(l) + " compute"}}}});
    for (int i = 0; i < per_lane; ++i)
      events.push_back({{"ph", "X"},
                        {"name", i % 2 ? "gemm" : "attention"},
                        {"cat", "compute"},
                        {"pid", 0},
                        {"tid", l * 64},
                        {"ts", i * duration_us},
                        {"dur", duration_us},
                        {"args", {{"flops", 1e9}, {"bytes", 1 << 20}}}});
  }
  return {{"traceEvents", events}};
}

// Distinct colours in an image: 1 for a blank one.
int distinct_colors(const QImage& image) {
  std::set<QRgb> colors;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colors.insert(image.pixel(x, y));
  return static_cast<int>(colors.size());
}

QImage paint(QWidget& widget) {
  QImage image(widget.size(), QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::black);
  QPainter painter(&image);
  widget.render(&painter);
  return image;
}

TEST(TraceModel, LoadsARealTraceAsOneLanePerRankAndStream) {
  PipelinedRun run;
  const nlohmann::json raw = read_json(run.trace);
  // What the file holds, counted here independently of the model.
  std::set<std::pair<int, int>> threads, named_threads;
  std::map<std::string, size_t> by_kind;
  for (const auto& e : raw["traceEvents"]) {
    const std::pair<int, int> key{e["pid"].get<int>(), e["tid"].get<int>()};
    if (e["ph"] == "M" && e["name"] == "thread_name") named_threads.insert(key);
    if (e["ph"] != "X") continue;
    threads.insert(key);
    const std::string cat = e["cat"], group = e["args"].value("group", "");
    by_kind[cat == "all-reduce" ? cat + ":" + group : cat]++;
  }
  const auto model = TraceModel::load(run.trace);
  // Ranks x streams: one lane per named thread (rank and stream), with spans or not (the first
  // stage never receives from a previous one).
  std::set<std::pair<int, int>> all_threads = named_threads;
  all_threads.insert(threads.begin(), threads.end());
  EXPECT_EQ(model->lanes().size(), all_threads.size());
  EXPECT_EQ(model->lanes().size(), named_threads.size());
  EXPECT_LT(threads.size(), named_threads.size());
  std::set<int> ranks;
  for (const TraceLane& lane : model->lanes()) {
    EXPECT_GE(lane.rank, 0) << lane.name.toStdString();
    EXPECT_FALSE(lane.stream.isEmpty());
    EXPECT_TRUE(lane.name.startsWith("node ")) << lane.name.toStdString();
    EXPECT_TRUE(lane.name.contains(QString(" / rank %1 ").arg(lane.rank)));
    ranks.insert(lane.rank);
    EXPECT_TRUE(std::is_sorted(
        lane.spans.begin(), lane.spans.end(),
        [](const TraceSpan& a, const TraceSpan& b) { return a.start_us < b.start_us; }));
  }
  EXPECT_GT(ranks.size(), 1u);

  EXPECT_EQ(model->count(SpanKind::kCompute), by_kind["compute"]);
  EXPECT_EQ(model->count(SpanKind::kTensorParallel), by_kind["all-reduce:tp"]);
  EXPECT_EQ(model->count(SpanKind::kPipeline), by_kind["send"] + by_kind["recv"]);
  EXPECT_EQ(model->count(SpanKind::kStragglerWait), by_kind["straggler_wait"]);
  EXPECT_GT(by_kind["straggler_wait"], 0u);
  EXPECT_GE(model->count(SpanKind::kDataParallel), by_kind["all-reduce:dp"]);
  EXPECT_EQ(model->count(SpanKind::kDataParallel) + model->count(SpanKind::kOtherCommunication),
            by_kind["all-reduce:dp"] + by_kind["all-reduce:embedding"]);
  // A pipelined job: its compute lanes' gaps are bubbles, not idle time.
  EXPECT_TRUE(model->pipelined());
  EXPECT_GT(model->count(SpanKind::kBubble), 0u);
  EXPECT_EQ(model->count(SpanKind::kIdle), 0u);
  EXPECT_LT(model->start_us(), model->end_us());
}

TEST(TraceModel, GapsOfAJobWithoutPipelineAreIdle) {
  auto trace = synthetic_trace(1, 3, 10);
  trace["traceEvents"][3]["ts"] = 100;  // the third span: an 80 us gap before it
  const auto model = TraceModel::from_json(trace, "synthetic");
  EXPECT_FALSE(model->pipelined());
  ASSERT_EQ(model->count(SpanKind::kIdle), 1u);
  const auto& spans = model->lanes()[0].spans;
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[2].kind, SpanKind::kIdle);
  EXPECT_DOUBLE_EQ(spans[2].start_us, 20);
  EXPECT_DOUBLE_EQ(spans[2].duration_us, 80);
}

TEST(TraceModel, ClassifiesKindsFromCatGroupAndPhase) {
  EXPECT_EQ(classify_span("compute", "", "forward"), SpanKind::kCompute);
  EXPECT_EQ(classify_span("all-reduce", "tp", "forward"), SpanKind::kTensorParallel);
  EXPECT_EQ(classify_span("all-reduce", "dp", "gradient_sync"), SpanKind::kDataParallel);
  EXPECT_EQ(classify_span("reduce-scatter", "edp", "gradient_sync"), SpanKind::kDataParallel);
  EXPECT_EQ(classify_span("all-reduce", "embedding", "gradient_sync"), SpanKind::kDataParallel);
  EXPECT_EQ(classify_span("send", "", "pipeline"), SpanKind::kPipeline);
  EXPECT_EQ(classify_span("recv", "", "pipeline"), SpanKind::kPipeline);
  EXPECT_EQ(classify_span("all-to-all", "ep", "forward"), SpanKind::kOtherCommunication);
  EXPECT_EQ(classify_span("straggler_wait", "", ""), SpanKind::kStragglerWait);
  EXPECT_EQ(classify_span("failure", "", ""), SpanKind::kFailure);
}

TEST(TraceModel, RefusesWhatIsNotATraceNamingTheFile) {
  QTemporaryDir dir;
  const QString not_json = dir.filePath("not.json"), no_events = dir.filePath("empty.json");
  std::ofstream(not_json.toStdString()) << "{ this is not json";
  std::ofstream(no_events.toStdString()) << R"({"traceEvents": [{"ph": "M"}]})";
  for (const QString& path : {not_json, no_events, dir.filePath("missing.json")}) {
    try {
      TraceModel::load(path);
      ADD_FAILURE() << "accepted " << path.toStdString();
    } catch (const InputError& e) {
      ASSERT_FALSE(e.diagnostics().empty());
      EXPECT_EQ(e.diagnostics()[0].location.file, path.toStdString());
      EXPECT_FALSE(e.diagnostics()[0].message.empty());
    }
  }
}

TEST(TraceModel, ReadingAFileGivesTheModelOfItsDocument) {
  nlohmann::json trace = synthetic_trace(2, 50, 3.0);
  trace["traceEvents"][5]["args"]["group"] = "tp";
  trace["traceEvents"][5]["cat"] = "all-reduce";
  trace["traceEvents"][7]["args"]["nested"] = {{"layer", 99}, {"list", {1, 2}}};
  trace["traceEvents"].push_back(42);  // not an event: skipped by both
  nlohmann::json file = {{"otherData", {{"ts", 1}}}, {"traceEvents", trace["traceEvents"]}};
  QTemporaryDir dir;
  const QString path = dir.filePath("t.json");
  std::ofstream(path.toStdString()) << file.dump();
  const auto from_file = TraceModel::load(path);
  const auto from_document = TraceModel::from_json(file, path);
  ASSERT_EQ(from_file->lanes().size(), from_document->lanes().size());
  ASSERT_EQ(from_file->span_count(), from_document->span_count());
  EXPECT_EQ(from_file->count(SpanKind::kTensorParallel), 1u);
  EXPECT_EQ(from_file->names(), from_document->names());
  for (size_t l = 0; l < from_file->lanes().size(); ++l) {
    EXPECT_EQ(from_file->lanes()[l].name, from_document->lanes()[l].name);
    for (size_t i = 0; i < from_file->lanes()[l].spans.size(); ++i) {
      const TraceSpan& a = from_file->lanes()[l].spans[i];
      const TraceSpan& b = from_document->lanes()[l].spans[i];
      EXPECT_EQ(a.start_us, b.start_us);
      EXPECT_EQ(a.duration_us, b.duration_us);
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.layer, b.layer);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.flops, b.flops);
    }
  }
}

TEST(TraceModel, FindsAndDescribesTheSpanUnderAPoint) {
  const auto model = TraceModel::from_json(synthetic_trace(1, 4, 10), "synthetic");
  EXPECT_EQ(model->span_at(0, 15, 0), 1);
  EXPECT_EQ(model->span_at(0, 45, 1), -1);
  EXPECT_EQ(model->span_at(0, 41, 2), 3);  // the nearest within the tolerance
  const QString text = describe_span(*model, model->lanes()[0].spans[1]);
  EXPECT_TRUE(text.startsWith("gemm")) << text.toStdString();
  EXPECT_TRUE(text.contains("duration: 10.0 us")) << text.toStdString();
  EXPECT_TRUE(text.contains("bytes: 1.00 MiB")) << text.toStdString();
  EXPECT_TRUE(text.contains("kind: compute"));
  EXPECT_EQ(format_us(0.5), "500 ns");
  EXPECT_EQ(format_us(2500), "2.50 ms");
  EXPECT_EQ(format_us(3.2e6), "3.20 s");
}

TEST(TimelineLod, MergesSubPixelSpansIntoABoundedNumberOfRectangles) {
  // 100k spans on 4 lanes, 25k each of 1 us: far more than the 1000 pixels across.
  const auto model = TraceModel::from_json(synthetic_trace(4, 25000, 1.0), "synthetic");
  ASSERT_EQ(model->span_count(), 100000u);
  constexpr int kWidth = 1000;
  const double whole = model->end_us() - model->start_us();
  size_t total = 0;
  for (const TraceLane& lane : model->lanes()) {
    std::vector<LaneRect> rects;
    lane_rects(lane, model->start_us(), whole / kWidth, kWidth, rects);
    EXPECT_LE(rects.size(), 2u * (kWidth + 1));
    EXPECT_GE(rects.size(), 1u);
    int merged = 0;
    for (const LaneRect& r : rects) {
      merged += r.merged;
      EXPECT_GE(r.x0_px, 0);
      EXPECT_LE(r.x1_px, kWidth);
    }
    EXPECT_EQ(merged, 25000);  // every span drawn, merged or not
    total += rects.size();
  }
  EXPECT_LE(total, 4u * 2u * (kWidth + 1));

  // Zoomed in to 100 us over the same pixels: each span is 10 px wide and drawn alone.
  std::vector<LaneRect> rects;
  lane_rects(model->lanes()[0], 5000, 0.1, kWidth, rects);
  EXPECT_GE(rects.size(), 100u);
  EXPECT_LE(rects.size(), 101u);
  for (const LaneRect& r : rects) EXPECT_GE(r.span, 0);
}

TEST(TimelineView, PaintsA100kSpanTraceWithBoundedRectangles) {
  const auto model = TraceModel::from_json(synthetic_trace(4, 25000, 1.0), "synthetic");
  TimelineView view;
  view.resize(1200, 300);
  view.set_trace(model);
  const QImage image = paint(view);
  EXPECT_GT(view.last_frame_rect_count(), 0u);
  EXPECT_LE(view.last_frame_rect_count(), 4u * 2u * (1200 + 1));
  EXPECT_GT(distinct_colors(image), 3);
  // Compute's colour is on the canvas.
  const QColor compute = TimelineView::kind_color(SpanKind::kCompute);
  bool found = false;
  for (int x = 300; x < 1100 && !found; x += 7)
    for (int y = 24; y < 100 && !found; ++y) found = image.pixelColor(x, y) == compute;
  EXPECT_TRUE(found);
}

TEST(TimelineView, ZoomAndPanSignalTheRangeAndSetTimeRangeDoesNot) {
  const auto model = TraceModel::from_json(synthetic_trace(2, 1000, 1.0), "synthetic");
  TimelineView view;
  view.resize(800, 200);
  view.set_trace(model);
  EXPECT_DOUBLE_EQ(view.range_start_us(), 0);
  EXPECT_DOUBLE_EQ(view.range_end_us(), 1000);
  QSignalSpy spy(&view, &TimelineView::time_range_changed);
  view.zoom(4, 0.5);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_NEAR(view.range_end_us() - view.range_start_us(), 250, 1e-9);
  EXPECT_NEAR(view.range_start_us(), 375, 1e-9);
  view.pan_pixels(-100);  // drag left: later times come into view
  ASSERT_EQ(spy.count(), 2);
  EXPECT_GT(view.range_start_us(), 375);
  view.set_time_range(10, 20);
  EXPECT_EQ(spy.count(), 2);
  EXPECT_DOUBLE_EQ(view.range_start_us(), 10);
  view.fit();
  EXPECT_DOUBLE_EQ(view.range_start_us(), 0);
  EXPECT_DOUBLE_EQ(view.range_end_us(), 1000);
  // Hover details at a point over the first lane.
  view.set_time_range(0, 100);
  const QString details = view.details_at(QPoint(view.width() - 10, 24 + 9));
  EXPECT_TRUE(details.contains("duration: 1.00 us")) << details.toStdString();
}

TEST(MemoryView, ShowsTheCategoriesOfAResultAgainstTheCapacity) {
  QTemporaryDir dir;
  const QString result = dir.filePath("r.json");
  run_dtsim({"simulate", kScenario, "--engine", "analytic", "--json", "-o", result});
  const nlohmann::json r = read_json(result);
  MemoryView view;
  view.resize(800, 600);
  view.set_result(r);
  ASSERT_EQ(view.bars().size(), 1u);
  const auto& per_category = r["memory"]["per_category_bytes"];
  for (size_t c = 0; c < MemoryView::kCategories.size(); ++c)
    EXPECT_DOUBLE_EQ(view.bars()[0].bytes[c],
                     per_category[MemoryView::kCategories[c]].get<double>());
  EXPECT_DOUBLE_EQ(view.capacity_bytes(), r["memory"]["capacity_bytes"].get<double>());
  EXPECT_TRUE(view.fits());
  const double headroom_gib = (r["memory"]["capacity_bytes"].get<double>() -
                               r["memory"]["peak_bytes_per_gpu"].get<double>()) /
                              (1 << 30);
  EXPECT_TRUE(view.verdict().startsWith("fits: " + QString::number(headroom_gib, 'f', 1) +
                                        " GiB of headroom"))
      << view.verdict().toStdString();
  // The table: a row per category and the total, a column per bar.
  ASSERT_EQ(view.table()->rowCount(), 6);
  ASSERT_EQ(view.table()->columnCount(), 1);
  EXPECT_EQ(view.table()->verticalHeaderItem(3)->text(), "activations");
  EXPECT_TRUE(view.table()->item(3, 0)->text().endsWith(" GiB"));
  EXPECT_GT(distinct_colors(paint(view)), 5);
}

TEST(MemoryView, DrawsABarPerPipelineStageOfARealResult) {
  PipelinedRun run;
  const nlohmann::json r = read_json(run.result);
  const auto& stages = r["memory"]["per_stage"];
  ASSERT_EQ(stages.size(), 2u);
  MemoryView view;
  view.set_result(r);
  ASSERT_EQ(view.bars().size(), 3u);  // the job's peak, then each stage
  for (size_t s = 0; s < 2; ++s) {
    const MemoryView::Bar& bar = view.bars()[s + 1];
    EXPECT_EQ(bar.label, QString("stage %1 (rank %2)").arg(s).arg(stages[s]["rank"].get<int>()));
    EXPECT_DOUBLE_EQ(bar.peak_bytes, stages[s]["peak_bytes"].get<double>());
    EXPECT_DOUBLE_EQ(bar.bytes[3], stages[s]["per_category_bytes"]["activations"].get<double>());
  }
  EXPECT_EQ(view.table()->columnCount(), 3);
}

TEST(MemoryView, SaysWhenAJobDoesNotFitAndShowsStages) {
  nlohmann::json r;
  const double gib = 1 << 30;
  r["memory"] = {{"capacity_bytes", 80 * gib},
                 {"peak_bytes_per_gpu", 90 * gib},
                 {"fits", false},
                 {"per_category_bytes",
                  {{"weights", 10 * gib},
                   {"gradients", 10 * gib},
                   {"optimizer", 20 * gib},
                   {"activations", 45 * gib},
                   {"buffers", 5 * gib}}}};
  r["memory"]["per_stage"] = nlohmann::json::array();
  for (int s = 0; s < 2; ++s)
    r["memory"]["per_stage"].push_back({{"stage", s},
                                        {"rank", s * 8},
                                        {"peak_bytes", (90 - 20 * s) * gib},
                                        {"per_category_bytes",
                                         {{"weights", 10 * gib},
                                          {"gradients", 10 * gib},
                                          {"optimizer", 20 * gib},
                                          {"activations", (45 - 20 * s) * gib},
                                          {"buffers", 5 * gib}}}});
  MemoryView view;
  view.set_result(r);
  EXPECT_FALSE(view.fits());
  EXPECT_TRUE(view.verdict().startsWith("does not fit: 10.0 GiB over capacity"))
      << view.verdict().toStdString();
  ASSERT_EQ(view.bars().size(), 3u);
  EXPECT_EQ(view.bars()[2].label, "stage 1 (rank 8)");
  EXPECT_DOUBLE_EQ(view.bars()[2].bytes[3], 25 * gib);

  view.set_result(nlohmann::json{{"step_time_s", 1}});
  EXPECT_TRUE(view.bars().empty());
  EXPECT_TRUE(view.verdict().contains("no memory section"));
}

TEST(CompareView, TableHoldsTheErrorsCompareResultsComputes) {
  PipelinedRun analytic("analytic", "a"), simgrid("simgrid", "s");
  const driver::Comparison expected =
      driver::compare_results(simgrid.result.toStdString(), analytic.result.toStdString());
  CompareView view;
  view.resize(1000, 800);
  view.set_files(simgrid.result, analytic.result, simgrid.trace, analytic.trace);
  ASSERT_TRUE(view.error().isEmpty()) << view.error().toStdString();
  QTableWidget* table = view.table();
  ASSERT_EQ(table->rowCount(), static_cast<int>(expected.metrics.size() + expected.by_kind.size()));
  std::vector<driver::ComparedValue> all = expected.metrics;
  all.insert(all.end(), expected.by_kind.begin(), expected.by_kind.end());
  bool some_nonzero = false;
  for (int row = 0; row < table->rowCount(); ++row) {
    const auto& v = all[static_cast<size_t>(row)];
    EXPECT_TRUE(table->item(row, 0)->text().startsWith(QString::fromStdString(v.name)));
    EXPECT_EQ(table->item(row, 3)->text(), CompareView::format_error(v.error));
    if (v.error) {
      EXPECT_DOUBLE_EQ(table->item(row, 3)->data(Qt::UserRole).toDouble(), *v.error);
      some_nonzero |= *v.error != 0;
    }
  }
  EXPECT_TRUE(some_nonzero);  // two engines never agree to the last digit
  EXPECT_EQ(CompareView::format_error(0.123), "+12.3 %");
  EXPECT_EQ(CompareView::format_error(-0.05), "-5.0 %");
  EXPECT_EQ(CompareView::format_error(std::nullopt), "undefined (measured 0)");

  // The timelines are shown and move together.
  TimelineView* predicted = view.predicted_timeline();
  TimelineView* measured = view.measured_timeline();
  ASSERT_TRUE(predicted->trace() && measured->trace());
  predicted->zoom(8, 0.25);
  EXPECT_DOUBLE_EQ(measured->range_start_us(), predicted->range_start_us());
  EXPECT_DOUBLE_EQ(measured->range_end_us(), predicted->range_end_us());
  measured->pan_pixels(-50);
  EXPECT_DOUBLE_EQ(predicted->range_start_us(), measured->range_start_us());
}

TEST(CompareView, ShowsWhyAFileCannotBeCompared) {
  QTemporaryDir dir;
  const QString bad = dir.filePath("bad.json");
  std::ofstream(bad.toStdString()) << "{}";
  CompareView view;
  view.set_files(bad, bad);
  EXPECT_TRUE(view.error().contains(bad)) << view.error().toStdString();
  EXPECT_EQ(view.table()->rowCount(), 0);
}

TEST(Export, WritesANonBlankPngAndAValidSvg) {
  const auto model = TraceModel::from_json(synthetic_trace(3, 200, 5.0), "synthetic");
  TimelineView view;
  view.resize(900, 240);
  view.set_trace(model);
  QTemporaryDir dir;
  const QString png = dir.filePath("timeline.png"), svg = dir.filePath("timeline.SVG");
  export_widget(&view, png);
  QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_GE(image.width(), 900);
  EXPECT_GT(distinct_colors(image), 3);
  export_widget(&view, svg);
  QSvgRenderer renderer(svg);
  ASSERT_TRUE(renderer.isValid());
  EXPECT_EQ(renderer.viewBox().size(), QSize(900, 240));
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_TRUE(file.readAll().contains("<svg"));
  // A memory view built off screen, never shown, exports at its size hint.
  MemoryView memory;
  nlohmann::json r;
  r["memory"] = {{"capacity_bytes", 8e10},
                 {"peak_bytes_per_gpu", 4e10},
                 {"per_category_bytes",
                  {{"weights", 1e10},
                   {"gradients", 1e10},
                   {"optimizer", 1e10},
                   {"activations", 5e9},
                   {"buffers", 5e9}}}};
  memory.set_result(r);
  export_widget(&memory, dir.filePath("memory.png"));
  EXPECT_GT(distinct_colors(QImage(dir.filePath("memory.png"))), 5);
  EXPECT_THROW(export_widget(&view, dir.filePath("timeline.jpg")), InputError);
}

// A results file of dtsim sweep along cluster.nodes (the analytic engine: instant).
QString sweep_results(QTemporaryDir& dir) {
  const QString file = dir.filePath("nodes.csv");
  run_dtsim(
      {"sweep", kScenario, "--vary", "cluster.nodes=1,2,4,8", "--engine", "analytic", "-o", file});
  return file;
}

TEST(ScalingView, LoadsAResultsFileAndShowsTheAmdahlFitOfTheAnalysis) {
  QTemporaryDir dir;
  const QString file = sweep_results(dir);
  const driver::ScalingAnalysis expected =
      driver::analyze_results(driver::read_results(file.toStdString()), "config.gpus");
  ScalingView view;
  view.resize(1200, 900);
  view.load_results(file);
  ASSERT_TRUE(view.error().isEmpty()) << view.error().toStdString();
  ASSERT_TRUE(view.analysis().has_value());
  EXPECT_EQ(view.analysis()->x_key, "config.gpus");
  EXPECT_DOUBLE_EQ(view.analysis()->amdahl.serial_fraction, expected.amdahl.serial_fraction);
  EXPECT_DOUBLE_EQ(view.analysis()->amdahl.interval_high, expected.amdahl.interval_high);
  const QString f = QString::number(expected.amdahl.serial_fraction, 'g', 4);
  EXPECT_TRUE(view.fit_text().contains("Amdahl: f = " + f)) << view.fit_text().toStdString();
  // Amdahl's 1/f, the batch ceiling (512 samples over the baseline's 8 replicas: 64x) and the
  // smaller of the two as the limit, as dtsim analyze reports them.
  ASSERT_TRUE(expected.batch_ceiling.has_value());
  EXPECT_TRUE(view.fit_text().contains("1/f = ")) << view.fit_text().toStdString();
  EXPECT_TRUE(view.fit_text().contains(
      QString("Batch ceiling %1x").arg(*expected.batch_ceiling, 0, 'g', 4)))
      << view.fit_text().toStdString();
  EXPECT_TRUE(view.fit_text().contains(
      QString("Speedup limit: %1x").arg(*expected.speedup_limit(), 0, 'f', 1)))
      << view.fit_text().toStdString();
  EXPECT_EQ(view.chart_count(), 3);
  EXPECT_GT(distinct_colors(paint(view)), 10);

  view.load_results(dir.filePath("missing.csv"));
  EXPECT_FALSE(view.error().isEmpty());
  EXPECT_FALSE(view.analysis().has_value());
  EXPECT_EQ(view.chart_count(), 0);
}

TEST(ScalingView, RunsTheSweepAsAChildProcessWithProgress) {
  ScalingView view;
  view.set_dtsim(kDtsim);
  view.set_scenario(kScenario, {"training.micro_batch_size=2"});
  QSignalSpy started(&view, &ScalingView::sweep_started);
  QSignalSpy finished(&view, &ScalingView::sweep_finished);
  view.start_sweep("cluster.nodes", "1,2,4", "analytic");
  EXPECT_EQ(started.count(), 1);
  EXPECT_TRUE(view.sweep_running());
  ASSERT_TRUE(finished.wait(120000)) << view.error().toStdString();
  ASSERT_EQ(finished.count(), 1);
  EXPECT_TRUE(finished.at(0).at(0).toBool()) << view.error().toStdString();
  EXPECT_FALSE(view.sweep_running());
  EXPECT_EQ(view.progress_maximum(), 3);
  EXPECT_EQ(view.progress_value(), 3);
  ASSERT_TRUE(view.analysis().has_value());
  EXPECT_EQ(view.analysis()->points.size(), 3u);
  EXPECT_EQ(view.analysis()->points[0].point.gpus, 8);
}

TEST(ScalingView, CancelEndsTheSweepAndReportsItNotOk) {
  ScalingView view;
  view.set_dtsim(kDtsim);
  view.set_scenario(kScenario, {});
  QSignalSpy finished(&view, &ScalingView::sweep_finished);
  view.start_sweep("cluster.nodes", "range(1,64,1)", "simgrid");
  ASSERT_TRUE(view.sweep_running());
  view.cancel_sweep();
  ASSERT_TRUE(finished.wait(30000));
  EXPECT_FALSE(finished.at(0).at(0).toBool());
  EXPECT_FALSE(view.sweep_running());
}

TEST(ScalingView, SaysWhatIsMissingBeforeRunning) {
  ScalingView view;
  QSignalSpy started(&view, &ScalingView::sweep_started);
  view.start_sweep("cluster.nodes", "1,2", "analytic");
  EXPECT_EQ(started.count(), 0);
  EXPECT_TRUE(view.error().contains("No scenario")) << view.error().toStdString();
}

}  // namespace
}  // namespace dtsim::gui

int main(int argc, char** argv) {
  // Headless: the offscreen platform needs no display (docs/environment.md, "Qt under test").
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
