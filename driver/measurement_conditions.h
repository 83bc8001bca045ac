// How disturbed a real-mode measurement was (Results::measurement_conditions): the host's load
// and the CPU time its hypervisor took while the run measured, and how much each compute op's
// time varied between the timed steps, which repeat the same work.
//
// Contract:
// - sample_host() reads /proc/loadavg and /proc/stat; on a host without them (not Linux) the
//   figures are unknown (-1), never an error.
// - assess() compares two samples, before and after the timed steps, and the measured trace:
//   compute ops of at least kMinOpSeconds timed in two or more steps give the spread
//   (slowest - fastest) / fastest of each, whose median and 90th percentile are reported.
//   With one timed step there is no spread to measure, and the summary says so.
// - A measurement is disturbed when the 90th percentile spread exceeds kDisturbedSpread, the
//   steal fraction kDisturbedSteal, or the load before the run (when dtsim's ranks had not
//   started) the host's CPU count.
#pragma once

#include <cstdint>

#include "core/ir/trace.h"
#include "core/report/metrics.h"

namespace dtsim::driver {

// Ops shorter than this are left out of the spread: timer and scheduling noise is a large part
// of them whether or not the machine is disturbed.
inline constexpr double kMinOpSeconds = 50e-6;
// Two thirds of the 15 % accuracy gate of bench/run_prediction_loop.sh: a measurement whose own
// steps vary more than this cannot check a prediction to that gate.
inline constexpr double kDisturbedSpread = 0.10;
// A hypervisor taking more than 5 % of the CPU time slows the measured work by about as much.
inline constexpr double kDisturbedSteal = 0.05;

struct HostSample {
  int cpus = 0;
  double load_1m = -1;     // /proc/loadavg's first figure
  int64_t cpu_total = -1;  // /proc/stat's aggregate "cpu" line: every field, in clock ticks
  int64_t cpu_steal = -1;  // its steal field
};

HostSample sample_host();

MeasurementConditions assess(const HostSample& before, const HostSample& after, const Trace& trace);

}  // namespace dtsim::driver
