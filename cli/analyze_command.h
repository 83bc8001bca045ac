// `dtsim analyze RESULTS [--x KEY] [--json] [--plot OUT.svg|OUT.png]`: the scaling analysis of a
// results file of dtsim sweep (driver/analysis.h), as a text report, JSON and plots.
//
// Contract:
// - Exit 0 with the report; InputError (exit 2) for a corrupt or foreign results file, an unknown
//   or non-numeric --x key, too few ok rows for the fits, a --plot path that is neither .svg nor
//   .png, and --plot in a build without Qt 6 Charts (the message says how to get one).
// - --plot writes one file holding three charts one above the other (speedup, efficiency, time
//   breakdown), whole or not at all (driver/output_file.h); its path is checked before any work.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace dtsim::cli {

struct AnalyzeOptions {
  std::string results;  // a results file of dtsim sweep (.csv, .jsonl)
  std::string x_key = "config.gpus";
  std::vector<std::string> by;     // keys that split the rows into series (default: inferred)
  std::vector<std::string> where;  // KEY=VALUE filters applied first
  std::string plot;                // empty: no plot
  bool json = false;
};

// Registers the `analyze` subcommand, its flags and help on `app`.
CLI::App* add_analyze_command(CLI::App& app, AnalyzeOptions& options);

int run_analyze(const AnalyzeOptions& options, std::ostream& out);

// Whether this build can draw plots (it was built with Qt 6 Charts).
bool plotting_available();

}  // namespace dtsim::cli
