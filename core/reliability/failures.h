// Failure processes of a training job's components, and the scripted failures of a scenario.
//
// Contract:
// - A FailureProcess is one component class (GPU, HBM, node, NIC, link, switch, software) with
//   `components` identical parts, each failing with a mean time between failures `mtbf` (per
//   component) drawn from an exponential or a Weibull distribution of shape k. A failed part is
//   replaced by a new one (a renewal process per part): the next failure of that part is drawn
//   from the moment it failed. Every part starts new at the start of the run.
// - Exponential processes are memoryless, so the n parts of a class are one process of rate
//   n / mtbf (the superposition of Poisson processes is Poisson). Weibull parts age, so each is
//   drawn on its own and kept in a heap: 16K GPUs cost 16K draws at the start, then one draw
//   per failure.
// - Weibull of shape k and mean m has scale m / Gamma(1 + 1/k) (k = 1 is the exponential).
// - FailureSource merges the random processes and the scripted events in time order, seeded: the
//   same seed gives the same failures, whatever the caller does between draws.
// - Units: times are Seconds of wall time from the start of the run.
// Thread safety: a FailureSource is a value with its own RNG; not shared between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <random>
#include <string_view>
#include <vector>

#include "core/base/enum_table.h"
#include "core/base/units.h"

namespace dtsim::reliability {

enum class ComponentClass { kGpu, kHbm, kNode, kNic, kLink, kSwitch, kSoftware };
inline constexpr auto kComponentClassNames =
    make_enum_table<ComponentClass>({{ComponentClass::kGpu, "gpu"},
                                     {ComponentClass::kHbm, "hbm"},
                                     {ComponentClass::kNode, "node"},
                                     {ComponentClass::kNic, "nic"},
                                     {ComponentClass::kLink, "link"},
                                     {ComponentClass::kSwitch, "switch"},
                                     {ComponentClass::kSoftware, "software"}});
inline constexpr int kComponentClasses = 7;
constexpr std::string_view to_string(ComponentClass c) {
  return kComponentClassNames.to_string(c);
}

// Whether a failure of this class takes a node out of the job until it is replaced: a GPU, its
// HBM, the host or a NIC is swapped with the node that holds it (the job restarts on a spare).
// Links and switches are rerouted or replaced in the fabric, and software failures restart the
// same nodes, so those need no spare.
constexpr bool needs_node_replacement(ComponentClass c) {
  return c == ComponentClass::kGpu || c == ComponentClass::kHbm || c == ComponentClass::kNode ||
         c == ComponentClass::kNic;
}

enum class FailureDistribution { kExponential, kWeibull };
inline constexpr auto kFailureDistributionNames =
    make_enum_table<FailureDistribution>({{FailureDistribution::kExponential, "exponential"},
                                          {FailureDistribution::kWeibull, "weibull"}});

struct FailureProcess {
  ComponentClass component = ComponentClass::kGpu;
  int64_t components = 1;  // parts of this class in the job
  Seconds mtbf{0};         // mean time between failures of one part
  FailureDistribution distribution = FailureDistribution::kExponential;
  double shape = 1;  // Weibull k (k < 1: infant mortality, k > 1: wear-out)
};

// The job's MTBF from its parts: 1 / sum(components / mtbf). First order for Weibull parts (their
// mean, not their age-dependent rate).
Seconds job_mtbf(const std::vector<FailureProcess>& processes);

struct ScriptedFailure {
  Seconds at{0};
  ComponentClass component = ComponentClass::kNode;
  int64_t node = -1;  // the node that fails, where the scenario names one; -1 otherwise
};

struct FailureEvent {
  Seconds at{0};
  ComponentClass component = ComponentClass::kGpu;
  bool scripted = false;
};

class FailureSource {
 public:
  FailureSource(std::vector<FailureProcess> processes, std::vector<ScriptedFailure> scripted,
                uint64_t seed);
  // The next failure, without consuming it; nullopt when none will ever come.
  std::optional<FailureEvent> peek() const;
  // Consumes the next failure (and draws the next one of the part that failed).
  FailureEvent pop();

 private:
  struct Pending {
    double at_s;
    int process;
    bool operator>(const Pending& o) const { return at_s > o.at_s; }
  };
  double draw_s(const FailureProcess& p, bool whole_class);

  std::vector<FailureProcess> processes_;
  std::vector<ScriptedFailure> scripted_;  // sorted by time
  size_t next_scripted_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
  std::mt19937_64 rng_;
};

}  // namespace dtsim::reliability
