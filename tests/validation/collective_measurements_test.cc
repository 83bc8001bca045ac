// Measured collectives (scenarios/validation/collectives/measured.yaml): public nccl-tests
// all-reduce runs on multi-node H100 clusters, each row timed by `dtsim collective` (auto, the
// manifest's engine) and compared with the faster of the posted out-of-place and in-place times.
//
// What it checks, and what it does not:
// - Every row simulates, and its error, (dtsim - measured) / measured, has grown by no more than
//   `regression_margin_pct` percentage points beyond the |error| recorded in the manifest. A
//   regression guard, as the public training-run set's: a row that gets closer always passes.
// - Each run's rows are complete and sizes ascend.
//
// It prints every row with NCCL's own cost model's time beside dtsim's (core/collectives/
// nccl_model.h) and the MAPE by size band; with DTSIM_VALIDATION_MARKDOWN set it prints the
// markdown table of docs/validation.md, section 2b:
//   DTSIM_VALIDATION_MARKDOWN=1 build/tests/validation/validation_test --gtest_filter='Measured*'
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/units.h"
#include "driver/collective_benchmark.h"
#include "driver/predict.h"
#include "manifest_field.h"

namespace dtsim {
namespace {

using validation::manifest_field;

const std::string kDir = DTSIM_SOURCE_DIR "/scenarios/validation/collectives";
const std::string kManifest = kDir + "/measured.yaml";

struct MeasuredRow {
  double bytes = 0;
  double out_of_place_us = 0, in_place_us = 0;
  double recorded_error_pct = 0;
  double measured_us() const { return std::min(out_of_place_us, in_place_us); }
};

struct MeasuredRun {
  std::string name;
  int nodes = 0;
  std::string source;
  std::vector<MeasuredRow> rows;
};

struct Manifest {
  std::string engine;
  double regression_margin_pct = 0;
  std::string cluster;  // scenario file beside the manifest
  std::vector<MeasuredRun> runs;
};

Manifest load_manifest() {
  const YAML::Node root = YAML::LoadFile(kManifest);
  Manifest m;
  m.engine = manifest_field<std::string>(root, "engine", kManifest);
  m.regression_margin_pct = manifest_field<double>(root, "regression_margin_pct", kManifest);
  m.cluster = manifest_field<std::string>(root, "cluster", kManifest);
  for (const auto& entry : root["runs"]) {
    const std::string where = kManifest + ": run " + std::to_string(m.runs.size() + 1);
    MeasuredRun run;
    run.name = manifest_field<std::string>(entry, "name", where);
    run.nodes = manifest_field<int>(entry, "nodes", where);
    run.source = manifest_field<std::string>(entry, "source", where);
    for (const auto& r : entry["rows"]) {
      const std::string row_where = where + " row " + std::to_string(run.rows.size() + 1);
      run.rows.push_back({manifest_field<double>(r, "bytes", row_where),
                          manifest_field<double>(r, "out_of_place_us", row_where),
                          manifest_field<double>(r, "in_place_us", row_where),
                          manifest_field<double>(r, "recorded_error_pct", row_where)});
    }
    m.runs.push_back(run);
  }
  return m;
}

struct Outcome {
  const MeasuredRun* run = nullptr;
  MeasuredRow row;
  driver::CollectiveRow predicted;
  double error_pct = 0;
  std::optional<double> nccl_error_pct;  // NCCL's cost model against the measurement
};

std::vector<Outcome> predict_all(const Manifest& m) {
  std::vector<Outcome> outcomes;
  for (const MeasuredRun& run : m.runs) {
    const Scenario scenario = driver::load_cluster(
        kDir + "/" + m.cluster,
        {"cluster.nodes=" + std::to_string(run.nodes), "simulate.engine=" + m.engine});
    for (const MeasuredRow& row : run.rows) {
      driver::CollectiveRequest request;
      request.op = "all-reduce";
      request.dtype = "float";
      request.bytes = std::to_string(static_cast<long long>(row.bytes)) + "B";
      const driver::CollectiveBenchmark bench = driver::run_collective_benchmark(scenario, request);
      Outcome o;
      o.run = &run;
      o.row = row;
      o.predicted = bench.rows.at(0);
      const double measured_s = row.measured_us() * 1e-6;
      o.error_pct = 100.0 * (o.predicted.time_s - measured_s) / measured_s;
      if (o.predicted.nccl_time_s)
        o.nccl_error_pct = 100.0 * (*o.predicted.nccl_time_s - measured_s) / measured_s;
      outcomes.push_back(o);
    }
  }
  return outcomes;
}

// "nvls-tree/Simple", or the algorithm alone where it has no protocol model.
std::string algorithm_text(const driver::CollectiveRow& row) {
  return row.algorithm + (row.protocol.empty() ? "" : "/" + row.protocol);
}

// Mean |error| of dtsim and of NCCL's model over the rows whose size lies in [lo, hi).
void print_band(const std::vector<Outcome>& outcomes, const char* label, double lo, double hi) {
  double dtsim = 0, nccl = 0;
  int n = 0, n_nccl = 0;
  for (const Outcome& o : outcomes) {
    if (o.row.bytes < lo || o.row.bytes >= hi) continue;
    dtsim += std::fabs(o.error_pct), ++n;
    if (o.nccl_error_pct) nccl += std::fabs(*o.nccl_error_pct), ++n_nccl;
  }
  if (n == 0) return;
  std::printf("  %-18s %2d rows  dtsim MAPE %5.1f%%   NCCL's model MAPE %5.1f%% (%d rows)\n", label,
              n, dtsim / n, n_nccl ? nccl / n_nccl : 0.0, n_nccl);
}

void print_summary(const std::vector<Outcome>& outcomes) {
  std::printf(
      "\nMeasured all-reduce (nccl-tests, float sum) against dtsim collective --algorithm auto;\n"
      "measured = the faster of out-of-place and in-place; error = (predicted - measured) / "
      "measured\n\n");
  std::printf("%-26s %10s %11s %11s %-18s %8s %9s %11s %8s\n", "run", "size", "measured us",
              "dtsim us", "dtsim algorithm", "error %", "recorded", "NCCL us", "NCCL %");
  for (const Outcome& o : outcomes) {
    const std::string alg = algorithm_text(o.predicted);
    std::printf("%-26s %10s %11.1f %11.1f %-18s %+8.1f %+9.1f", o.run->name.c_str(),
                format_bytes(Bytes(o.row.bytes)).c_str(), o.row.measured_us(),
                o.predicted.time_s * 1e6, alg.c_str(), o.error_pct, o.row.recorded_error_pct);
    if (o.nccl_error_pct)
      std::printf(" %11.1f %+8.1f\n", *o.predicted.nccl_time_s * 1e6, *o.nccl_error_pct);
    else
      std::printf(" %11s %8s\n", "-", "-");
  }
  std::printf("\nMAPE by size (dtsim and NCCL's own cost model, against the same measurements)\n");
  // Bands in bytes: [0, 1 MiB), [1 MiB, 8 MiB), [8 MiB, 512 MiB), 512 MiB and above.
  print_band(outcomes, "below 1 MiB", 0, 1 << 20);
  print_band(outcomes, "1 MiB to 4 MiB", 1 << 20, 8 << 20);
  print_band(outcomes, "16 MiB to 256 MiB", 8 << 20, 512 << 20);
  print_band(outcomes, "1 GiB and above", 512 << 20, 1e300);
  print_band(outcomes, "all", 0, 1e300);
  std::printf("\n");
}

void print_markdown(const std::vector<Outcome>& outcomes) {
  std::printf(
      "| run | size | measured us | dtsim us (auto) | error | NCCL's model us | error |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const Outcome& o : outcomes) {
    const std::string alg = algorithm_text(o.predicted);
    std::printf("| %s | %s | %.1f | %.1f %s | %+.1f%% |", o.run->name.c_str(),
                format_bytes(Bytes(o.row.bytes)).c_str(), o.row.measured_us(),
                o.predicted.time_s * 1e6, alg.c_str(), o.error_pct);
    if (o.nccl_error_pct)
      std::printf(" %.1f %s/%s | %+.1f%% |\n", *o.predicted.nccl_time_s * 1e6,
                  o.predicted.nccl_algorithm.c_str(), o.predicted.nccl_protocol.c_str(),
                  *o.nccl_error_pct);
    else
      std::printf(" - | - |\n");
  }
  std::printf("\n");
}

TEST(MeasuredCollectives, ManifestRowsAreCompleteAndAscend) {
  const Manifest m = load_manifest();
  ASSERT_FALSE(m.runs.empty());
  for (const MeasuredRun& run : m.runs) {
    EXPECT_GE(run.nodes, 2) << run.name << ": these rows are for collectives across nodes";
    ASSERT_FALSE(run.rows.empty()) << run.name;
    for (size_t i = 0; i < run.rows.size(); ++i) {
      const MeasuredRow& r = run.rows[i];
      EXPECT_GT(r.out_of_place_us, 0) << run.name << " row " << i + 1;
      EXPECT_GT(r.in_place_us, 0) << run.name << " row " << i + 1;
      if (i > 0) {
        EXPECT_GT(r.bytes, run.rows[i - 1].bytes) << run.name << " row " << i + 1;
      }
    }
  }
}

TEST(MeasuredCollectives, NoErrorGrowsBeyondItsRecordedOne) {
  const Manifest m = load_manifest();
  const std::vector<Outcome> outcomes = predict_all(m);
  print_summary(outcomes);
  if (std::getenv("DTSIM_VALIDATION_MARKDOWN") != nullptr) print_markdown(outcomes);
  for (const Outcome& o : outcomes) {
    EXPECT_TRUE(std::isfinite(o.predicted.time_s) && o.predicted.time_s > 0) << o.run->name;
    const double bound = std::fabs(o.row.recorded_error_pct) + m.regression_margin_pct;
    EXPECT_LE(std::fabs(o.error_pct), bound)
        << o.run->name << ", " << format_bytes(Bytes(o.row.bytes)) << ": error " << o.error_pct
        << "% against the recorded " << o.row.recorded_error_pct << "% (allowed |error| up to "
        << bound << "%). If the model change that moved it is deliberate, record the new error in "
        << kManifest;
  }
}

}  // namespace
}  // namespace dtsim
