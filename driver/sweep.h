// `dtsim sweep`: many predictions of one scenario, one child dtsim process each (SimGrid allows
// one simulation per process, docs/design.md section 5), streamed to a results file
// (driver/sweep_results.h) as each finishes.
//
// Contract:
// - Configurations: the cartesian product of the --vary axes (the first axis outermost), or the
//   override sets of a --grid file; each is a list of overrides applied after the --set ones.
//   Every key and value is checked before anything runs (an unknown key, a value of the wrong
//   type, an empty range: InputError, exit 2); a configuration the scenario's own checks refuse
//   (an infeasible split, a model that does not fit) becomes an error row, and the others go on.
// - --shard i/n keeps configuration k when k mod n = i (k counts from 0 over the whole product),
//   so n shards cover every configuration exactly once. Under mpirun (or srun), rank r of a
//   world of w does the same with i = r and n = w inside its shard, and rank 0 writes the rows.
// - Rows: each is one line written with one write(2) and flushed to disk before the next run's
//   row, so a kill at any moment (SIGINT, SIGTERM or SIGKILL) loses no finished row and leaves
//   no half-written one. An existing non-empty output is refused unless --resume is given; with
//   --resume the configurations it already holds (any status) are skipped, and the file must have
//   been written by a sweep over the same keys. SIGINT and SIGTERM also kill the running children.
// - A child that exits non-zero, crashes or outlives the timeout becomes a row with status
//   error or timeout and its message; the sweep goes on.
// - Progress: a bar with the rate and ETA on a terminal, a plain line per finished run
//   otherwise, on stderr.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "driver/sweep_results.h"

namespace dtsim::driver {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// One --vary text: "key=v1,v2,..." or "key=range(a,b,step)" (a, a+step, ... up to and including
// b; step may be negative, never 0). Checks the key and every value as --set would.
SweepAxis parse_vary(const std::string& text, int index);

using Overrides = std::vector<std::pair<std::string, std::string>>;

// The configurations of a set of axes (cartesian product, first axis outermost).
std::vector<Overrides> expand_axes(const std::vector<SweepAxis>& axes);

// A --grid file: a YAML list of maps {key: value}; each map is one configuration.
std::vector<Overrides> read_grid(const std::string& path);

struct Shard {
  int index = 0, count = 1;
};
// "i/n" with 0 <= i < n.
Shard parse_shard(const std::string& text);

struct SweepRequest {
  std::string scenario;
  std::vector<std::string> overrides;  // --set, applied to every configuration first
  std::vector<std::string> vary;       // --vary texts
  std::string grid;                    // --grid file (excludes vary)
  std::string engine;                  // --engine; empty: the scenario's
  std::string max_memory;              // passed to each child
  int jobs = 1;
  double timeout_s = 0;  // per run; 0: none
  std::string output;
  bool resume = false;
  Shard shard;
  std::string dtsim;  // the dtsim program each child runs
};

struct SweepSummary {
  int configurations = 0;  // in this shard (and rank)
  int skipped = 0;         // already in the output (--resume)
  int ran = 0, ok = 0, does_not_fit = 0, failed = 0, timed_out = 0;
  double wall_s = 0;
};

// The configurations a request covers, after --shard (not MPI ranks): each with its id.
std::vector<Overrides> sweep_configurations(const SweepRequest& request,
                                            std::vector<std::string>& varied_keys);

// Runs the sweep. `log` receives progress text (stderr in the CLI).
SweepSummary run_sweep(const SweepRequest& request);

// `dtsim sweep --merge A B ... -o OUT`: the rows of every file, one per configuration (the
// first file's row wins; later duplicates are counted), written whole to OUT.
struct MergeSummary {
  int files = 0, rows = 0, duplicates = 0;
};
MergeSummary merge_results(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace dtsim::driver
