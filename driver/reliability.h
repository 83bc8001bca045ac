// The whole-run stage of the driver: from one simulated step to a training run with failures,
// checkpoints and restarts (core/reliability), when the scenario asks for one (training.steps or
// tokens, failures:, checkpoint:).
//
// Contract:
// - run_whole() takes the step time from the step simulation (the Trace): with more than one
//   simulated iteration, each step of the run draws one of their times, so per-step
//   perturbations carry into the run; else every step takes the mean step time.
// - Component counts come from the Cluster (GPUs, HBM = GPUs, nodes, NICs, one cable per NIC,
//   leaf or rail switches, one software stack); the checkpoint size from the model state
//   (weights + optimizer states of the whole model, Rajbhandari et al. 2020 accounting,
//   core/strategy/model_state.h); an async snapshot copies one GPU's weights and optimizer
//   states at checkpoint.snapshot_bandwidth.
// - Elastic continuation scales the step time by dp / dp_now (core/reliability/timeline.h): the
//   global batch is kept, so each replica runs dp / dp_now times the micro-batches. Compute
//   scales so exactly; the data-parallel all-reduce moves 2(n-1)/n of the gradients per GPU,
//   nearly the same at n and n-1, so scaling it too overstates the slowdown slightly. A second
//   step simulation per replica count would be exact and cost one step simulation each.
// - Input the step simulation decides (InputError naming file, line and key, exit 2): an
//   interval shorter than the checkpoint write, and a scripted event after the failure-free end
//   of the run.
#pragma once

#include "core/hardware/cluster.h"
#include "core/ir/model_graph.h"
#include "core/ir/trace.h"
#include "core/reliability/timeline.h"
#include "core/report/metrics.h"
#include "core/scenario/scenario.h"

namespace dtsim::driver {

// The run's steps: training.steps, or training.tokens over the tokens a step trains (global batch
// x tokens per sample), rounded up; InputError when that exceeds training.steps' bound.
int64_t run_steps(const Scenario& scenario, int64_t global_batch_size, int64_t seq_length);

reliability::RunReport run_whole(const Scenario& scenario, const Cluster& cluster,
                                 const Results& results, const Trace& trace);

}  // namespace dtsim::driver
