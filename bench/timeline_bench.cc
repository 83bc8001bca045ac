// timeline_bench: how fast dtsim-gui's timeline loads and paints a large trace.
//
//   build/gui/views/timeline_bench [--spans N] [--out bench/results/gui-timeline.md]
//
// Writes a Chrome trace of N spans (default 100 000) in the format of dtsim simulate --trace
// (64 ranks on 8 nodes, a compute stream and a communication stream each, pipelined), then
// measures TraceModel::load, and the time to paint one frame of a 1600 x 900 timeline at several
// zooms and over a simulated pan (60 frames dragged 8 px apart), on Qt's offscreen platform.
// Targets: load under 2 s; a frame under 50 ms (interactive). Writes the figures as Markdown,
// with the command and the machine, and exits 1 if a target is missed.
#include <QApplication>
#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gui/views/timeline_view.h"
#include "gui/views/trace_model.h"

namespace {

constexpr double kLoadTarget_s = 2.0;
constexpr double kFrameTarget_ms = 50.0;

// A dtsim-like trace: per rank, micro-batches of forward and backward kernels on "compute",
// tensor-parallel all-reduces between them, pipeline sends and a gradient all-reduce on
// "grad_comm", with gaps that become bubbles.
void write_trace(const std::string& path, int spans) {
  constexpr int kRanks = 64, kRanksPerNode = 8, kTidsPerRank = 64;
  std::ofstream out(path);
  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int r = 0; r < kRanks; ++r) {
    const int node = r / kRanksPerNode;
    sep();
    out << R"({"ph":"M","name":"process_name","pid":)" << node
        << R"(,"tid":0,"args":{"name":"node )" << node << "\"}}";
    for (int s = 0; s < 2; ++s) {
      sep();
      out << R"({"ph":"M","name":"thread_name","pid":)" << node
          << ",\"tid\":" << r * kTidsPerRank + s << R"(,"args":{"name":"rank )" << r
          << (s == 0 ? " compute" : " grad_comm") << "\"}}";
    }
  }
  std::mt19937 random(1);
  std::uniform_real_distribution<double> duration(5, 60);  // microseconds
  const int per_rank = spans / kRanks;
  for (int r = 0; r < kRanks; ++r) {
    const int node = r / kRanksPerNode;
    double t = (r % 8) * 400.0;  // later pipeline stages start later: a bubble
    for (int i = 0; i < per_rank; ++i) {
      const int micro_batch = i / 200, layer = (i / 4) % 48;
      const bool backward = (i / 100) % 2 == 1;
      const char* cat = "compute";
      std::string extra;
      int stream = 0;
      if (i % 4 == 3) {
        cat = "all-reduce";
        extra = R"(,"group":"tp")";
      }
      if (i % 200 == 199) {
        cat = "send";
        extra = R"(,"peer":)" + std::to_string((r + 8) % kRanks);
        stream = 1;
      }
      if (i + 8 >= per_rank) {
        cat = "all-reduce";
        extra = R"(,"group":"dp")";
        stream = 1;
      }
      const double d = duration(random);
      sep();
      out << R"({"ph":"X","name":")" << (backward ? "block.backward." : "block.forward.") << (i % 4)
          << R"(","cat":")" << cat << R"(","pid":)" << node
          << ",\"tid\":" << r * kTidsPerRank + stream << ",\"ts\":" << t << ",\"dur\":" << d
          << R"(,"args":{"phase":")" << (backward ? "backward" : "forward") << R"(","layer":)"
          << layer << R"(,"layer_name":"block.)" << layer << R"(","micro_batch":)" << micro_batch
          << R"(,"bytes":33554432,"flops":)" << (std::string(cat) == "compute" ? "1.5e12" : "0")
          << extra << "}}";
      // Short gaps (launch latency) and, every micro-batch, a longer wait.
      t += d + (i % 200 == 199 ? 300.0 : 0.5);
    }
  }
  out << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"engine\":\"bench\"}}\n";
}

struct FrameStats {
  double median_ms = 0, max_ms = 0;
  size_t rects = 0;
};

double paint_once(dtsim::gui::TimelineView& view, QImage& image) {
  QElapsedTimer timer;
  timer.start();
  {
    QPainter painter(&image);
    view.render(&painter);
  }
  return timer.nsecsElapsed() / 1e6;
}

FrameStats measure(dtsim::gui::TimelineView& view, QImage& image, int frames,
                   double pan_px_per_frame) {
  std::vector<double> times;
  size_t rects = 0;
  for (int i = 0; i < frames; ++i) {
    if (pan_px_per_frame != 0) view.pan_pixels(pan_px_per_frame);
    times.push_back(paint_once(view, image));
    rects = std::max(rects, view.last_frame_rect_count());
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.back(), rects};
}

