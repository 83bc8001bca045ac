// The Executor interface: one Job, one resolved Cluster, a few run options, and a Trace back
// (docs/design.md sections 1 and 3). Every engine implements it: the analytic closed form here in
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
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "core/hardware/cluster.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"

namespace dtsim {

// One disturbance of a run (the scenario's `stragglers:`, core/scenario/scenario.h).
// - kSlowRank: every kernel of `rank` takes `slowdown` times as long, the whole run.
// - kRandomSlowdown: every rank, independently with `probability` per step (per compute op when
//   per_op), starts a spell of `duration` steps (ops) whose kernels take `slowdown` times as
//   long. Draws come from a hash of (seed, source, rank, step, op), not from a stream, so they
//   do not depend on which ranks an engine simulates or in what order (folding stays exact).
// - kDegradedLink: the node's NIC `nic` (or, nic = -1, its switch uplink) carries `fraction` of
//   its rate.
// - kThrottle: `rank` is slowed by `slowdown` for the first duty x period of every period. A
//   step takes one factor, that of its start time, where step k starts at k x the unthrottled
//   step time of the closed form (the throttling cycle is minutes; a step is seconds).
struct Perturbation {
  enum class Kind { kSlowRank, kRandomSlowdown, kDegradedLink, kThrottle };
  Kind kind = Kind::kSlowRank;
  Rank rank = 0;           // kSlowRank, kThrottle
  double slowdown = 1.0;   // kSlowRank, kRandomSlowdown, kThrottle: a factor >= 1
  double probability = 0;  // kRandomSlowdown, in [0, 1]
  bool per_op = false;     // kRandomSlowdown
  int duration = 1;        // kRandomSlowdown: steps (ops) per spell, >= 1
  int node = 0;            // kDegradedLink
  int nic = -1;            // kDegradedLink: the node's NIC, or -1 for its switch uplink
  double fraction = 1;     // kDegradedLink, in (0, 1]
  Seconds period{0};       // kThrottle
  double duty = 0.5;       // kThrottle, in (0, 1]
  int source = 0;          // kRandomSlowdown: which entry, so two entries draw independently
};

struct RunOptions {
  int iterations = 1;  // training steps to run back to back
  uint64_t seed = 0;   // for random perturbations; the same seed gives the same run
  std::vector<Perturbation> perturbations;
};

// The cluster as the perturbations leave it: slow ranks get their speed scale (1 / slowdown).
// Throws InputError for a rank outside the cluster or a slowdown below 1.
Cluster apply_perturbations(const Cluster& cluster, const RunOptions& options);

// What the perturbations that change with time (random spells, throttling) do to one compute
// kernel: the factor its duration is multiplied by, on top of the static speed scale.
class TransientSlowdowns {
 public:
  // `step_time_s`: the unthrottled step time throttling phases are read at (see kThrottle).
  TransientSlowdowns(const RunOptions& options, int world_size, double step_time_s = 0);
  bool empty() const { return random_.empty() && throttle_.empty(); }
  bool has_throttle() const { return !throttle_.empty(); }
  // Rank r's factor for its `op`-th compute kernel (counted over the whole run) in `step`.
  double factor(Rank r, int step, uint64_t op) const;

 private:
  bool random_hit(const Perturbation& p, Rank r, int step, uint64_t op) const;
  uint64_t seed_;
  std::vector<Perturbation> random_;
  std::vector<std::vector<Perturbation>> throttle_;  // by rank (empty when none)
  double step_time_s_;
};

// Degraded NICs as the closed forms see them: a collective or transfer that leaves a node
// through a degraded NIC runs every inter-node edge at the slowest such NIC's rate. A ring's time
// is set by its slowest hop (each step waits for the chunk on every edge), so that is exact for
// the ring and a bound for the other algorithms (core/collectives/cost_model.h).
class DegradedNics {
 public:
  DegradedNics(const RunOptions& options, const Cluster& cluster);
  bool empty() const { return fraction_.empty(); }
  // The smallest fraction among the NICs the ranks use, when they span nodes; 1 otherwise.
  double slowest(const std::vector<Rank>& ranks) const;
  // The cluster with every NIC at `fraction` of its rate (cached per fraction).
  const Cluster& at(double fraction) const;

 private:
  const Cluster& cluster_;
  std::map<std::pair<int, int>, double> fraction_;  // (node, nic) -> fraction
  mutable std::map<double, Cluster> scaled_;
};

// The ranks whose behaviour some perturbation changes over `options.iterations` steps: the
// ones a folded Job must simulate apart (driver/predict.cc). Random per-op spells touch every
// rank with a non-zero probability; per-step ones exactly the ranks whose draws hit.
std::vector<Rank> perturbed_ranks(const RunOptions& options, const Cluster& cluster);

// Degraded links that no engine applies yet: a switch uplink (nic = -1), and any link of a
// torus (its nodes have no NIC links). Throws InputError naming the `stragglers` key.
void refuse_uplinks_and_torus(const RunOptions& options, const Cluster& cluster,
                              const std::string& engine);

// Throws InputError naming the `stragglers` key for each perturbation `engine` cannot apply.
void refuse_unsupported(const RunOptions& options, const std::string& engine,
                        std::initializer_list<Perturbation::Kind> supported);

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
