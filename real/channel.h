// An out-of-band control channel between the processes of a real-mode job: the NCCL unique id,
// the gathered traces, the start barrier and the watchdog's status all travel over it. Two
// implementations: MPI (real/cpu/mpi_channel.cc, for mpirun or srun) and TCP (real/tcp_channel.cc,
// torchrun-style MASTER_ADDR / MASTER_PORT, for GPU jobs launched without MPI).
//
// Contract:
// - Every call is collective over the whole world and blocks until it completes on this rank, or
//   throws dtsim::Error after `timeout` naming the ranks that did not take part.
// - broadcast(): rank 0's bytes reach every rank. gather(): rank 0 receives every rank's bytes in
//   rank order; other ranks receive an empty vector. barrier(): no rank leaves before all arrive.
// - Payloads are bytes; callers serialise (JSON for traces, raw bytes for the NCCL id).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/units.h"
#include "real/launch.h"

namespace dtsim::real {

class Channel {
 public:
  virtual ~Channel() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;  // "mpi", "tcp", "local"
  virtual std::vector<uint8_t> broadcast(std::vector<uint8_t> from_rank0) = 0;
  virtual std::vector<std::vector<uint8_t>> gather(std::vector<uint8_t> mine) = 0;
  virtual void barrier() = 0;
};

// A channel for a job of one process (launcher "none", or a single-rank run): every call is
// immediate.
class LocalChannel final : public Channel {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string name() const override { return "local"; }
  std::vector<uint8_t> broadcast(std::vector<uint8_t> b) override { return b; }
  std::vector<std::vector<uint8_t>> gather(std::vector<uint8_t> mine) override {
    return {std::move(mine)};
  }
  void barrier() override {}
};

// The TCP channel of a torchrun-style launch (real/tcp_channel.cc): rank 0 listens on
// MASTER_PORT, every other rank connects to MASTER_ADDR:MASTER_PORT within `timeout`.
std::unique_ptr<Channel> make_tcp_channel(const LaunchInfo& launch, Seconds timeout);

}  // namespace dtsim::real
