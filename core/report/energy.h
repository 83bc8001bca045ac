// Power and energy of a training step, and the whole run's time, GPU-hours, cost and energy.
//
// The power model (docs/models.md, "Power and energy"):
// - A GPU draws its idle power whenever it is on, and between idle and its maximum board power in
//   proportion to the utilisation of the unit that bounds the kernel it runs: for a compute op,
//   the larger of its FLOP rate over the GPU's peak for its dtype and its memory traffic over the
//   GPU's memory bandwidth, in [0, 1]. Dynamic power linear in the activity of the busy unit is
//   the first-order model of measured GPU power models (AccelWattch, Kandiah et al., MICRO 2021).
//   Utilisation x duration is the op's roofline time (its work at the unit's peak), whatever the
//   engine made its duration, so a step's active time is the sum of its compute ops' roofline
//   times: the same from a simulation and from the plan's search, which times no spans.
// - Time in which a GPU runs no compute op of its own (exposed communication, pipeline bubbles)
//   is charged at idle power: NCCL's kernels hold a few SMs and their traffic is not charged, an
//   under-estimate the output states.
// - Each node draws its host's power beyond the GPUs (CPUs and NICs, cluster.node_power), each
//   switch port of the network its share of the switch (cluster.network.switch_port_power),
//   all of it for the whole step; the facility multiplies everything by its PUE.
// The figures come from the catalog (core/hardware/catalog.cc cites each one) unless the scenario
// sets them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/units.h"
#include "core/hardware/catalog.h"
#include "core/hardware/cluster_config.h"
#include "core/ir/program.h"

namespace dtsim {

// What the power model needs of the cluster, resolved (catalog figures with the scenario's on top).
struct PowerInputs {
  const GpuSpec* gpu = nullptr;  // peaks and memory bandwidth, for the utilisation
  Watts gpu_idle{0}, gpu_max{0};
  Watts node_power{0};         // per node, beyond its GPUs
  Watts switch_port_power{0};  // per switch port
  double switch_ports = 0;     // the network's switch ports (NetworkTopology::switch_ports)
  double pue = 1;              // facility power over IT power
  int gpus = 1, nodes = 1;
};

// The cluster's resolved figures (catalog, scenario and profile), and its switch ports.
PowerInputs power_inputs(const ClusterConfig& cluster);

// One step's power and energy. Not modelled (and every figure 0) when the GPU has no power figures.
struct StepEnergy {
  bool modelled = false;
  std::string not_modelled;          // why not, for people
  double gpu_utilisation = 0;        // time-weighted over the step, mean over the simulated ranks
  double gpu_power_w = 0;            // mean per GPU over the step
  double node_power_w = 0;           // per node, beyond its GPUs
  double network_power_w = 0;        // every switch port
  double it_power_w = 0;             // GPUs + nodes + network
  double facility_power_w = 0;       // it_power_w x PUE
  double idle_facility_power_w = 0;  // the same with every GPU idle (a stall, a restart)
  double pue = 1;
  double energy_per_step_j = 0;  // facility_power_w x step time
};

// What the power model leaves out, stated beside every energy figure.
inline constexpr const char* kEnergyApproximation =
    "time a GPU runs none of its own compute kernels (exposed communication, pipeline bubbles) "
    "is charged at its idle power, and the memory, fans and NVSwitches of each node and the "
    "switches' ASICs are not charged: a lower bound on the draw";

// The time `op` keeps the unit that bounds it busy at that unit's peak: the larger of its FLOPs
// over the GPU's peak for its dtype and its bytes over the memory bandwidth, on the busiest rank
// (times the op's load factor, as the cost model charges it).
Seconds roofline_time(const ComputeOp& op, const GpuSpec& gpu);
// The sum of roofline_time over a Program's compute ops, segments included: one step.
Seconds active_time(const Program& p, const GpuSpec& gpu);

// The step's energy over the simulated ranks, each standing for an equal share of the GPUs (the
// folding of core/ir/program.h keeps that true), for a step of `step_time`.
StepEnergy step_energy(const Job& job, Seconds step_time, const PowerInputs& in);

// A whole run: its steps, how long they take end to end (with failures and checkpoints when the
// scenario models them), and what the run costs.
struct RunInputs {
  int64_t steps = 1;
  double time_to_train_s = 0;
  double busy_s = 0;  // time spent running steps (useful, redone, elastic); the rest is stalls
  int gpus = 1;
  std::optional<Money> price_per_gpu_hour;
  std::optional<double> carbon_g_per_kwh;  // grid carbon intensity, g CO2e per kWh
};

struct RunTotals {
  int64_t steps = 1;
  double time_to_train_s = 0;
  double gpu_hours = 0;
  std::optional<Money> price_per_gpu_hour;
  std::optional<double> cost;  // in price_per_gpu_hour's currency
  bool energy_modelled = false;
  double energy_j = 0;  // facility energy over the whole run
  double average_power_w = 0;
  std::optional<double> carbon_g_per_kwh;
  std::optional<double> emissions_kg;  // kg CO2e
};

RunTotals run_totals(const RunInputs& in, const StepEnergy& step, double step_time_s);

}  // namespace dtsim
