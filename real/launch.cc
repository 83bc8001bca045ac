#include "real/launch.h"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <map>
#include <optional>

#include "core/base/error.h"

extern char** environ;

namespace dtsim::real {
namespace {

using Env = std::map<std::string, std::string>;

Env read_env(char** env) {
  Env out;
  for (char** e = env ? env : environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) out.emplace(std::string(const_cast<const char*>(*e), eq), std::string(eq + 1));
  }
  return out;
}

std::optional<std::string> get(const Env& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

InputError bad_variable(const std::string& name, const std::string& value,
                        const std::string& expected) {
  return InputError(Diagnostic{SourceLocation{"environment", 0, 0}, name,
                               "expected " + expected + ", found '" + value + "'"});
}

// The integer a launcher variable holds, within [lo, hi].
int integer(const Env& env, const std::string& name, int lo, int hi) {
  const std::string v = *get(env, name);
  int x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
    throw bad_variable(name, v,
                       "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return x;
}

// Slurm writes SLURM_TASKS_PER_NODE as "4(x2),3": the first count is this job's usual one.
int slurm_tasks_per_node(const Env& env, int world) {
  if (auto v = get(env, "SLURM_NTASKS_PER_NODE"))
    return integer(env, "SLURM_NTASKS_PER_NODE", 1, world);
  if (auto v = get(env, "SLURM_TASKS_PER_NODE")) {
    int x = 0;
    std::from_chars(v->data(), v->data() + v->size(), x);
    if (x >= 1) return x;
  }
  return 1;
}

}  // namespace

LaunchInfo detect_launch(char** envp) {
  const Env env = read_env(envp);
  LaunchInfo l;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) l.host = host;
  constexpr int kMaxWorld = 1 << 24;
  if (get(env, "OMPI_COMM_WORLD_SIZE")) {
    l.launcher = "mpirun";
    l.mpi = true;
    l.world = integer(env, "OMPI_COMM_WORLD_SIZE", 1, kMaxWorld);
    l.rank = integer(env, "OMPI_COMM_WORLD_RANK", 0, l.world - 1);
    l.local_world = get(env, "OMPI_COMM_WORLD_LOCAL_SIZE")
                        ? integer(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, l.world)
                        : 1;
    l.local_rank = get(env, "OMPI_COMM_WORLD_LOCAL_RANK")
                       ? integer(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, l.local_world - 1)
                       : 0;
  } else if (get(env, "SLURM_PROCID") && get(env, "SLURM_NTASKS")) {
    l.launcher = "srun";
    l.mpi = true;  // srun starts MPI jobs through PMI/PMIx
    l.world = integer(env, "SLURM_NTASKS", 1, kMaxWorld);
    l.rank = integer(env, "SLURM_PROCID", 0, l.world - 1);
    l.local_world = slurm_tasks_per_node(env, l.world);
    l.local_rank = get(env, "SLURM_LOCALID") ? integer(env, "SLURM_LOCALID", 0, l.world - 1) : 0;
  } else if (get(env, "PMI_SIZE") && get(env, "PMI_RANK")) {
    l.launcher = "pmi";
    l.mpi = true;
    l.world = integer(env, "PMI_SIZE", 1, kMaxWorld);
    l.rank = integer(env, "PMI_RANK", 0, l.world - 1);
    l.local_world = get(env, "MPI_LOCALNRANKS") ? integer(env, "MPI_LOCALNRANKS", 1, l.world) : 1;
    l.local_rank =
        get(env, "MPI_LOCALRANKID") ? integer(env, "MPI_LOCALRANKID", 0, l.world - 1) : 0;
  } else if (get(env, "WORLD_SIZE") || get(env, "RANK")) {
    l.launcher = "torchrun";
    for (const char* required : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
      if (!get(env, required))
        throw InputError(Diagnostic{
            SourceLocation{"environment", 0, 0}, required,
            "torchrun-style launches set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (and "
            "LOCAL_RANK); this one is missing"});
    l.world = integer(env, "WORLD_SIZE", 1, kMaxWorld);
    l.rank = integer(env, "RANK", 0, l.world - 1);
    l.local_world = get(env, "LOCAL_WORLD_SIZE") ? integer(env, "LOCAL_WORLD_SIZE", 1, l.world) : 1;
    l.local_rank = get(env, "LOCAL_RANK") ? integer(env, "LOCAL_RANK", 0, l.world - 1) : 0;
    l.master_addr = *get(env, "MASTER_ADDR");
    if (l.master_addr.empty()) throw bad_variable("MASTER_ADDR", "", "a host name or address");
    l.master_port = integer(env, "MASTER_PORT", 1, 65535);
  } else {
    l.launcher = "none";
  }
  return l;
}

std::string describe(const LaunchInfo& l) {
  return "rank " + std::to_string(l.rank) + " of " + std::to_string(l.world) + " on " +
         (l.host.empty() ? std::string("?") : l.host) + " (" + l.launcher + ", local rank " +
         std::to_string(l.local_rank) + ")";
}

}  // namespace dtsim::real
