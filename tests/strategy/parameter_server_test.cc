// Parameter servers and asynchronous SGD against their closed forms (docs/models.md, "Parameter
// servers"; core/strategy/parameter_server.h, driver/relaxed_sync.h):
// - synchronous updates: a step is C + U + (G + Pw)·max(W/S, 1)/B (C: a worker's kernels, U: a
//   server's update, G and Pw: the gradient and parameter bytes, W workers, S servers, B one
//   NIC's usable rate): the servers' NICs limit until S = W, then the workers' do, on both
//   engines;
// - each server's load: W·G/S bytes in and W·Pw/S out per step, its NIC busy for those bytes / B;
// - asynchronous updates: equal workers miss W - 1 updates on average, and with one straggler the
//   rate is the sum of the workers' own rates where the servers keep up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/base/error.h"
#include "core/exec/compute_cost.h"
#include "core/scenario/scenario.h"
#include "core/strategy/model_state.h"
#include "core/strategy/parameter_server.h"
#include "driver/predict.h"
#include "driver/relaxed_sync.h"

namespace dtsim {
namespace {

constexpr int kWorkers = 16;

// GPT-3 1.3B data-parallel over 16 H100 (2 nodes, a NIC per GPU), bf16 with fp32 gradients.
std::string ps_yaml(const std::string& engine, int servers, const std::string& extra = "",
                    const std::string& stragglers = "[]") {
  return "cluster:\n"
         "  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  intra_node: nvswitch\n"
         "  network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8}\n"
         "model: {preset: gpt3-1.3b}\n"
         "parallelism: {data: auto}\n"
         "training:\n  global_batch_size: 64\n  micro_batch_size: 4\n  precision: bf16\n"
         "  overlap_grad_reduce: false\n  sync: parameter-server\n"
         "  parameter_server: {servers: " +
         std::to_string(servers) + extra +
         "}\n"
         "stragglers: " +
         stragglers +
         "\n"
         "simulate: {engine: " +
         engine + "}\n";
}

driver::Prediction predict_yaml(const std::string& yaml,
                                const std::vector<std::string>& overrides = {}) {
  return driver::predict(driver::load_text(yaml, "ps.yaml", overrides));
}

// The closed form's parts for one prediction.
struct Parts {
  double compute_s = 0;   // C: worker 0's kernels per step
  double update_s = 0;    // U: server 0's update kernels per step
  double exchange_s = 0;  // (G + Pw)/B: one worker's push and pull at its NIC
  double gradient_bytes = 0, parameter_bytes = 0;
  double nic_Bps = 0;
};
Parts parts_of(const driver::Prediction& p) {
  Parts parts;
  const auto& sc = p.scenario;
  const double params = p.results.parameters;
  parts.gradient_bytes = params * gradient_bytes_per_parameter(sc.training.grad_dtype);
  parts.parameter_bytes = params * weight_bytes_per_parameter(sc.training.precision);
  parts.nic_Bps = p.cluster.usable_nic_bandwidth().value();
  parts.exchange_s = (parts.gradient_bytes + parts.parameter_bytes) / parts.nic_Bps;
  const Program* worker = p.job.program_for(0);
  for (const auto& st : worker->streams)
    for (const Op& op : st.ops)
      if (const auto* c = std::get_if<ComputeOp>(&op.body))
        parts.compute_s += compute_time(*c, p.cluster.gpu).value();
  const Program* server = p.job.program_for(parameter_server_placement(sc).servers.front());
  for (const auto& st : server->streams)
    if (st.name == kServerUpdateStream)
      for (const Op& op : st.ops)
        if (const auto* c = std::get_if<ComputeOp>(&op.body))
          parts.update_s += compute_time(*c, p.cluster.gpu).value();
  return parts;
}

void expect_servers_limit_until_workers_do(const std::string& engine) {
  double previous_s = 0, at_crossover_s = 0;
  for (int servers : {1, 2, 4, 8, 16, 32}) {
    const auto p = predict_yaml(ps_yaml(engine, servers));
    const Parts parts = parts_of(p);
    const double server_nic_s =
        (parts.gradient_bytes + parts.parameter_bytes) * kWorkers / servers / parts.nic_Bps;
    const double expected_s =
        parts.compute_s + parts.update_s + std::max(server_nic_s, parts.exchange_s);
    const double step_s = p.results.step_time_s;
    printf("%s S=%2d: step %.4f s, closed form %.4f s (server NIC %.4f s, worker %.4f s)\n",
           engine.c_str(), servers, step_s, expected_s, server_nic_s, parts.exchange_s);
    EXPECT_NEAR(step_s, expected_s, 0.02 * expected_s) << engine << " S=" << servers;
    // Adding servers helps while their NICs are the limit (S < W), then not.
    if (servers > 1 && servers <= kWorkers) {
      EXPECT_LT(step_s, 0.99 * previous_s) << servers;
    }
    if (servers == kWorkers) at_crossover_s = step_s;
    if (servers > kWorkers) {
      EXPECT_NEAR(step_s, at_crossover_s, 0.02 * at_crossover_s);
    }
    previous_s = step_s;
    // Each server's load: W shards in and out per step, its NIC busy for their bytes.
    ASSERT_TRUE(p.results.parameter_server.has_value());
    const auto& ps = *p.results.parameter_server;
    ASSERT_EQ(ps.per_server.size(), static_cast<size_t>(servers));
    for (const ServerLoad& l : ps.per_server) {
      const double in = kWorkers * parts.gradient_bytes / servers;
      EXPECT_NEAR(l.bytes_in_per_step, in, 1e-6 * in);
      const double out = kWorkers * parts.parameter_bytes / servers;
      EXPECT_NEAR(l.bytes_out_per_step, out, 1e-6 * out);
      const double busy = in / parts.nic_Bps / step_s;
      EXPECT_NEAR(l.nic_in_busy_fraction, busy, 0.02 * busy) << servers;
      EXPECT_GE(l.node, 2);  // dedicated nodes follow the workers' two
    }
    EXPECT_NE(p.results.notes.front().find("training.sync parameter-server"), std::string::npos);
  }
}

TEST(ParameterServer, ServerNicLimitsUntilTheWorkersDoAnalytic) {
  expect_servers_limit_until_workers_do("analytic");
}

TEST(ParameterServer, ServerNicLimitsUntilTheWorkersDoSimGrid) {
  expect_servers_limit_until_workers_do("simgrid");
}

// Colocated servers: the worker that hosts a server keeps its own shard, so each server receives
// W - 1 shards; both engines agree.
TEST(ParameterServer, ColocatedServerKeepsItsOwnShard) {
  const auto a = predict_yaml(ps_yaml("analytic", 4, ", placement: colocated"));
  const auto s = predict_yaml(ps_yaml("simgrid", 4, ", placement: colocated"));
  const Parts parts = parts_of(a);
  ASSERT_TRUE(a.results.parameter_server.has_value());
  const auto& ps = *a.results.parameter_server;
  EXPECT_EQ(ps.placement, "colocated");
  for (const ServerLoad& l : ps.per_server) {
    const double in = (kWorkers - 1) * parts.gradient_bytes / 4;
    EXPECT_NEAR(l.bytes_in_per_step, in, 1e-6 * in);
    EXPECT_LT(l.node, 2);  // on the workers' nodes
  }
  EXPECT_EQ(a.cluster.nodes, 2);
  EXPECT_NEAR(s.results.step_time_s, a.results.step_time_s, 0.02 * a.results.step_time_s);
}

// The optimizer state moves to the servers: a worker holds none, each server its 1/S.
TEST(ParameterServer, WorkersHoldNoOptimizerState) {
  const auto p = predict_yaml(ps_yaml("analytic", 4));
  const Rank server = parameter_server_placement(p.scenario).servers[0];
  const auto optimizer = static_cast<size_t>(MemoryCategory::kOptimizer);
  bool saw_worker = false, saw_server = false;
  for (const RankMemory& m : p.trace.memory) {
    if (m.rank == 0) {
      saw_worker = true;
      EXPECT_EQ(m.at_peak[optimizer].value(), 0);
    }
    if (m.rank == server) {
      saw_server = true;
      EXPECT_GT(m.at_peak[optimizer].value(), 0);
    }
  }
  EXPECT_TRUE(saw_worker);
  EXPECT_TRUE(saw_server);
}

// Asynchronous updates, equal workers: each update misses the W - 1 others (Ho et al. 2013).
TEST(ParameterServer, AsyncStalenessOfEqualWorkersIsWorkersMinusOne) {
  for (int servers : {1, 4, 16, 32}) {
    const auto p = predict_yaml(ps_yaml("analytic", servers), {"training.sync=async"});
    ASSERT_TRUE(p.results.parameter_server.has_value());
    const auto& ps = *p.results.parameter_server;
    printf("async S=%d: mean staleness %.3f, %.4g updates/s\n", servers, ps.mean_staleness,
           ps.updates_per_s);
    EXPECT_NEAR(ps.mean_staleness, kWorkers - 1, 0.05 * (kWorkers - 1)) << servers;
    int64_t counted = 0;
    double sum = 0;
    for (size_t k = 0; k < ps.staleness_histogram.size(); ++k) {
      counted += ps.staleness_histogram[k];
      sum += static_cast<double>(k) * static_cast<double>(ps.staleness_histogram[k]);
    }
    EXPECT_GT(counted, 0);
    EXPECT_NEAR(sum / static_cast<double>(counted), ps.mean_staleness, 1e-9);
    EXPECT_EQ(ps.updates, "async");
    EXPECT_NEAR(p.results.step_time_s, kWorkers / ps.updates_per_s, 1e-9 * p.results.step_time_s);
  }
}

// One worker at slowdown 1.3: synchronous updates wait for it every step; asynchronous ones do
// not. Where the servers keep up (S = 2W), each worker cycles at its own pace, T_w = C_w + U1 +
// (G + Pw)/B (U1: one shard's update), and the job applies sum_w 1/T_w updates per second.
TEST(ParameterServer, AsyncWithAStragglerRunsAtTheWorkersOwnRates) {
  const std::string slow = "[{ranks: [3], slowdown: 1.3}]";
  const auto sync = predict_yaml(ps_yaml("analytic", 32, "", slow));
  const auto async = predict_yaml(ps_yaml("analytic", 32, "", slow), {"training.sync=async"});
  const Parts parts = parts_of(async);
  // One shard's update without the sum of W shards (what the model charges per push).
  double one_shard_update_s = 0;
  const Program* server =
      async.job.program_for(parameter_server_placement(async.scenario).servers[0]);
  for (const auto& st : server->streams)
    if (st.name == kServerUpdateStream)
      for (const Op& op : st.ops)
        if (const auto* c = std::get_if<ComputeOp>(&op.body))
          if (op.label.name != "ps.sum_gradient_shards")
            one_shard_update_s += compute_time(*c, async.cluster.gpu).value();
  double rate = 0;
  for (int w = 0; w < kWorkers; ++w)
    rate += 1 / ((w == 3 ? 1.3 : 1.0) * parts.compute_s + one_shard_update_s + parts.exchange_s);
  const auto& ps = *async.results.parameter_server;
  printf(
      "async with a straggler: %.4g updates/s, closed form %.4g; step %.4f s, synchronous %.4f s\n",
      ps.updates_per_s, rate, async.results.step_time_s, sync.results.step_time_s);
  EXPECT_NEAR(ps.updates_per_s, rate, 0.03 * rate);
  EXPECT_LT(async.results.step_time_s, sync.results.step_time_s);
  // The straggler's updates miss more than W - 1 others (the fast workers update more often
  // meanwhile); over all updates each one is missed once by every other worker, so the mean
  // stays W - 1.
  EXPECT_GT(ps.staleness_histogram.size(), static_cast<size_t>(kWorkers));
  EXPECT_NEAR(ps.mean_staleness, kWorkers - 1, 0.05 * (kWorkers - 1));
}

// The discrete-event model alone: a server-bound system applies one update per push time.
TEST(ParameterServer, AsyncModelIsServerBoundWhereTheServerNicIs) {
  driver::AsyncInputs in;
  in.workers.assign(8, driver::AsyncWorker{0.01});
  in.servers = 1;
  in.push_shard_s = 0.01;  // 8 pushes of 10 ms need 80 ms; a worker's cycle is 30 ms
  in.pull_shard_s = 0.01;
  in.update_s = 0;
  const auto out = driver::simulate_async_parameter_server(in);
  EXPECT_NEAR(out.updates_per_s, 100, 1);
  EXPECT_NEAR(out.mean_staleness, 7, 0.05 * 7);
}

TEST(ParameterServer, KeysOutsideParameterServerModesAreErrors) {
  const std::string yaml = ps_yaml("analytic", 4);
  EXPECT_THROW(
      driver::load_text(yaml, "ps.yaml",
                        {"training.sync=synchronous", "training.parameter_server.servers=4"}),
      InputError);
}

}  // namespace
}  // namespace dtsim
