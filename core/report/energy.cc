#include "core/report/energy.h"

#include <algorithm>
#include <unordered_map>

#include "core/hardware/cluster.h"
#include "core/hardware/network_topology.h"

namespace dtsim {

PowerInputs power_inputs(const ClusterConfig& c) {
  PowerInputs in;
  in.gpu = &c.gpu;
  in.gpu_idle = c.gpu.idle_power;
  in.gpu_max = c.gpu.max_power;
  in.node_power = c.cost.node_power;
  in.switch_port_power = c.network.switch_port_power;
  if (c.nodes > 1) in.switch_ports = network_topology(c).switch_ports(Cluster(c));
  in.pue = c.cost.pue;
  in.gpus = c.total_gpus();
  in.nodes = c.nodes;
  return in;
}

Seconds roofline_time(const ComputeOp& op, const GpuSpec& gpu) {
  double t = 0;
  if (const double peak = gpu.peak_for(op.dtype).value(); peak > 0)
    t = std::max(t, op.flops.value() / peak);
  if (const double bw = gpu.memory_bandwidth.value(); bw > 0)
    t = std::max(t, op.bytes.value() / bw);
  return Seconds(t * op.load_factor);
}

Seconds active_time(const Program& p, const GpuSpec& gpu) {
  auto of = [&](const Op& op) {
    const auto* c = std::get_if<ComputeOp>(&op.body);
    return c ? roofline_time(*c, gpu) : Seconds(0);
  };
  // A segment's ops are shared by every micro-batch that runs them: summed once each.
  std::unordered_map<const std::vector<Op>*, Seconds> segments;
  Seconds t{0};
  for (const Stream& s : p.streams)
    for (const Op& op : s.ops) {
      const auto* seg = std::get_if<SegmentOp>(&op.body);
      if (seg == nullptr) {
        t += of(op);
        continue;
      }
      auto [it, fresh] = segments.try_emplace(seg->ops.get(), Seconds(0));
      if (fresh)
        for (const Op& inner : *seg->ops) it->second += of(inner);
      t += it->second;
    }
  return t;
}

StepEnergy step_energy(const Job& job, Seconds step_time, const PowerInputs& in) {
  StepEnergy e;
  e.pue = in.pue;
  if (in.gpu == nullptr || in.gpu_max.value() <= 0) {
    e.not_modelled = "the GPU " + std::string(in.gpu ? "'" + in.gpu->name + "' " : "") +
                     "has no power figures in the catalog; set cluster.gpu.max_power and "
                     "cluster.gpu.idle_power to model energy";
    return e;
  }
  const double step_s = step_time.value();
  if (step_s <= 0 || job.programs.empty()) {
    e.not_modelled = "the step takes no time";
    return e;
  }
  // A rank's utilisation: its active time over the step, at most 1 (a kernel's duration is never
  // below its roofline time, so only overlapping compute streams could reach past 1).
  double utilisation = 0;
  for (const Program& p : job.programs)
    utilisation += std::min(1.0, active_time(p, *in.gpu).value() / step_s);
  utilisation /= static_cast<double>(job.programs.size());
  e.modelled = true;
  e.gpu_utilisation = utilisation;
  const double idle = in.gpu_idle.value(), max = std::max(in.gpu_max.value(), idle);
  e.gpu_power_w = idle + (max - idle) * utilisation;
  e.node_power_w = in.node_power.value();
  e.network_power_w = in.switch_port_power.value() * in.switch_ports;
  const double host = e.node_power_w * in.nodes + e.network_power_w;
  e.it_power_w = e.gpu_power_w * in.gpus + host;
  e.facility_power_w = e.it_power_w * in.pue;
  e.idle_facility_power_w = (idle * in.gpus + host) * in.pue;
  e.energy_per_step_j = e.facility_power_w * step_s;
  return e;
}

RunTotals run_totals(const RunInputs& in, const StepEnergy& step, double step_time_s) {
  RunTotals t;
  t.steps = in.steps;
  t.time_to_train_s = in.time_to_train_s;
  t.gpu_hours = static_cast<double>(in.gpus) * in.time_to_train_s / 3600.0;
  t.price_per_gpu_hour = in.price_per_gpu_hour;
  if (in.price_per_gpu_hour) t.cost = t.gpu_hours * in.price_per_gpu_hour->amount;
  t.carbon_g_per_kwh = in.carbon_g_per_kwh;
  if (!step.modelled || step_time_s <= 0) return t;
  t.energy_modelled = true;
  // Steps run at the step's power; the rest of the run (checkpoint stalls, detection, restarts,
  // waiting for repairs) with every GPU idle.
  const double busy = std::min(in.busy_s, in.time_to_train_s);
  t.energy_j = step.energy_per_step_j * (busy / step_time_s) +
               step.idle_facility_power_w * (in.time_to_train_s - busy);
  t.average_power_w = in.time_to_train_s > 0 ? t.energy_j / in.time_to_train_s : 0;
  if (in.carbon_g_per_kwh) t.emissions_kg = t.energy_j / 3.6e6 * *in.carbon_g_per_kwh / 1e3;
  return t;
}

}  // namespace dtsim
