// Relaxed data-parallel synchronisation: training.sync ssp and local-sgd (docs/models.md,
// "Relaxed synchronisation"), as closed forms over the synchronous step an engine simulated.
//
// Contract:
// - The scenario is pure data parallelism with the gradient all-reduce after backward
//   (check_training_modes refuses the rest), so one synchronous step with one persistent slow
//   rank is T_sync = C* + X: C*, the slowest replica's kernels per step (s), and X, the rest of
//   the step (the all-reduce and the ops around it, s).
// - local-sgd, period H (Stich 2019; Lin et al. 2020): H local steps without the gradient
//   all-reduce, then one all-reduce of the parameters, which the slowest replica gates:
//   T = (H·C* + X) / H = C* + X / H per step. Assumption: the averaging all-reduce costs what the
//   gradient all-reduce does (same element count, both in the gradients' reduction dtype).
// - ssp, bound s (Ho et al. 2013): s = 0 is synchronous. For s >= 1 a replica starts step c + 1
//   while step c's update is still in flight (its reads may miss up to s updates), so each
//   replica's communication overlaps its next step's kernels: a two-stage pipeline whose period
//   is max(C*, X). Fast replicas run at most s steps ahead of the slowest, so in steady state the
//   job advances at the slowest replica's rate: T = max(C*, X). The transient (the first s steps,
//   where fast replicas pull ahead) is left out: it changes a run of N steps by at most s·X.
// - easgd, period tau (Zhang, Choromanska and LeCun, "Deep learning with Elastic Averaging SGD",
//   NIPS 2015, synchronous EASGD, eqs. 5-6): tau local steps, then each replica moves towards the
//   center variable x~ and x~ towards the replicas' mean: x_i -= alpha (x_i - x~),
//   x~ = (1 - W alpha) x~ + W alpha mean(x_i). The mean is one all-reduce of the fp32 parameters
//   (x~ is replicated on every replica, each updating it from the same mean), so per step
//   T = C* + (X·4/g + E) / tau: the exchange X scaled from the gradients' g bytes per element to
//   the parameters' 4, and E the elastic update kernel (read x_i, x~ and the mean, write x_i and
//   x~: 20 bytes and 4 FLOPs per parameter, fp32). The center variable adds 4 bytes per parameter
//   of weights on every GPU.
// - parameter-server and async (core/strategy/parameter_server.h): the engine simulated the
//   synchronous exchange with the servers in the Program; parameter_server_results() reads each
//   server's load from the trace. Under asynchronous updates (Dean et al. 2012, Downpour SGD) a
//   discrete-event model runs the workers on their own from the simulated times: worker w
//   computes for C_w (its kernels per step in the trace, stragglers included), pushes its S
//   shards at once (its NIC sends G/B, each server's NIC receives one shard in G/(S·B)), each
//   server applies the shard (its update kernels over one shard), and the servers send the
//   parameters as that update left them back (one push-pull request, as ps-lite's ZPushPull and
//   BytePS's push_pull; Pw/B at the worker, Pw/(S·B) at each server). Every update visits every
//   server alike, so the servers' receive, update and send are each one first-come first-served
//   queue, served in the order the workers become ready; transfer times are the closed-form
//   point-to-point times (core/collectives/cost_model.h). The staleness of an update is
//   the number of other workers' updates applied between the worker's pull of the parameters its
//   gradient came from and its own update (Ho et al. 2013; equal workers: W - 1). The first update
//   of each worker (from the initial parameters) is left out of the histogram.
// - apply_relaxed_sync rewrites step_time_s, the rates that follow from it and the breakdown
//   (a saving taken from exposed communication, then straggler wait, then other; a loss added to
//   other), and says what it did in Results::notes. It does nothing for training.sync
//   synchronous.
#pragma once

#include <vector>

#include "core/hardware/cluster.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"

namespace dtsim::driver {

// The closed forms above; `slowest_compute_s` is C*, `synchronous_step_s` is T_sync (s).
double local_sgd_step_s(double slowest_compute_s, double synchronous_step_s, int period);
double ssp_step_s(double slowest_compute_s, double synchronous_step_s, int staleness);
// `exchange_scale` is 4/g; `elastic_update_s` is E (s).
double easgd_step_s(double slowest_compute_s, double synchronous_step_s, int period,
                    double exchange_scale, double elastic_update_s);

// C*: the most compute-span time any simulated rank spends per step in `trace` (s).
double slowest_compute_per_step_s(const Trace& trace);

// The discrete-event model of asynchronous parameter-server training above.
struct AsyncWorker {
  double compute_s = 0;  // kernels per step
};
struct AsyncInputs {
  std::vector<AsyncWorker> workers;
  int servers = 1;
  double push_shard_s = 0;  // one gradient shard from a worker to a server
  double pull_shard_s = 0;  // one parameter shard back
  double update_s = 0;      // a server's update kernels for one pushed shard
  int updates_per_worker = 200;
};
struct AsyncOutcome {
  double updates_per_s = 0;                  // over all workers, after the first round
  std::vector<int64_t> staleness_histogram;  // [k]: updates that missed k others
  double mean_staleness = 0;
  std::vector<int64_t> updates_by_worker;
};
AsyncOutcome simulate_async_parameter_server(const AsyncInputs& inputs);

// Each server's load per step from the trace of a parameter-server Job.
ParameterServerResults parameter_server_results(const Scenario& scenario, const Job& job,
                                                const Cluster& cluster, const Trace& trace,
                                                double step_s);

void apply_relaxed_sync(const Scenario& scenario, const Job& job, const Cluster& cluster,
                        const Trace& trace, Results& results);

}  // namespace dtsim::driver
