// Who this process is in a real-mode job: its rank, the world, its rank on the node, and how it
// was launched (docs/design.md section 7). Read from the launcher's environment; nothing is
// assumed.
//
// Contract:
// - detect_launch() reads, in this order: Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE,
//   _LOCAL_RANK, _LOCAL_SIZE), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
//   SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE), PMI (PMI_RANK, PMI_SIZE; MPICH's hydra),
//   and torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
//   MASTER_PORT). With none of them it is one process: rank 0 of 1, launcher "none".
// - A variable that is present but malformed (RANK=abc, RANK >= WORLD_SIZE) is an InputError
//   naming the variable: a wrong launch must never run as a silently different job.
// - Ranks map to devices by local rank (GPU local_rank on a GPU node).
#pragma once

#include <string>

namespace dtsim::real {

struct LaunchInfo {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  int local_world = 1;
  std::string host;      // gethostname()
  std::string launcher;  // "mpirun", "srun", "pmi", "torchrun", "none"
  bool mpi = false;      // launched by an MPI launcher: MPI_Init will find the job
  // torchrun-style rendezvous (the TCP bootstrap, real/tcp_channel.cc)
  std::string master_addr;
  int master_port = 0;
};

// Reads the environment (see the contract). `env` is for tests; null reads the process's own.
LaunchInfo detect_launch(char** env = nullptr);

// "rank 3 of 8 on node7 (mpirun, local rank 3)", for messages.
std::string describe(const LaunchInfo& launch);

}  // namespace dtsim::real
