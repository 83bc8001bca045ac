// A whole training run at step granularity: failures, checkpoints, restarts and goodput.
//
// Contract:
// - simulate_run() advances wall time from one boundary to the next (a checkpoint, the end of the
//   run, a failure), never event by event: a failure-free stretch of n steps of constant time t
//   costs one multiplication. With a step-time sampler it draws each step's time, one step at a
//   time (a 30-day run of 10 s steps is 260K draws).
// - Checkpoints (RunPolicy): one after every `interval_steps` steps.
//   - sync: every rank stops for `write_time` (the state written at the storage's bandwidth);
//     the checkpoint is durable when the write ends.
//   - async: the ranks stop only for `snapshot_time` (the state copied to host memory); the write
//     to storage then runs beside training for `write_time`, and the checkpoint is durable only
//     when it ends. A failure before that loses it (the previous one is restored). A checkpoint
//     due while the previous write is still running waits for it (counted as checkpoint time).
//   No checkpoint is written after the last step.
// - A failure while the job runs: the steps since the last durable checkpoint, and the part of
//   the step under way, are lost (rework); the hang lasts `detection_timeout` (the collective
//   watchdog) before the job is torn down; then `restart_overhead` (relaunch, reload). A failure
//   that needs a node (needs_node_replacement) takes a spare if one is left; the failed node is
//   repaired in `repair_time` and becomes a spare again. With none left: an elastic job continues
//   with `replicas_per_node` fewer data-parallel replicas (step time x dp / dp_now: the global
//   batch is kept, so each replica runs more micro-batches; see elastic_step_factor), else the
//   job waits for the first repair. Replicas dropped elastically are not regrown.
// - A failure while the job is down (detection, restart, waiting for a node) is counted and takes
//   its spare; one during the restart starts the restart again.
// - Accounting: time_to_train = useful + rework + detection + restart + checkpoint + repair_wait +
//   elastic, exactly (tests/reliability checks it). useful is the time of the kept steps at full
//   size; elastic is what the kept steps took beyond that. goodput = useful / time_to_train.
// - Young (1974): the interval that minimises lost time to first order is sqrt(2 C M), C the
//   cost of one checkpoint (the stall), M the job's MTBF. Daly (2006), eq. 37, the higher-order
//   optimum: sqrt(2CM) [1 + sqrt(C/2M)/3 + (C/2M)/9] - C for C < 2M, else M.
// - A run that cannot end (failures faster than its restarts) stops with RunNeverEnds after
//   kMaxInterruptions failures: far beyond any real run (Llama 3 405B: 466 interruptions in
//   54 days on 16K GPUs, Dubey et al. 2024).
// - Units: Seconds of wall time throughout. Deterministic for a seed.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/reliability/failures.h"

