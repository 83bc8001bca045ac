// The CPU back end's watchdog: it ends a job whose op runs longer than --timeout, on every rank,
// with one message that says which rank is stuck where (docs/design.md section 7, "Faults").
//
// How: each stream thread says when an op begins and ends. A watchdog thread per process checks
// every 50 ms. When one of its ops has run past the timeout, or another rank's watchdog raises the
// alarm, it sends the alarm to every rank and its status (the op each stream is in, for how long)
// to rank 0, over a communicator of its own. Rank 0 waits up to 3 s for every status, prints the
// diagnosis (ranks that are in a compute op or that do not answer are the likely cause; the others
// wait for them) and calls MPI_Abort with exit code 1, which ends every process of the job. A rank
// that cannot reach rank 0 prints its own status and aborts after 5 s.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/ir/program.h"
#include "real/cpu/mpi_support.h"

namespace dtsim::real::cpu {

class Watchdog {
 public:
  Watchdog(MpiChannel& channel, const Program& program, Seconds timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void begin(StreamId stream, size_t op_index, int iteration);
  void end(StreamId stream);

 private:
  struct Status {
    std::atomic<int64_t> started_ns{-1};  // steady clock; -1: between ops
    std::atomic<size_t> op{0};
    std::atomic<int> iteration{0};
  };
  void loop();
  [[noreturn]] void stop_job(const std::string& reason);
  std::string status_text() const;

  MpiChannel& channel_;
  const Program& program_;
  Seconds timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<std::unique_ptr<Status>> streams_;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace dtsim::real::cpu
