// Child processes for front ends that run many simulations: one simulation per process, since
// SimGrid allows one engine per process (docs/design.md section 5). dtsim sweep and dtsim plan run
// `dtsim simulate ... --json` children through a ChildPool; the GUI uses QProcess the same way.
//
// Contract:
// - Each child runs in a process group of its own, so that a timeout or cancel ends it together
//   with the children it forked (the SimGrid engine runs in one), and a terminal's Ctrl-C reaches
//   the parent alone; the parent decides what its children do. A child also gets SIGKILL when
//   its parent dies (PR_SET_PDEATHSIG), so even a SIGKILLed front end leaves no process behind.
// - stdout and stderr are captured whole, each up to `kMaxCapturedBytes` (the rest is dropped
//   and said so at the end of the text).
// - A child that outlives its timeout is killed with its group and reported kTimedOut.
// - ~ChildPool and cancel_all() kill every running child and reap it: no zombie, no orphan.
// - kill_all_children_from_signal_handler() is async-signal-safe: a front end's SIGINT/SIGTERM
//   handler calls it before it ends, so an interrupted sweep leaves no child running.
// - Not thread-safe: one pool is driven from one thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::driver {

inline constexpr std::size_t kMaxCapturedBytes = 64 * 1024 * 1024;

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path
  double timeout_s = 0;           // wall-clock limit; 0: none
};

struct ChildOutcome {
  enum class Status {
    kExited,     // ended by itself: see exit_code
    kSignalled,  // ended by a signal it did not expect (a crash): see signal
    kTimedOut,   // killed by the pool at its timeout
    kCancelled,  // killed by cancel_all()
    kNotStarted  // fork or exec failed: see error
  };
  Status status = Status::kExited;
  int exit_code = 0;
  int signal = 0;
  std::string out, err;  // captured stdout and stderr
  std::string error;     // why it could not start
  double wall_s = 0;
};

class ChildPool {
 public:
  explicit ChildPool(int max_parallel);
  ~ChildPool();
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;

  int max_parallel() const { return max_parallel_; }
  std::size_t running() const { return children_.size(); }
  bool has_slot() const { return static_cast<int>(children_.size()) < max_parallel_; }

  // Starts a child under the caller's id. An exec failure is reported by wait() as kNotStarted.
  void start(std::size_t id, const ChildSpec& spec);

  // Waits up to `max_wait_s` (0: do not wait) for children to end; returns those that ended,
  // with the ids they were started under. Returns at once when no child runs.
  std::vector<std::pair<std::size_t, ChildOutcome>> wait(double max_wait_s);

  // Kills every running child (SIGKILL to its group) and reaps it.
  void cancel_all();

 private:
  struct Child;
  int max_parallel_;
  std::vector<Child*> children_;
};

// The path of the running program (/proc/self/exe), for a front end that runs copies of itself.
std::string self_executable();

// Kills the process group of every running child of every pool (async-signal-safe).
void kill_all_children_from_signal_handler();

// While it lives, SIGINT, SIGTERM and SIGHUP first kill every running child's process group, then
// end the process as the signal would have (the previous handlers are restored on destruction).
// A front end that runs children (sweep, plan) holds one around its pool.
class KillChildrenOnInterrupt {
 public:
  KillChildrenOnInterrupt();
  ~KillChildrenOnInterrupt();
  KillChildrenOnInterrupt(const KillChildrenOnInterrupt&) = delete;
  KillChildrenOnInterrupt& operator=(const KillChildrenOnInterrupt&) = delete;

  // What the handler writes to stderr before the process ends (how far the work got, how to
  // resume it), replaced as the work advances; cut to 1023 bytes. Set from one thread.
  void set_farewell(const std::string& text);

 private:
  struct Saved;
  Saved* saved_;
};

}  // namespace dtsim::driver