namespace dtsim::reliability {

enum class CheckpointMode { kSync, kAsync };
inline constexpr auto kCheckpointModeNames = make_enum_table<CheckpointMode>(
    {{CheckpointMode::kSync, "sync"}, {CheckpointMode::kAsync, "async"}});

struct RunPolicy {
  int64_t steps = 1;
  Seconds step_time{0};  // one step at full size, when there is no sampler
  // Draws one step's time at full size; empty: every step takes step_time.
  std::function<Seconds(std::mt19937_64&)> step_time_sampler;
  int64_t interval_steps = 0;  // steps between checkpoints; 0: no checkpoints
  CheckpointMode mode = CheckpointMode::kSync;
  Seconds write_time{0};     // the whole state to storage
  Seconds snapshot_time{0};  // async: the stall to copy the state to host memory
  Seconds detection_timeout{0};
  Seconds restart_overhead{0};
  int64_t spare_nodes = -1;  // -1: unlimited
  Seconds repair_time{0};
  bool elastic = false;
  int data_parallel = 1;
  int replicas_per_node = 1;  // data-parallel replicas a failed node takes down
};

// The step-time factor with dp_now of dp replicas, global batch kept.
constexpr double elastic_step_factor(int dp, int dp_now) {
  return static_cast<double>(dp) / static_cast<double>(dp_now);
}

struct LostTime {
  Seconds rework{0};
  Seconds detection{0};
  Seconds restart{0};
  Seconds checkpoint{0};
  Seconds repair_wait{0};
  Seconds elastic{0};
  Seconds total() const {
    return rework + detection + restart + checkpoint + repair_wait + elastic;
  }
};

// One interruption as the run lived it, for the trace: the failure, then detection and restart
// (and any wait for a spare or a repair) until training runs again.
struct Interruption {
  Seconds at{0};  // when the failure happened (wall time since the run began)
  ComponentClass cause = ComponentClass::kSoftware;
  Seconds rework{0};   // training since the last durable checkpoint, lost
  Seconds resumed{0};  // when training ran again
};
// The log keeps the first interruptions only: enough to see a run's pattern in a trace, bounded
// so that a pathological run cannot grow it without limit.
inline constexpr size_t kMaxLoggedInterruptions = 100'000;

struct RunOutcome {
  Seconds time_to_train{0};
  Seconds useful{0};
  double goodput = 1;
  LostTime lost;
  std::array<int64_t, kComponentClasses> interruptions_by_cause{};
  int64_t interruptions = 0;
  int64_t checkpoints_written = 0;  // durable or not
  int64_t spares_used = 0;
  int final_data_parallel = 1;
  // Step times (as run, elastic slowdown included) over every step that ran, kept or redone.
  Seconds step_time_p50{0}, step_time_p90{0}, step_time_p99{0};
  std::vector<Interruption> log;  // the first kMaxLoggedInterruptions, in time order
};

// A whole run as the results report it: the policy's figures, the optima, and one seeded outcome.
struct RunReport {
  int64_t steps = 1;
  Seconds step_time{0};          // mean, at full size
  Seconds failure_free_time{0};  // steps x step time + the checkpoint stalls
  CheckpointMode mode = CheckpointMode::kSync;
  Bytes checkpoint_size{0};        // the whole state written: weights + optimizer states
  Seconds checkpoint_write{0};     // checkpoint_size / write bandwidth
  Seconds checkpoint_stall{0};     // what one checkpoint stops training for (sync: the write)
  Seconds checkpoint_interval{0};  // chosen, whole steps; 0: no checkpoints
  int64_t interval_steps = 0;
  bool interval_is_young_daly = false;  // the scenario left checkpoint.interval to the optimum
  Seconds job_mtbf{0};                  // infinite without random failures
  Seconds young_daly_interval{0}, daly_interval{0};  // 0 without random failures
  double expected_interruptions = 0;  // time to train / job MTBF, plus the scripted events
  std::array<int64_t, kComponentClasses> components{};  // parts per class in the job
  RunOutcome outcome;
};

// A run whose failures come faster than it can restart and checkpoint: it would never end.
// simulate_run throws it after kMaxInterruptions, so that no input loops forever.
class RunNeverEnds : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
inline constexpr int64_t kMaxInterruptions = 10'000'000;

RunOutcome simulate_run(const RunPolicy& policy, const std::vector<FailureProcess>& processes,
                        const std::vector<ScriptedFailure>& scripted, uint64_t seed);

// Young 1974 (first order) and Daly 2006 (higher order) optimal compute time between checkpoints.
Seconds young_interval(Seconds checkpoint_cost, Seconds mtbf);
Seconds daly_interval(Seconds checkpoint_cost, Seconds mtbf);
// The first-order expected goodput 1 - (C/tau + tau/(2M) + R/M), R the time to detect and
// restart (Young 1974's waste, plus the restart per failure).
double first_order_goodput(Seconds checkpoint_cost, Seconds interval, Seconds mtbf,
                           Seconds recovery);

}  // namespace dtsim::reliability
