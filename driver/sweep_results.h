// The results file of `dtsim sweep`: one row per configuration, as CSV or JSON Lines (chosen by
// the extension: .csv, or .jsonl / .ndjson). `dtsim analyze`, `dtsim sweep --merge` and
// `--resume` read it back; the GUI's scaling view reads it too.
//
// A row holds:
//   config     the configuration's id: its overrides as "key=value;key=value" in axis order
//              (one id per configuration, which --resume and --merge match on)
//   <key>      one column per varied key, holding its value as the override gave it
//   status     ok | error | timeout
//   exit_code  the child dtsim's exit code (2: bad input or infeasible, 1: runtime failure)
//   wall_s     wall-clock seconds the child ran
//   error      the child's error message (empty when ok)
//   result     every key of `dtsim simulate --json` (docs/design.md section 5)
//
// Format:
// - JSON Lines: one object per line: {"config", "overrides": {key: value}, "status", "exit_code",
//   "wall_s", "error", "result": {...}}, with the result nested as simulate prints it.
// - CSV (RFC 4180 quoting): a header line, then one line per row. The result is flattened to
//   dotted columns ("breakdown_s.compute"); its lists and its per-kind map (time_by_kind_s,
//   notes, communication.per_group, model.other_layers, memory.per_stage) are one cell each, as
//   JSON. The header's
//   result columns are every scalar key a result can have (result_columns()), so one header
//   serves every row; a key a row lacks is an empty cell.
// - The first line of both identifies the file: the CSV header starts with "config," and every
//   JSON line has "config" and "status"; any other file is refused as foreign.
//
// Contract:
// - format_line() returns one whole line ending in '\n'; the sweep writes it with one write(2),
//   so a kill never leaves half a row, and read_results() drops an unterminated last line (a row
//   cut off by a crash of the disk or the machine) and says how many it dropped.
// - read_results() throws InputError naming the file and line for a corrupt or foreign file.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::driver {

enum class ResultsFormat { kCsv, kJsonl };
// By extension; InputError naming `flag` for any other.
ResultsFormat results_format(const std::string& path, const std::string& flag);

struct SweepRow {
  std::string config;
  std::vector<std::pair<std::string, std::string>> overrides;  // varied key, value
  std::string status = "ok";  // ok | does-not-fit | error | timeout
  int exit_code = 0;
  double wall_s = 0;
  std::string error;
  // The identity of the sweep that wrote the row (sweep_identity()); "" in files written before
  // rows carried one. --resume and --merge join only rows of one identity.
  std::string sweep;
  // The nested result object; null unless status is ok or does-not-fit (a whole result whose
  // peak memory is over the GPU's: the configuration cannot run, and analyze leaves it out).
  nlohmann::json result;

  bool ok() const { return status == "ok"; }
};

// The most rows a sweep writes and a results file is read with (--resume, --merge, analyze, the
// GUI): a row read back takes about 35 kB of memory (its result as a JSON tree; measured on
// scenarios/default.yaml's rows), so 25000 rows stay under 1 GiB.
inline constexpr size_t kMaxSweepRows = 25000;

// The status of a row whose configuration does not fit in the GPU's memory.
inline constexpr const char* kDoesNotFit = "does-not-fit";

// Whether `result` (dtsim simulate --json, which exits 2 for it) is a whole result whose peak
// memory is over the GPU's: the one test sweep, plan and the GUI apply to a child's exit 2.
bool result_does_not_fit(const nlohmann::json& result);

// What makes two sweeps' rows comparable: the scenario file's bytes, the --set overrides in
// order, the engine and the memory limit, hashed (FNV-1a, 64 bits, 16 hex digits). The varied
// values are not part of it: a resumed sweep may add configurations.
std::string sweep_identity(const std::string& scenario_bytes,
                           const std::vector<std::string>& overrides, const std::string& engine,
                           const std::string& max_memory);

// The id of a configuration: "key=value;key=value".
std::string config_id(const std::vector<std::pair<std::string, std::string>>& overrides);

// A value by dotted key: a varied key's value, else the result's key ("step_time_s",
// "config.gpus", "breakdown_s.compute"). nullopt when absent or not a number.
std::optional<double> number_of(const SweepRow& row, const std::string& key);

// The scalar result keys a CSV header carries (flattened, in results_to_json's order).
const std::vector<std::string>& result_columns();

// The header line of a CSV with these varied keys (ends in '\n'); empty for JSON Lines.
std::string header_line(ResultsFormat format, const std::vector<std::string>& varied_keys);
// One row as one line (ends in '\n').
std::string format_line(ResultsFormat format, const std::vector<std::string>& varied_keys,
                        const SweepRow& row);

struct ResultsFile {
  std::string path;
  ResultsFormat format = ResultsFormat::kCsv;
  std::vector<std::string> varied_keys;  // in the file's column order
  std::vector<SweepRow> rows;
  int dropped_partial_lines = 0;  // an unterminated last line, dropped
  size_t complete_bytes = 0;      // the length of the whole rows before it
};
// Reads a file written by dtsim sweep (either format).
ResultsFile read_results(const std::string& path);
// The same from text in memory; `path` names it in messages.
ResultsFile parse_results(const std::string& text, const std::string& path, ResultsFormat format);

}  // namespace dtsim::driver
