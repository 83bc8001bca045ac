// MPI plumbing shared by the CPU back end's channel, executor and calibration.
//
// Every MPI call goes through one process-wide mutex and waits by polling a non-blocking request
// (MPI_Test, then a short sleep). So the back end needs only MPI_THREAD_SERIALIZED from the
// library, a waiting stream thread leaves its core to the compute thread (Open MPI progresses a
// transfer inside MPI_Test: docs/real-mode.md, "Overlap on CPU"), and every wait can give up at a
// deadline or when the job is being stopped, instead of blocking forever inside MPI.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "core/base/units.h"
#include "real/channel.h"
#include "real/launch.h"

namespace dtsim::real::cpu {

std::mutex& mpi_mutex();

// Throws dtsim::Error naming `call` and MPI's error string when rc is not MPI_SUCCESS.
void check_mpi(int rc, const std::string& call, const std::string& context);

// Polls `request` until it completes. Returns false (leaving the request pending) when `stop`
// becomes true or `deadline` passes; true when it completed.
bool wait_request(MPI_Request& request, const std::atomic<bool>* stop,
                  std::chrono::steady_clock::time_point deadline);

class MpiChannel final : public Channel {
 public:
  MpiChannel(const LaunchInfo& launch, Seconds timeout);
  ~MpiChannel() override;
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "mpi"; }
  std::vector<uint8_t> broadcast(std::vector<uint8_t> from_rank0) override;
  std::vector<std::vector<uint8_t>> gather(std::vector<uint8_t> mine) override;
  void barrier() override;

  MPI_Comm world_comm() const { return world_comm_; }  // a duplicate of MPI_COMM_WORLD
  const LaunchInfo& launch() const { return launch_; }
  Seconds timeout() const { return timeout_; }

 private:
  void wait(MPI_Request& r, const std::string& what);
  LaunchInfo launch_;
  Seconds timeout_;
  int rank_ = 0, world_ = 1;
  MPI_Comm control_ = MPI_COMM_NULL, world_comm_ = MPI_COMM_NULL;
};

}  // namespace dtsim::real::cpu
