#include "driver/measurement_conditions.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/units.h"

namespace dtsim::driver {

HostSample sample_host() {
  HostSample s;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  s.cpus = cpus > 0 ? static_cast<int>(cpus) : 0;
  if (std::ifstream load("/proc/loadavg"); load) {
    double v = -1;
    if (load >> v && v >= 0) s.load_1m = v;
  }
  if (std::ifstream stat("/proc/stat"); stat) {
    std::string line;
    if (std::getline(stat, line) && line.rfind("cpu ", 0) == 0) {
      std::istringstream fields(line.substr(4));
      std::vector<int64_t> v;
      for (int64_t x; fields >> x;) v.push_back(x);
      // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is counted
      // in user already, so the total stops at steal.
      if (v.size() >= 8) {
        s.cpu_total = 0;
        for (size_t i = 0; i < 8; ++i) s.cpu_total += v[i];
        s.cpu_steal = v[7];
      }
    }
  }
  return s;
}

namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

MeasurementConditions assess(const HostSample& before, const HostSample& after,
                             const Trace& trace) {
  MeasurementConditions m;
  m.cpus = before.cpus;
  m.load_before = before.load_1m;
  m.load_after = after.load_1m;
  if (before.cpu_total >= 0 && after.cpu_total > before.cpu_total)
    m.steal_fraction = std::clamp(static_cast<double>(after.cpu_steal - before.cpu_steal) /
                                      static_cast<double>(after.cpu_total - before.cpu_total),
                                  0.0, 1.0);
  // Each compute op's time in every timed step, by (rank, stream, op).
  std::map<std::tuple<Rank, StreamId, size_t>, std::vector<double>> times;
  for (const Span& s : trace.spans)
    if (s.kind == SpanKind::kCompute)
      times[{s.rank, s.stream, s.op_index}].push_back((s.end - s.start).value());
  std::vector<double> spreads;
  for (const auto& [op, t] : times) {
    if (t.size() < 2) continue;
    const auto [fastest, slowest] = std::minmax_element(t.begin(), t.end());
    if (*fastest < kMinOpSeconds) continue;
    spreads.push_back((*slowest - *fastest) / *fastest);
  }
  m.compute_ops_compared = static_cast<int>(spreads.size());
  m.spread_median = quantile(spreads, 0.5);
  m.spread_p90 = quantile(spreads, 0.9);

  std::vector<std::string> why;
  if (m.compute_ops_compared > 0 && m.spread_p90 > kDisturbedSpread)
    why.push_back("the same compute op's time varied by up to " +
                  format_number("%.0f %%", 100 * m.spread_p90) + " between steps (p90)");
  if (m.steal_fraction > kDisturbedSteal)
    why.push_back("the hypervisor took " + format_number("%.0f %%", 100 * m.steal_fraction) +
                  " of the CPU time");
  if (m.cpus > 0 && m.load_before > m.cpus)
    why.push_back("the host's load before the run was " + format_number("%.1f", m.load_before) +
                  " on " + std::to_string(m.cpus) + " CPUs");
  m.disturbed = !why.empty();

  std::string figures;
  figures += m.compute_ops_compared > 0
                 ? "compute ops varied by " + format_number("%.1f %%", 100 * m.spread_median) +
                       " (median) and " + format_number("%.1f %%", 100 * m.spread_p90) +
                       " (p90) between steps over " + std::to_string(m.compute_ops_compared) +
                       " ops"
                 : "no step-to-step spread measured (it needs two or more timed steps: "
                   "--iterations 2)";
  if (m.load_before >= 0)
    figures += "; host load " + format_number("%.2f", m.load_before) + " before, " +
               format_number("%.2f", m.load_after) + " after, on " + std::to_string(m.cpus) +
               " CPUs";
  if (m.steal_fraction >= 0)
    figures += "; steal " + format_number("%.1f %%", 100 * m.steal_fraction);
  if (m.disturbed) {
    std::string reasons;
    for (size_t i = 0; i < why.size(); ++i) reasons += (i ? "; " : "") + why[i];
    m.summary = reasons + " (" + figures +
                "). A prediction compared with this measurement can be off by that much for "
                "reasons outside the model; measure again on a quiet machine";
  } else {
    m.summary = figures;
  }
  return m;
}

}  // namespace dtsim::driver
