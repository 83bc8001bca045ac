// The plotting module (gui/plot): the three scaling charts written as SVG and PNG files, the PNG
// of the documented size and not blank. Registered only in builds with Qt 6 Charts (label plot).
#include <gtest/gtest.h>

#include <QtGui/QColor>
#include <QtGui/QImage>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "driver/analysis.h"
#include "gui/plot/plot.h"
#include "gui/plot/scaling_plots.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::plot {
namespace {

driver::ScalingAnalysis sample_analysis() {
  std::vector<driver::ScalingPoint> points;
  for (double n : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    driver::ScalingPoint p;
    p.config = "cluster.nodes=" + std::to_string(static_cast<int>(n));
    p.x = 8 * n;
    p.gpus = p.x;
    p.global_batch_size = 512;
    p.samples_per_s = 100 / (0.04 + 0.96 / n);
    p.step_time_s = 512 / p.samples_per_s;
    p.compute_s = 0.8 * p.step_time_s;
    p.exposed_communication_s = 0.15 * p.step_time_s;
    p.pipeline_bubble_s = 0.05 * p.step_time_s;
    points.push_back(p);
  }
  return driver::analyze_points(points, "config.gpus");
}

// A file in the test's scratch folder.
std::filesystem::path write(const std::string& name, const std::string& bytes) {
  const auto path = dtsim::testing::scratch_dir().path() / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(Plot, ScalingChartsAreSpeedupEfficiencyAndBreakdown) {
  const std::vector<Chart> charts = scaling_charts(sample_analysis());
  ASSERT_EQ(charts.size(), 3u);
  const auto& speedup = std::get<LineChart>(charts[0]);
  EXPECT_TRUE(speedup.log_x);            // 8 to 128 GPUs: a factor of 16
  ASSERT_EQ(speedup.series.size(), 4u);  // ideal, Amdahl, Gustafson, measured
  EXPECT_EQ(speedup.series[3].y.size(), 5u);
  EXPECT_NEAR(speedup.series[1].y.back(), 1 / (0.04 + 0.96 / 16), 1e-9);  // Amdahl at 128 GPUs
  const auto& breakdown = std::get<StackedBarChart>(charts[2]);
  EXPECT_EQ(breakdown.categories.size(), 5u);
  EXPECT_EQ(breakdown.layers.size(), 3u);  // causes that are zero everywhere are left out
}

// Under 8x the GPU axis is linear and labelled at the counts swept (16, 24, 32 GPUs), not at
// evenly spaced values between them (14.08, 27.04 before); 8x and more stays logarithmic.
TEST(Plot, LinearGpuAxisIsLabelledAtTheSweptCounts) {
  std::vector<driver::ScalingPoint> points;
  for (double gpus : {16.0, 24.0, 32.0}) {
    driver::ScalingPoint p;
    p.config = "cluster.nodes=" + std::to_string(static_cast<int>(gpus / 8));
    p.x = p.gpus = gpus;
    p.global_batch_size = 768;
    p.samples_per_s = 10 * gpus / (1 + gpus / 400);
    p.step_time_s = 768 / p.samples_per_s;
    p.compute_s = p.step_time_s;
    points.push_back(p);
  }
  const auto charts = scaling_charts(driver::analyze_points(points, "config.gpus"));
  for (int i : {0, 1}) {
    const auto& chart = std::get<LineChart>(charts[static_cast<size_t>(i)]);
    EXPECT_FALSE(chart.log_x);
    EXPECT_EQ(chart.x_ticks, (std::vector<double>{16, 24, 32}));
  }
  const std::string svg = render_charts(charts, ImageFormat::kSvg);
  EXPECT_NE(svg.find(">24<"), std::string::npos);
  EXPECT_EQ(svg.find(">14.08<"), std::string::npos);
  EXPECT_TRUE(std::get<LineChart>(scaling_charts(sample_analysis())[0]).x_ticks.empty());
}

TEST(Plot, WritesSvg) {
  const std::string svg = render_charts(scaling_charts(sample_analysis()), ImageFormat::kSvg);
  const auto path = write("scaling.svg", svg);
  EXPECT_GT(std::filesystem::file_size(path), 1000u);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 960 1560\""), std::string::npos);
  // The chart's text is in the file: titles and axis labels.
  EXPECT_NE(svg.find("Parallel efficiency"), std::string::npos);
  EXPECT_NE(svg.find("Where the step time goes"), std::string::npos);
}

TEST(Plot, WritesPngOfTheDocumentedSizeThatIsNotBlank) {
  const PageOptions page;
  const std::string png = render_charts(scaling_charts(sample_analysis()), ImageFormat::kPng, page);
  const auto path = write("scaling.png", png);
  QImage image;
  ASSERT_TRUE(image.load(QString::fromStdString(path.string()), "PNG"));
  EXPECT_EQ(image.width(), page.width_px);
  EXPECT_EQ(image.height(), 3 * page.chart_height_px);
  // Lines, bars, text and antialiasing give many colours; a blank or one-colour page has few.
  std::set<QRgb> colours;
  for (int y = 0; y < image.height(); y += 2)
    for (int x = 0; x < image.width(); x += 2) colours.insert(image.pixel(x, y));
  EXPECT_GT(colours.size(), 50u);
  // Each chart drew something in its own band of the page, not only the first one.
  for (int chart = 0; chart < 3; ++chart) {
    int non_white = 0;
    for (int y = chart * page.chart_height_px; y < (chart + 1) * page.chart_height_px; y += 3)
      for (int x = 0; x < image.width(); x += 3)
        non_white += image.pixel(x, y) != qRgb(255, 255, 255);
    EXPECT_GT(non_white, 1000) << "chart " << chart;
  }
}

}  // namespace
}  // namespace dtsim::plot
