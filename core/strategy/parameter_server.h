// Sharded parameter servers (training.sync parameter-server and async; docs/models.md,
// "Parameter servers"): the synchronous data-parallel step with its gradient all-reduce and
// optimizer step replaced by point-to-point pushes of gradient shards to the servers, the update
// on each server, and pulls of the updated parameter shards (Li et al., "Scaling Distributed
// Machine Learning with the Parameter Server", OSDI 2014; Dean et al. 2012).
//
// Contract:
// - The scenario is pure data parallelism with the gradient reduction after backward
//   (check_training_modes refuses the rest), so W = parallelism.data workers are ranks 0..W-1.
// - S servers each own 1/S of every gradient and parameter (ps-lite's range partition of the
//   keys). Placement dedicated: server j runs on a node of its own appended to the cluster (the
//   cluster's node kind, its first NIC and device), rank (nodes + j)·gpus_per_node. Placement
//   colocated: server j shares worker rank floor(j·W/S)'s device and NIC; that worker's own
//   shard stays local.
// - Traffic is in the Program, so both engines and the network model see it: worker w pushes
//   its shards in rounds k = 0..S-1 to server (w + k) mod S, one at a time on its gradient
//   stream (its NIC sends one shard at a time); each server receives its pushes one at a time in
//   the order (round, worker), so its NIC carries them back to back. The pulls mirror the pushes.
//   Each (worker, server) pair exchanges one message per direction per step and every wait goes
//   from an earlier (round, worker) to a later one, so the exchange cannot deadlock. Push time
//   at a server: W·G/(S·B), at a worker G/B (G: gradient bytes, B: one NIC's usable rate), so a
//   step without contention elsewhere is C + (G + Pw)·max(W/S, 1)/B + U (Pw: parameter bytes,
//   C: the worker's kernels, U: the server's update).
// - A server sums the W pushed shards (read W shards, write one) and runs the optimizer kernels
//   the workers ran under synchronous training, over its 1/S of the parameters; it holds that
//   share of the optimizer state, which the workers no longer hold.
// - The workers' Programs keep their forward and backward unchanged; the next step's kernels
//   wait for the last pulled shard.
#pragma once

#include <vector>

#include "core/hardware/cluster_config.h"
#include "core/ir/program.h"
#include "core/config/config.h"

namespace dtsim {

// Send/receive tags of the pushes and the pulls (the pipeline uses 0 and 1).
inline constexpr int kParameterPushTag = 2, kParameterPullTag = 3;

struct ParameterServerPlacement {
  int workers = 0;            // ranks 0..workers-1
  std::vector<Rank> servers;  // the rank whose device and NIC server j uses
  bool dedicated = true;
  int extra_nodes = 0;  // nodes appended to the cluster for dedicated servers
};

bool uses_parameter_servers(const TrainingConfig& t);
ParameterServerPlacement parameter_server_placement(const Scenario& scenario);
// The cluster the Job runs on: the scenario's, with one node per dedicated server appended.
ClusterConfig parameter_server_cluster(const Scenario& scenario);
// The synchronous Job (unfolded: every worker's Program) rewritten as above.
Job parameter_server_job(Job synchronous, const Scenario& scenario);

// Stream names of a server's Program (its pushes in, its update, its pulls out).
inline constexpr const char* kServerPushStream = "ps_push_in";
inline constexpr const char* kServerUpdateStream = "ps_update";
inline constexpr const char* kServerPullStream = "ps_pull_out";

}  // namespace dtsim
