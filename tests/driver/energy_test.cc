// Power, energy, GPU-hours and cost (core/report/energy.h): the closed forms on hand-built spans,
// and the same figures through the driver on a scenario, with and without failures.
#include <gtest/gtest.h>

#include <cmath>

#include "core/hardware/cluster.h"
#include "core/hardware/network_topology.h"
#include "core/report/energy.h"
#include "core/report/report.h"
#include "core/scenario/scenario.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

GpuSpec test_gpu() {
  GpuSpec g;
  g.name = "test-gpu";
  g.peak[DType::kBf16] = FlopsPerSecond(100e12);
  g.memory_bandwidth = BytesPerSecond(1e12);
  return g;
}

// One rank with one compute op, and a zero-work op after it.
Job one_op(ComputeOp op) {
  Job job;
  Program p;
  p.rank = 0;
  const StreamId s = p.add_stream("compute");
  p.append(s, op, Label{"k", 0, 0, Phase::kForward});
  p.append(s, ComputeOp{KernelKind::kElementwise, Flops(0), Bytes(0), DType::kBf16},
           Label{"end", 0, 0, Phase::kForward});
  job.programs.push_back(std::move(p));
  return job;
}

PowerInputs inputs(const GpuSpec& gpu) {
  PowerInputs in;
  in.gpu = &gpu;
  in.gpu_idle = Watts(100);
  in.gpu_max = Watts(700);
  in.node_power = Watts(1000);
  in.switch_port_power = Watts(9);
  in.switch_ports = 48;
  in.pue = 1.2;
  in.gpus = 16;
  in.nodes = 2;
  return in;
}

TEST(Energy, AKernelsRooflineTimeIsItsBoundUnitsWorkAtPeak) {
  const GpuSpec gpu = test_gpu();
  // 50 TFLOP on a 100 TFLOP/s GPU: 0.5 s; its 0.1 TB of traffic takes 0.1 s of a 1 TB/s memory.
  const ComputeOp op{KernelKind::kGemm, Flops(50e12), Bytes(0.1e12), DType::kBf16};
  EXPECT_DOUBLE_EQ(roofline_time(op, gpu).value(), 0.5);
  // Memory-bound: 0.8 TB.
  const ComputeOp mem{KernelKind::kElementwise, Flops(1e12), Bytes(0.8e12), DType::kBf16};
  EXPECT_DOUBLE_EQ(roofline_time(mem, gpu).value(), 0.8);
  // The busiest rank's share, as the cost model charges it.
  ComputeOp busiest = op;
  busiest.load_factor = 1.5;
  EXPECT_DOUBLE_EQ(roofline_time(busiest, gpu).value(), 0.75);
}

TEST(Energy, StepEnergyIsTheClosedForm) {
  const GpuSpec gpu = test_gpu();
  // 0.5 s of work at peak in a 2 s step: 0.25 of the step at full activity.
  const Job job = one_op(ComputeOp{KernelKind::kGemm, Flops(50e12), Bytes(0), DType::kBf16});
  const PowerInputs in = inputs(gpu);
  const StepEnergy e = step_energy(job, Seconds(2), in);
  ASSERT_TRUE(e.modelled);
  EXPECT_DOUBLE_EQ(e.gpu_utilisation, 0.25);
  const double gpu_w = 100 + (700 - 100) * 0.25;  // 250 W
  EXPECT_DOUBLE_EQ(e.gpu_power_w, gpu_w);
  const double it = gpu_w * 16 + 1000 * 2 + 9 * 48;
  EXPECT_DOUBLE_EQ(e.it_power_w, it);
  EXPECT_DOUBLE_EQ(e.facility_power_w, it * 1.2);
  EXPECT_DOUBLE_EQ(e.energy_per_step_j, it * 1.2 * 2);
  EXPECT_DOUBLE_EQ(e.idle_facility_power_w, (100 * 16 + 1000 * 2 + 9 * 48) * 1.2);
}

TEST(Energy, WithoutPowerFiguresEnergyIsNotModelledAndSaysWhy) {
  const GpuSpec gpu = test_gpu();
  const Job job = one_op(ComputeOp{KernelKind::kGemm, Flops(50e12), Bytes(0), DType::kBf16});
  PowerInputs in = inputs(gpu);
  in.gpu_max = Watts(0);
  const StepEnergy e = step_energy(job, Seconds(2), in);
  EXPECT_FALSE(e.modelled);
  EXPECT_NE(e.not_modelled.find("cluster.gpu.max_power"), std::string::npos);
  EXPECT_EQ(e.energy_per_step_j, 0);
}

TEST(Energy, RunTotalsAreGpuHoursTimesPriceAndStallsRunIdle) {
  StepEnergy step;
  step.modelled = true;
  step.energy_per_step_j = 1000;  // at 10 s per step: 100 W
  step.idle_facility_power_w = 40;
  RunInputs in;
  in.steps = 100;
  in.time_to_train_s = 1200;  // 1000 s of steps, 200 s of stalls
  in.busy_s = 1000;
  in.gpus = 64;
  in.price_per_gpu_hour = Money{2.5, "USD"};
  in.carbon_g_per_kwh = 400;
  const RunTotals t = run_totals(in, step, 10);
  EXPECT_DOUBLE_EQ(t.gpu_hours, 64 * 1200 / 3600.0);
  ASSERT_TRUE(t.cost);
  EXPECT_DOUBLE_EQ(*t.cost, t.gpu_hours * 2.5);
  EXPECT_DOUBLE_EQ(t.energy_j, 100 * 1000 + 40 * 200);
  EXPECT_DOUBLE_EQ(t.average_power_w, t.energy_j / 1200);
  ASSERT_TRUE(t.emissions_kg);
  EXPECT_DOUBLE_EQ(*t.emissions_kg, t.energy_j / 3.6e6 * 400 / 1e3);
}