std::string machine() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  // The machine's load when the run began: other work on shared cores slows every figure.
  std::string load;
  std::ifstream loadavg("/proc/loadavg");
  loadavg >> load;
  return cpu + ", " + std::to_string(QThread::idealThreadCount()) + " logical CPUs (load average " +
         (load.empty() ? std::string("unknown") : load) + " at the start), " +
         QSysInfo::prettyProductName().toStdString() + ", Qt " + qVersion() +
         ", QT_QPA_PLATFORM=offscreen (raster)";
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  int spans = 100000;
  std::string out_path = "bench/results/gui-timeline.md";
  std::string command = "build/gui/views/timeline_bench";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--spans" && i + 1 < argc) {
      spans = std::atoi(argv[++i]);
      command += " --spans " + std::string(argv[i]);
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
      command += " --out " + out_path;
    } else {
      std::fprintf(stderr, "usage: timeline_bench [--spans N] [--out FILE.md]\n");
      return 2;
    }
  }
  QApplication app(argc, argv);
  QTemporaryDir dir;
  const std::string trace_path = dir.filePath("bench-trace.json").toStdString();
  write_trace(trace_path, spans);
  const double file_mib = QFile(QString::fromStdString(trace_path)).size() / 1048576.0;

  QElapsedTimer timer;
  timer.start();
  const auto model = dtsim::gui::TraceModel::load(QString::fromStdString(trace_path));
  const double load_s = timer.nsecsElapsed() / 1e9;

  dtsim::gui::TimelineView view;
  view.resize(1600, 900);
  view.set_trace(model);
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  paint_once(view, image);  // the first frame loads fonts: not what a user waits for twice

  struct Row {
    std::string what;
    FrameStats stats;
  };
  std::vector<Row> rows;
  const double total = model->end_us() - model->start_us();
  for (double zoom : {1.0, 10.0, 100.0, 1000.0}) {
    view.set_time_range(model->start_us() + total * 0.3,
                        model->start_us() + total * 0.3 + total / zoom);
    if (zoom == 1.0) view.set_time_range(model->start_us(), model->end_us());
    char what[96];
    std::snprintf(what, sizeof what, "zoom %gx (%s across the view)", zoom,
                  dtsim::gui::format_us(total / zoom).toStdString().c_str());
    rows.push_back({what, measure(view, image, 20, 0)});
  }
  view.set_time_range(model->start_us(), model->start_us() + total / 10);
  rows.push_back({"pan at zoom 10x: 60 frames, 8 px apart", measure(view, image, 60, -8)});
  view.set_time_range(model->start_us(), model->start_us() + total / 2);
  rows.push_back({"pan at zoom 2x: 60 frames, 8 px apart", measure(view, image, 60, -8)});

  bool ok = load_s < kLoadTarget_s;
  for (const Row& r : rows) ok &= r.stats.max_ms < kFrameTarget_ms;

  std::string md;
  md += "# Timeline speed (dtsim-gui)\n\n";
  md += "How fast the GUI's timeline (gui/views/timeline_view.h) loads and paints a large trace.\n";
  md += "Targets: load under " + std::to_string(static_cast<int>(kLoadTarget_s)) +
        " s; every frame under " + std::to_string(static_cast<int>(kFrameTarget_ms)) +
        " ms (interactive).\n\n";
  md += "- Command: `" + command + "` (from the repository root, a RelWithDebInfo build)\n";
  md += "- Date: " + QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString() + "\n";
  md += "- Machine: " + machine() + "\n";
  char line[512];
  std::snprintf(line, sizeof line,
                "- Trace: %d spans written (%zu with the bubbles the model adds), %zu lanes, "
                "%.1f MiB, %s long\n\n",
                spans, model->span_count(), model->lanes().size(), file_mib,
                dtsim::gui::format_us(total).toStdString().c_str());
  md += line;
  std::snprintf(line, sizeof line, "| step | time |\n|---|---|\n| TraceModel::load | %.3f s |\n\n",
                load_s);
  md += line;
  md +=
      "Painting one 1600 x 900 frame (QWidget::render into a QImage), median and worst of the "
      "frames; rectangles after level-of-detail merging:\n\n";
  md += "| view | median | worst | rectangles |\n|---|---|---|---|\n";
  for (const Row& r : rows) {
    std::snprintf(line, sizeof line, "| %s | %.2f ms | %.2f ms | %zu |\n", r.what.c_str(),
                  r.stats.median_ms, r.stats.max_ms, r.stats.rects);
    md += line;
  }
  md += std::string("\nResult: ") + (ok ? "every target met." : "a target was missed.") + "\n";
  std::fputs(md.c_str(), stdout);
  std::ofstream(out_path) << md;
  return ok ? 0 : 1;
}
