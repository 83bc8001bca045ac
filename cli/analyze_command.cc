#include "cli/analyze_command.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>

#include "core/base/error.h"
#include "core/base/module_loader.h"
#include "core/base/text.h"
#include "core/report/json_numbers.h"
#include "driver/analysis.h"
#include "driver/output_file.h"
#include "driver/sweep_results.h"
#include "gui/plot/plot_module.h"  // no Qt: the module's name and entry point

namespace dtsim::cli {
namespace {

InputError plot_error(const std::string& why) {
  return InputError(Diagnostic{SourceLocation{}, "--plot", why});
}

// The plot's format from its extension (any case).
bool has_extension(const std::string& path, const std::string& extension) {
  if (path.size() < extension.size()) return false;
  std::string tail = path.substr(path.size() - extension.size());
  std::transform(tail.begin(), tail.end(), tail.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return tail == extension;
}

}  // namespace

bool plotting_available() {
  return DTSIM_HAVE_PLOT != 0;
}

CLI::App* add_analyze_command(CLI::App& app, AnalyzeOptions& o) {
  auto* analyze = app.add_subcommand(
      "analyze",
      "Scaling analysis of a results file of dtsim sweep: speedup and efficiency against the GPU "
      "count (or any varied key), Amdahl and Gustafson fits of the serial fraction with a 95 % "
      "interval, the Karp-Flatt serial fraction per point, and where the efficiency goes "
      "(exposed communication, pipeline bubble, straggler wait, failures).\n"
      "  dtsim sweep scenarios/default.yaml --vary cluster.nodes=1,2,4,8 -o scaling.csv\n"
      "  dtsim analyze scaling.csv --plot scaling.svg\n"
      "What the report shows:\n"
      "  scaling     strong (global batch fixed) or weak (batch grows with the scale n = x / "
      "smallest x)\n"
      "  speedup     S = throughput / throughput at the smallest x: the time ratio for strong "
      "scaling, Gustafson's scaled speedup for weak scaling\n"
      "  efficiency  E = S / n (100 % is ideal)\n"
      "  Amdahl      f in S = 1 / (f + (1 - f) / n), a fraction of the smallest run's time; the "
      "speedup can never exceed 1/f\n"
      "  Gustafson   f in S = n - f (n - 1)\n"
      "  Karp-Flatt  e = (1/S - 1/n) / (1 - 1/n) per point: a constant e means a fixed serial "
      "part, a growing e overhead that grows with the job\n"
      "  efficiency loss  percentage points lost against the smallest x, by cause; they add up "
      "to 100 % - E\n"
      "Only rows with status ok count; the others are listed as skipped. Exit 2 for a corrupt "
      "results file, an unknown or non-numeric --x, or fewer than 3 ok rows.");
  analyze->add_option("results", o.results, "results file of dtsim sweep (.csv or .jsonl)")
      ->required();
  analyze->add_option("--x", o.x_key,
                      "the key to scale along: a varied key (cluster.nodes) or a numeric result "
                      "key; default config.gpus");
  analyze->add_option("--by", o.by,
                      "split the rows into series by this varied key (repeatable), one analysis "
                      "each; by default every varied key whose value changes among rows of one x "
                      "splits them (a sweep over cluster.nodes and training.recompute gives one "
                      "series per recompute)");
  analyze->add_option("--where", o.where,
                      "keep only the rows where KEY=VALUE (repeatable), before any split, e.g. "
                      "--where training.recompute=full");
  analyze->add_option(
      "--plot", o.plot,
      "write the three charts (speedup with the ideal, Amdahl and Gustafson "
      "curves; efficiency; stacked step-time breakdown) one above the other into "
      "one file, OUT.svg or OUT.png (960 px wide, 520 px per chart); needs a "
      "build with Qt 6 Charts" +
          std::string(plotting_available() ? ""
                                           : " (this build has none: install qt6-base-dev "
                                             "qt6-charts-dev qt6-svg-dev and rebuild)"));
  analyze->add_flag("--json", o.json,
                    "print the analysis as JSON: per point scale, speedup, efficiency, "
                    "karp_flatt_serial_fraction and efficiency_loss (fractions), and the amdahl "
                    "and gustafson fits");
  return analyze;
}

int run_analyze(const AnalyzeOptions& o, std::ostream& out) {
  std::unique_ptr<driver::OutputFile> plot_file;
  bool svg = false;
  if (!o.plot.empty()) {
    if (!plotting_available())
      throw plot_error(
          "this dtsim was built without Qt 6 Charts, so it cannot plot; install qt6-base-dev "
          "qt6-charts-dev qt6-svg-dev (scripts/setup.sh installs them) and rebuild with "
          "-DDTSIM_ENABLE_GUI=AUTO or ON. The report and --json need no Qt");
    svg = has_extension(o.plot, ".svg");
    const bool png = has_extension(o.plot, ".png");
    if (!svg && !png)
      throw plot_error("expected a file ending in .svg or .png, found '" + printable(o.plot, 200) +
                       "'");
    // Checked before the file is read, so a bad path costs nothing.
    plot_file =
        std::make_unique<driver::OutputFile>(o.plot, "--plot", std::vector<std::string>{o.results},
                                             std::vector<const driver::OutputFile*>{});
  }
  const driver::ResultsFile results = driver::read_results(o.results);
  const std::vector<driver::ScalingSeries> series =
      driver::analyze_series(results, o.x_key, o.by, o.where);
  if (series.size() > 1) {
    std::string keys;
    for (const auto& [k, v] : series.front().by) keys += (keys.empty() ? "" : ", ") + k;
    if (plot_file)
      throw plot_error("the rows form " + std::to_string(series.size()) + " series (by " + keys +
                       ") and a plot draws one: pick it with --where, e.g. --where " +
                       series.front().by.front().first + "=" + series.front().by.front().second);
    if (o.json) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& s : series) {
        nlohmann::json by = nlohmann::json::object();
        for (const auto& [k, v] : s.by) by[k] = v;
        nlohmann::json skipped = nlohmann::json::array();
        for (const auto& r : s.analysis.skipped)
          skipped.push_back({{"config", r.config},
                             {"status", r.status},
                             {"exit_code", r.exit_code},
                             {"error", r.error}});
        list.push_back(
            {{"label", s.label},
             {"by", by},
             {"analysis",
              s.unanalysed.empty() ? driver::analysis_to_json(s.analysis) : nlohmann::json()},
             {"unanalysed", s.unanalysed.empty() ? nlohmann::json() : nlohmann::json(s.unanalysed)},
             {"skipped", skipped}});
      }
      nlohmann::json by_keys = nlohmann::json::array();
      for (const auto& [k, v] : series.front().by) by_keys.push_back(k);
      nlohmann::json j{{"file", o.results}, {"x_key", o.x_key}, {"by", by_keys}, {"series", list}};
      whole_numbers_as_integers(j);
      out << j.dump(2) << "\n";
      return 0;
    }
    out << "dtsim analyze: " << printable(o.results, 200) << ": " << series.size()
        << " series along " << o.x_key << ", split by " << keys
        << " (--by chooses the keys, --where keeps one series)\n";
    for (const auto& s : series) {
      out << "\n=== series " << printable(s.label, 200) << " ===\n";
      if (s.unanalysed.empty()) {
        out << driver::render_analysis(s.analysis);
        continue;
      }
      out << "  not analysed: " << s.unanalysed << "\n";
      for (const auto& r : s.analysis.skipped)
        out << "  " << printable(r.config, 120) << ": " << r.status << ", exit " << r.exit_code
            << "\n";
    }
    return 0;
  }
  const driver::ScalingAnalysis& analysis = series.front().analysis;

  if (plot_file) {
    // Qt is loaded here, by the one command that draws (gui/plot/plot_module.h).
    auto* draw = module_entry<decltype(dtsim_plot_scaling_charts)>(
        plot::kPlotModule, "the plotting module, Qt 6 Charts", "dtsim_plot_scaling_charts");
    std::string image, error;
    if (!draw(&analysis, svg, &image, &error))
      throw RuntimeError("drawing " + printable(o.plot, 200) + " failed: " + error);
    plot_file->commit(image);
  }
  if (o.json) {
    nlohmann::json j = driver::analysis_to_json(analysis);
    j["plot_file"] = plot_file ? nlohmann::json(o.plot) : nlohmann::json();
    whole_numbers_as_integers(j);
    out << j.dump(2) << "\n";
    return 0;
  }
  out << driver::render_analysis(analysis);
  if (plot_file)
    out << "\nPlots: " << printable(o.plot, 200)
        << ": speedup, efficiency and step-time breakdown against " << driver::x_axis_name(o.x_key)
        << ", one above the other\n";
  return 0;
}

}  // namespace dtsim::cli
