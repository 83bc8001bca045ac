// The Executor interface: one Job, one resolved Cluster, a few run options, and a Trace back
// (design.md sections 1 and 3). Every engine implements it: the analytic closed form here in
// core/exec, the SimGrid simulator in sim/, and the real back ends in real/.
//
// Contract:
// - run() executes every Program of the Job for `options.iterations` steps and returns the
//   observed spans and memory (core/ir/trace.h). It never changes the Job or the Cluster.
// - Bad input found while running (a fidelity the run cannot afford) is an InputError; an engine
//   failure is an Error; neither leaves the process in a state where another run cannot start.
// - RunOptions::perturbations lists what disturbs the run (slow ranks, degraded links, failures).
//   An engine that cannot apply a kind of perturbation refuses it with an InputError naming it,
//   never ignores it.
// - Like LevelDB's EnvWrapper, a wrapper that forwards run() to another Executor is how tracing,
//   perturbations and fault injection attach without touching the engines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/hardware/cluster.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"

namespace dtsim {

// One disturbance of a run. Kinds are added as the engines learn to apply them.
struct Perturbation {
  enum class Kind { kSlowRank };
  Kind kind = Kind::kSlowRank;
  Rank rank = 0;
  double slowdown = 1.0;  // kSlowRank: kernels take this many times as long (>= 1)
};

struct RunOptions {
  int iterations = 1;  // training steps to run back to back
  uint64_t seed = 0;   // for random perturbations; the same seed gives the same run
  std::vector<Perturbation> perturbations;
};

// The cluster as the perturbations leave it: slow ranks get their speed scale (1 / slowdown).
// Throws InputError for a rank outside the cluster or a slowdown below 1.
Cluster apply_perturbations(const Cluster& cluster, const RunOptions& options);

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual Trace run(const Job& job, const Cluster& cluster, const RunOptions& options) = 0;
  // Memory the engine holds per member of each collective per iteration, beyond what every
  // engine holds per op (driver/predict.h estimate_run), in bytes: an engine that turns each
  // collective into flows between its members states what that costs (a measurement, cited).
  virtual double bytes_per_collective_member() const { return 0; }
};

}  // namespace dtsim
