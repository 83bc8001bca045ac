// The dtsim verbs, callable from main() and from tests. Each returns the process exit code
// and throws InputError (exit 2) or Error (exit 1) for main() to report.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "driver/collective_benchmark.h"

namespace dtsim::cli {

inline constexpr const char* kVersion = "0.1.0";

struct SimulateOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string engine;  // empty: the scenario's simulate.engine
  bool json = false;
  std::string output;
  std::string trace;
  std::string max_memory;  // --max-memory, e.g. 16GiB; empty: the driver's default
};
int run_simulate(const SimulateOptions& o, std::ostream& out);

struct ValidateOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string max_memory;  // --max-memory, as for simulate
};
int run_validate(const ValidateOptions& o, std::ostream& out);

struct CollectiveOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  driver::CollectiveRequest request;  // --op, --bytes, --min-bytes, ..., --ranks
  std::string engine;
  bool json = false;
  // nccl-tests' flags that change nothing in a simulation (a note says so) or only the count.
  int threads = 0;                               // -t: ranks = threads x -g
  std::optional<int> iterations, warmup, check;  // -n, -w, -c
};
int run_collective(const CollectiveOptions& o, std::ostream& out);

struct CatalogOptions {
  std::string what = "gpus";  // gpus | fabrics | networks | models | hardware | engines | keys
  bool markdown = false;
  bool json = false;
};
int run_catalog(const CatalogOptions& o, std::ostream& out);

struct CompareOptions {
  std::string predicted, measured;
  double max_error_percent = -1;  // < 0: no gate
  bool json = false;
};
// Exit 0, or 1 when a metric's |error| exceeds --max-error.
int run_compare(const CompareOptions& o, std::ostream& out);

struct RealOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string backend;  // "cpu", "gpu", or empty: from the scenario's GPU
  int warmup = 1;
  int iterations = 3;
  std::string timeout = "300s";
  double compute_scale = 1.0;
  std::string inject_fault;  // "exit:RANK" or "hang:RANK", for fault tests
  bool json = false;
  std::string output;
  std::string trace;
};
// Runs on every process of the launched job; rank 0 prints and writes the measurement.
int run_real(const RealOptions& o, std::ostream& out);

struct CalibrateOptions {
  std::string backend = "cpu";  // "cpu" or "gpu"
  std::string output;
  std::string gpu_model;
  bool quick = false;
  std::string timeout = "300s";
  std::string command;  // the command line, recorded in the profile
};
int run_calibrate(const CalibrateOptions& o, std::ostream& out);

}  // namespace dtsim::cli