TEST(Energy, SwitchPortsFollowTheTopology) {
  ClusterConfig c;
  c.gpu = test_gpu();
  c.nodes = 4;
  c.gpus_per_node = 8;
  c.network.nics_per_node = 8;
  c.network.levels = 2;
  c.network.topology = Topology::kFatTree;
  // Two levels, non-blocking: a leaf port, a leaf uplink and a spine port per NIC.
  EXPECT_DOUBLE_EQ(network_topology(c).switch_ports(Cluster(c)), 32 * 3);
  c.network.oversubscription = 2;
  EXPECT_DOUBLE_EQ(network_topology(c).switch_ports(Cluster(c)), 32 * 2);
  c.network.oversubscription = 1;
  c.network.topology = Topology::kRailOnly;
  EXPECT_DOUBLE_EQ(network_topology(c).switch_ports(Cluster(c)), 32);
  c.nodes = 1;
  c.network.topology = Topology::kFatTree;
  EXPECT_DOUBLE_EQ(network_topology(c).switch_ports(Cluster(c)), 0);
}

constexpr const char* kRun = R"(
name: energy
cluster: {gpu: H100-SXM, nodes: 2, gpus_per_node: 8, network: {preset: ib-ndr, nics_per_node: 8}}
model: {preset: gpt3-125m}
training: {global_batch_size: 64, micro_batch_size: 4, precision: bf16, steps: 500}
simulate: {engine: analytic}
)";

TEST(Energy, ThroughTheDriverTheRunIsStepsTimesTheStepAndCostsItsGpuHours) {
  const Scenario s = load_scenario_text(kRun, "energy.yaml",
                                        {{"cluster.price_per_gpu_hour=3USD"}, {"cluster.pue=1.1"}});
  const driver::Prediction p = driver::predict(s);
  const Results& r = p.results;
  ASSERT_TRUE(r.energy.modelled);
  ASSERT_TRUE(r.run);
  EXPECT_EQ(r.run->steps, 500);
  // No failures, no checkpoints: the run is its steps.
  EXPECT_NEAR(r.run->time_to_train_s, 500 * r.step_time_s, 1e-9 * 500 * r.step_time_s);
  EXPECT_DOUBLE_EQ(r.run->gpu_hours, 16 * r.run->time_to_train_s / 3600);
  EXPECT_DOUBLE_EQ(*r.run->cost, r.run->gpu_hours * 3);
  EXPECT_NEAR(r.run->energy_j, 500 * r.energy.energy_per_step_j, 1e-9 * r.run->energy_j);
  // The catalog's H100 figures: 700 W maximum, the node's two 350 W CPUs.
  EXPECT_GT(r.energy.gpu_power_w, 0.19 * 700);
  EXPECT_LT(r.energy.gpu_power_w, 700);
  EXPECT_DOUBLE_EQ(r.energy.node_power_w, 700);
  EXPECT_DOUBLE_EQ(r.energy.pue, 1.1);
  // And in the JSON, under the names sweeps and scripts read.
  const auto j = results_to_json(r);
  EXPECT_DOUBLE_EQ(j.at("run").at("gpu_hours").get<double>(), r.run->gpu_hours);
  EXPECT_EQ(j.at("run").at("currency").get<std::string>(), "USD");
  EXPECT_TRUE(j.at("energy").at("modelled").get<bool>());
  EXPECT_NE(render_summary(r).find("GPU-hours"), std::string::npos);
}

TEST(Energy, WithFailuresTheTimeToTrainIsTheFailureModels) {
  const Scenario s = load_scenario_text(
      kRun, "energy.yaml",
      {{"failures.gpu_mtbf=2h"}, {"checkpoint.interval=10min"}, {"training.steps=20000"}});
  const driver::Prediction p = driver::predict(s);
  const Results& r = p.results;
  ASSERT_TRUE(r.reliability);
  ASSERT_TRUE(r.run);
  EXPECT_DOUBLE_EQ(r.run->time_to_train_s, r.reliability->outcome.time_to_train.value());
  EXPECT_GT(r.run->time_to_train_s, 20000 * r.step_time_s);  // failures and checkpoints cost
  // Steps run at the step's power, the stalls with the GPUs idle: between the two bounds.
  EXPECT_LT(r.run->energy_j, r.energy.facility_power_w * r.run->time_to_train_s);
  EXPECT_GT(r.run->energy_j, r.energy.idle_facility_power_w * r.run->time_to_train_s);
}

TEST(Energy, PricesAndPowersParseWithTheirUnits) {
  const auto price = parse_money("2.49 USD");
  ASSERT_TRUE(price);
  EXPECT_DOUBLE_EQ(price.value->amount, 2.49);
  EXPECT_EQ(price.value->currency, "USD");
  const auto budget = parse_money("2MUSD");
  ASSERT_TRUE(budget);
  EXPECT_DOUBLE_EQ(budget.value->amount, 2e6);
  EXPECT_FALSE(parse_money("2.49"));      // no currency
  EXPECT_FALSE(parse_money("0 USD"));     // not positive
  EXPECT_FALSE(parse_money("-1 USD"));    // negative
  EXPECT_FALSE(parse_money("2.49 usd"));  // not a code
  const auto power = parse_power("10.2kW");
  ASSERT_TRUE(power);
  EXPECT_DOUBLE_EQ(power.value->value(), 10200);
  EXPECT_FALSE(parse_power("700"));
  EXPECT_DOUBLE_EQ(parse_duration("30d").value->value(), 30 * 86400.0);
}

}  // namespace
}  // namespace dtsim
