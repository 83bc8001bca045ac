// `dtsim compare PREDICTED.json MEASURED.json`: a prediction against a measurement (or any two
// results of `dtsim simulate --json`), per metric and per op kind, with signed errors.
//
// Contract:
// - Both files are result objects as docs/schemas/simulate-result.schema.json describes them;
//   a file that cannot be read, is not JSON or lacks a compared key is an InputError naming the
//   file (and the key).
// - error = (predicted - measured) / measured, signed: positive means the prediction is slower
//   or larger than the measurement. It is absent where the measured value is 0 and the
//   predicted one is not (a bubble predicted where none was measured), and 0 where both are 0.
// - Metrics: step time, compute, exposed communication, pipeline bubble, straggler wait and
//   peak memory. Per op kind: busy time per step on the rank that finishes last
//   (time_by_kind_s), over the union of the kinds either file has (a missing kind counts 0).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtsim::driver {

struct ComparedValue {
  std::string name;  // "step time", "gemm"
  std::string unit;  // "s", "bytes"
  double predicted = 0, measured = 0;
  std::optional<double> error;  // fraction, signed; see the contract
};

struct Comparison {
  std::string predicted_file, measured_file;
  std::string predicted_source, measured_source;  // "predicted" | "measured"
  std::string predicted_engine, measured_engine;
  std::vector<ComparedValue> metrics;
  std::vector<ComparedValue> by_kind;
  // What makes the comparison doubtful: the two results are of different configurations (the
  // scenario's name, the GPU count or type, the parallel sizes, the batch), named key by key.
  std::vector<std::string> warnings;
  // What dtsim real said of how it measured (measurement_conditions): a measurement taken on a
  // disturbed machine, whose own steps varied as much as the errors may show, and the figures of
  // an undisturbed one.
  std::vector<std::string> disturbed, conditions;
  // The largest |error| over the metrics (not the op kinds); 0 when none is defined.
  double worst_metric_error() const;
};

Comparison compare_results(const std::string& predicted_file, const std::string& measured_file);

}  // namespace dtsim::driver
