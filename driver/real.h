// Real mode through the driver (docs/design.md sections 1 and 7): the scenario's Program for every
// rank, run on real devices by a back end from real/, and the measurement turned into Results
// exactly as a prediction is, with source "measured". `dtsim real`, `dtsim calibrate` and the
// GUI call these; none of them names MPI or CUDA.
//
// Contract:
// - measure() runs on every process of the launched job. It loads and plans the scenario, checks
//   that the launch has exactly one process per rank of the scenario (InputError otherwise, saying
//   how to launch it), builds the unfolded Job (every rank's Program, driver/rank_program.h) and
//   runs it. On rank 0 the Measurement holds the whole job's Trace and the Results; other ranks'
//   hold their own spans and `root` false.
// - The back end defaults to the CPU one for the CPU-core device and to CUDA otherwise.
// - calibrate() runs the back end's microbenchmarks on every process; rank 0's profile is the
//   one to write.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/hardware/profile.h"
#include "driver/predict.h"
#include "real/backends.h"

namespace dtsim::driver {

struct MeasureOptions {
  std::optional<real::Backend> backend;  // empty: from the scenario's GPU
  real::RealOptions real;
  int iterations = 3;  // timed steps
  Progress* progress = nullptr;
};

struct Measurement {
  bool root = true;  // rank 0: trace and results cover the whole job
  real::LaunchInfo launch;
  real::Backend backend = real::Backend::kCpu;
  Scenario scenario;
  ModelGraph model;
  Cluster cluster;
  Job job;
  Trace trace;
  Results results;
};

Measurement measure(const std::string& scenario_path, const std::vector<std::string>& overrides,
                    const MeasureOptions& options);

// A measured receive runs from when it was posted until its message is in: the wait for the
// sender and the transfer. measure() starts each receive at its send's start when that is later
// (the same sender, receiver, tag and step, matched in program order), so that, as in a
// simulated timeline, the wait is idle time and a receive's busy time is its transfer. Returns how
// many receives it moved.
int start_receives_at_their_sends(const Job& job, Trace& trace);

struct CalibrateRequest {
  real::Backend backend = real::Backend::kCpu;
  real::CalibrateOptions options;
  Seconds timeout{300};
};
// The profile (meaningful on rank 0; `root` says which).
HardwareProfile calibrate(const CalibrateRequest& request, bool* root);

}  // namespace dtsim::driver
