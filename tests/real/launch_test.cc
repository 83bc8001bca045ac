// Launch detection (real/launch.h): every launcher's variables, and malformed ones refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "real/launch.h"

namespace dtsim::real {
namespace {

LaunchInfo detect(std::vector<std::string> vars) {
  std::vector<char*> env;
  for (auto& v : vars) env.push_back(v.data());
  env.push_back(nullptr);
  return detect_launch(env.data());
}

TEST(Launch, NoLauncherIsOneProcess) {
  const LaunchInfo l = detect({"PATH=/usr/bin"});
  EXPECT_EQ(l.launcher, "none");
  EXPECT_EQ(l.world, 1);
  EXPECT_EQ(l.rank, 0);
  EXPECT_FALSE(l.mpi);
}

TEST(Launch, OpenMpi) {
  const LaunchInfo l = detect({"OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_RANK=5",
                               "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4"});
  EXPECT_EQ(l.launcher, "mpirun");
  EXPECT_TRUE(l.mpi);
  EXPECT_EQ(l.world, 8);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world, 4);
}

TEST(Launch, Slurm) {
  const LaunchInfo l = detect(
      {"SLURM_PROCID=3", "SLURM_NTASKS=16", "SLURM_LOCALID=3", "SLURM_TASKS_PER_NODE=8(x2)"});
  EXPECT_EQ(l.launcher, "srun");
  EXPECT_EQ(l.world, 16);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.local_rank, 3);
  EXPECT_EQ(l.local_world, 8);
}

TEST(Launch, TorchrunStyle) {
  const LaunchInfo l = detect({"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2",
                               "MASTER_ADDR=node0", "MASTER_PORT=29500"});
  EXPECT_EQ(l.launcher, "torchrun");
  EXPECT_FALSE(l.mpi);
  EXPECT_EQ(l.world, 4);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.master_addr, "node0");
  EXPECT_EQ(l.master_port, 29500);
}

TEST(Launch, MalformedVariablesAreRefusedByName) {
  const auto key_of = [](std::vector<std::string> vars) {
    try {
      detect(std::move(vars));
    } catch (const InputError& e) {
      return e.diagnostics().front().key_path;
    }
    return std::string("no error");
  };
  EXPECT_EQ(key_of({"OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK=4"}), "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(key_of({"OMPI_COMM_WORLD_SIZE=four", "OMPI_COMM_WORLD_RANK=0"}),
            "OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(key_of({"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=29500"}), "MASTER_ADDR");
  EXPECT_EQ(key_of({"RANK=x", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=1"}), "RANK");
  EXPECT_EQ(key_of({"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=70000"}),
            "MASTER_PORT");
}

}  // namespace
}  // namespace dtsim::real
