// Real mode's executors: the same Programs the simulator predicts, run on real devices
// (docs/design.md sections 1 and 7). One process per rank; each process runs its own rank's Program
// and rank 0 gathers everyone's measured spans into one Trace, so that reports, the Chrome trace
// and `dtsim compare` read a measurement exactly as they read a prediction.
//
// Contract:
// - A real executor is a dtsim::Executor. run(job, cluster, options) runs job.program_for(rank)
//   for options.warmup_iterations untimed steps, then options.iterations timed ones, on every
//   process of the job at once. On rank 0 it returns the whole job's Trace (every rank's spans,
//   with times in seconds from a common start after a barrier, and each rank's measured peak
//   memory); on other ranks the Trace holds their own spans only.
// - The Job must hold a Program for every rank of the world (driver::unfolded_job); a rank
//   without one is a dtsim::Error.
// - Nothing here changes a Program: ops run in stream order, an op waits for the events it names,
//   collectives run on one communicator per group (and per stream, so that two streams never
//   interleave calls on one communicator), send/recv pair by peer and tag.
// - Faults: an op that does not end within RealOptions::timeout, or a peer that stops
//   responding, ends the job on every rank with a dtsim::Error that names the rank, the host, the
//   op and the call (exit 1); no process is left behind.
// - Trace::engine names the back end ("cpu-mpi", "cuda-nccl"); Trace::notes states what the back
//   end did differently from the Program (e.g. the CPU back end computes every dtype in fp32).
#pragma once

#include "core/base/units.h"
#include "core/exec/executor.h"

namespace dtsim::real {

// Faults injected on purpose, to test that a dying or hanging rank ends the job cleanly.
struct FaultInjection {
  enum class Kind { kNone, kExit, kHang };
  Kind kind = Kind::kNone;
  int rank = -1;  // the rank that fails, mid-way through its first timed step
};

struct RealOptions {
  int warmup_iterations = 1;
  Seconds timeout{300};  // an op (or a silent peer) longer than this ends the job
  // CPU back end: GEMMs run at this fraction of their size and then wait out the rest of their
  // full-size time, so that a scenario of full-size layers needs that fraction of the CPU work
  // (its wall time is the full-size step's; stated in the Trace's notes).
  double compute_scale = 1.0;
  FaultInjection fault;
};

}  // namespace dtsim::real
