// The SimGrid executor: runs a Job on a discrete-event model of the cluster, so that link
// contention, topology and overlap emerge from simulation rather than formulas.
//
// Contract:
// - The Job is lowered to the same activity graph as the analytic engine
// (core/exec/activity_graph.h);
//   kernels become SimGrid Execs on their GPU's host, flows become Comms over the platform of
//   sim/platform.h, joins and delays are Execs on a timer host, and graph edges become SimGrid
//   activity dependencies. No actors run: the dependency engine starts each activity when its
//   predecessors finish, which is both exact and the fastest way SimGrid offers.
// - Network model: CM02 with cross-traffic off and TCP-gamma 0 (no window cap), so one flow alone
//   takes exactly latency + bytes / bandwidth (docs/simgrid-platform.md has the evidence), while
//   concurrent flows share links max-min fairly.
// - Collectives alone on their links (SimGridOptions::alone_collectives, at either fidelity):
//   each distinct schedule is first timed alone on the idle platform (one of 50,000 flows or more
//   in a process forked at time zero, up to one per CPU at once; the rest in this process, one
//   after another), then the graph starts and such a collective takes that time; kernels and
//   alone collectives that follow each other on one stream run as one Exec. Exact
//   (core/exec/activity_graph.h); the graph's times are shifted back by the clock the probes
//   used, which changes them by rounding only.
// - Fidelity: chunk (every ring step is a flow), collective (one bulk flow per ring edge) or auto
//   (chunk while the whole run has at most kAutoChunkFlows chunk-level flows, a few seconds of
//   simulation; collective beyond). Chunk fidelity beyond kMaxChunkFlows is refused with an
//   InputError: it would need gigabytes and hours.
// - Each run happens in a forked child process: SimGrid allows one simulation per process and a
//   SimGrid fatal error aborts the process. A failed child becomes a RuntimeError carrying the
//   end of its error output; the caller's process survives.
// - Deterministic: the same Job gives bit-identical times.
#pragma once

#include <string>

#include "core/config/config.h"
#include "core/exec/activity_graph.h"
#include "core/exec/engine_registry.h"
#include "core/exec/executor.h"

namespace dtsim::sim {

inline constexpr double kAutoChunkFlows = 500e3;  // about 2 s at 3.3 us per flow
inline constexpr double kMaxChunkFlows = 20e6;    // about 3 GB of graph and over a minute

struct SimGridOptions {
  FidelitySetting fidelity = FidelitySetting::kAuto;
  DType precision = DType::kBf16;
  // Collectives alone on their links run as one activity of their schedule's time, timed once
  // alone (core/exec/activity_graph.h); false keeps their flows. Exact either way.
  bool alone_collectives = true;
};

// The engine's one-line description in the registry (core/exec/engine_registry.h), and its
// options from a scenario: the same for the linked registration (register_simgrid.cc) and the
// on-demand one of the dtsim program (simgrid_on_demand.cc).
inline constexpr const char* kSimGridEngineDescription =
    "SimGrid discrete-event simulation: link contention, topology and overlap emerge from the "
    "platform; fidelity chunk, collective or auto";
inline SimGridOptions simgrid_options(const EngineSettings& s) {
  return SimGridOptions{s.fidelity, s.precision};
}

class SimGridExecutor : public Executor {
 public:
  explicit SimGridExecutor(SimGridOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "simgrid"; }
  Trace run(const Job& job, const Cluster& cluster, const RunOptions& options) override;
  // Flows between the members of each collective, and a platform host per GPU: data
  // parallelism over 32768 GPUs (203 all-reduces) peaked at 5.56 GB, 836 B per member
  // (bench/results/run-memory.md); 1 KiB errs towards refusing early.
  double bytes_per_collective_member() const override { return 1024; }

  // The collective body the fidelity setting selects for this Job.
  CollectiveBody body_for(const Job& job, const Cluster& cluster, int iterations) const;

 private:
  SimGridOptions options_;
};

// Runs an activity graph on SimGrid in a child process and returns every node's finish time (s).
// The kDegradedLink perturbations with a NIC scale that NIC link's bandwidth.
std::vector<double> simulate_graph(const ActivityGraph& graph, const Cluster& cluster,
                                   DType precision,
                                   const std::vector<Perturbation>& perturbations = {});

}  // namespace dtsim::sim
