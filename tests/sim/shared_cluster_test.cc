// Two jobs on one cluster (background.scenario, driver/shared_cluster.h): both simulated together
// on one SimGrid platform, each job's results from its own spans.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "driver/predict.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::testing {
namespace {

// A data-parallel GPT-3 1.3B job (DP 16 on 2 nodes of 8 H100, gradients reduced after the
// backward pass, so the all-reduce is exposed) on a fat-tree of 2 nodes per leaf whose uplinks
// are 2:1 oversubscribed: a leaf's uplink carries one node's NIC bandwidth.
std::string job(const std::string& name, const std::string& background) {
  return "name: " + name +
         "\ncluster:\n  gpu: H100-SXM\n  nodes: 2\n  gpus_per_node: 8\n  network: {topology: "
         "fat-tree, nodes_per_leaf: 2, oversubscription: 2, nics_per_node: 8, nic_bandwidth: "
         "200Gbps, latency: 2us, protocol_efficiency: 1}\nmodel:\n  preset: gpt3-1.3b\n"
         "training:\n  global_batch_size: 16\n  micro_batch_size: 1\n  overlap_grad_reduce: "
         "false\n" +
         background;
}

class SharedCluster : public ::testing::Test {
 protected:
  void SetUp() override { write("other.yaml", job("other", "")); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_.file(name);
    std::ofstream(path) << text;
    return path;
  }
  ScratchDir dir_{"shared-cluster"};  // removed with the fixture
};

TEST_F(SharedCluster, ADataParallelJobSharingItsLeafUplinksSlowsByTheClosedForm) {
  // Interleaved, leaf k holds node k of each job, so each job's ring crosses both leaf uplinks,
  // and each uplink (one node's NIC bandwidth) carries both jobs' rings at once: each gets half,
  // exactly as if it ran alone on a non-blocking network with half of every NIC
  // (background.link_fraction 0.5, whose closed form the analytic engine computes).
  const std::string path = write(
      "this.yaml", job("this", "background: {scenario: other.yaml, placement: interleaved}\n"));
  const driver::Prediction shared = driver::predict(driver::load(path), {});
  ASSERT_TRUE(shared.results.background_job.has_value());
  const BackgroundJob& other = *shared.results.background_job;
  EXPECT_EQ(other.gpus, 16);
  EXPECT_EQ(other.placement, "interleaved");

  const std::string alone_path = write("alone.yaml", job("alone", ""));
  const double half =
      driver::predict(
          driver::load(alone_path, {"simulate.engine=analytic", "background.link_fraction=0.5"}),
          {})
          .results.step_time_s;
  const double full = driver::predict(driver::load(alone_path, {"simulate.engine=analytic"}), {})
                          .results.step_time_s;
  ASSERT_GT(half / full, 1.1);  // the exposed all-reduce is a visible part of the step
  EXPECT_NEAR(shared.results.step_time_s / half, 1.0, 0.01);
  EXPECT_NEAR(other.step_time_s / half, 1.0, 0.01);  // the same job, the same share
  EXPECT_NEAR(other.this_job_alone_step_time_s / full, 1.0, 0.01);
  EXPECT_NEAR(other.this_job_slowdown, half / full, 0.01 * half / full);

  // After this job's nodes, the other job has leaves of its own: neither slows.
  const std::string apart =
      write("apart.yaml", job("apart", "background: {scenario: other.yaml, placement: after}\n"));
  const driver::Prediction separate = driver::predict(driver::load(apart), {});
  EXPECT_NEAR(separate.results.background_job->this_job_slowdown, 1.0, 0.001);
  EXPECT_NEAR(separate.results.background_job->step_time_s / full, 1.0, 0.01);
}

TEST_F(SharedCluster, TheAnalyticEngineRefusesASecondJob) {
  const std::string path =
      write("this.yaml", job("this",
                             "background: {scenario: other.yaml}\nsimulate: {engine: "
                             "analytic}\n"));
  try {
    driver::predict(driver::load(path), {});
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("analytic engine"), std::string::npos) << e.what();
  }
}

TEST_F(SharedCluster, DifferentHardwareIsRefused) {
  std::string text = job("faster", "");
  text.replace(text.find("200Gbps"), 7, "400Gbps");
  write("faster.yaml", text);
  const std::string path = write("this.yaml", job("this", "background: {scenario: faster.yaml}\n"));
  try {
    driver::predict(driver::load(path), {});
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.network.nic_bandwidth"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dtsim::testing
