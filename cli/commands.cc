#include "cli/commands.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/base/error.h"
#include "core/hardware/catalog_markdown.h"
#include "core/report/report.h"
#include "core/scenario/reference.h"
#include "driver/catalog.h"
#include "driver/collective_benchmark.h"
#include "driver/predict.h"
#include "driver/validate.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::cli {
namespace {

// Opens an output file before any work is done, so a bad path costs nothing.
std::ofstream open_output(const std::string& path, const std::string& flag) {
  std::ofstream f(path, std::ios::trunc);
  if (!f)
    throw InputError(Diagnostic{SourceLocation{}, flag,
                                "cannot write '" + path + "' (does its directory exist?)"});
  return f;
}

}  // namespace

int run_simulate(const SimulateOptions& o, std::ostream& out) {
  auto overrides = o.overrides;
  if (!o.engine.empty()) overrides.push_back("simulate.engine=" + o.engine);
  Scenario sc = driver::load(o.scenario, overrides);
  std::ofstream result_file, trace_file;
  if (!o.output.empty()) result_file = open_output(o.output, "--output");
  if (!o.trace.empty()) trace_file = open_output(o.trace, "--trace");

  driver::Prediction p = driver::predict(std::move(sc));
  nlohmann::json j = results_to_json(p.results);
  if (o.json)
    out << j.dump(2) << "\n";
  else
    out << render_summary(p.results);
  if (!p.results.fits && !o.json)
    out << "\nwarning: the peak memory exceeds the GPU's capacity; run dtsim validate for the "
           "fix.\n";
  if (result_file.is_open()) result_file << j.dump(2) << "\n";
  if (trace_file.is_open())
    trace_file << chrome_trace(p.trace, p.job, p.cluster, p.model).dump() << "\n";
  if ((result_file.is_open() && !result_file) || (trace_file.is_open() && !trace_file))
    throw RuntimeError("writing the output files failed (disk full?)");
  return 0;
}

int run_validate(const ValidateOptions& o, std::ostream& out) {
  driver::validate(driver::plan_scenario(driver::load(o.scenario, o.overrides)), out);
  return 0;
}

int run_collective(const CollectiveOptions& o, std::ostream& out) {
  auto overrides = o.overrides;
  if (!o.engine.empty()) overrides.push_back("simulate.engine=" + o.engine);
  const Scenario sc = driver::load_cluster(o.scenario, overrides);
  const auto& c = sc.cluster;
  const driver::CollectiveBenchmark bench = driver::run_collective_benchmark(sc, o.request);
  const int ranks = bench.ranks;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : bench.rows)
    rows.push_back({{"op", o.request.op},
                    {"bytes", r.bytes.value()},
                    {"count", r.count},
                    {"dtype", o.request.dtype},
                    {"ranks", ranks},
                    {"algorithm", r.algorithm},
                    {"protocol", r.protocol},
                    {"engine", bench.engine},
                    {"time_s", r.time_s},
                    {"algbw_GBps", r.algbw_GBps},
                    {"busbw_GBps", r.busbw_GBps}});
  if (o.json) {
    out << (rows.size() == 1 ? rows[0] : nlohmann::json{{"results", rows}}).dump(2) << "\n";
    return 0;
  }
  out << "# dtsim collective: " << o.request.op << ", " << rows[0]["algorithm"].get<std::string>()
      << " (" << rows[0]["protocol"].get<std::string>() << " protocol at the first size), " << ranks
      << " ranks on " << c.nodes << " x " << c.gpus_per_node << " " << c.gpu.name << ", engine "
      << bench.engine << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "#%14s %14s %7s %12s %10s %10s\n#%14s %14s %7s %12s %10s %10s\n",
                "size", "count", "type", "time", "algbw", "busbw", "(B)", "(elements)", "", "(us)",
                "(GB/s)", "(GB/s)");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, " %14.0f %14.0f %7s %12.2f %10.2f %10.2f\n",
                  r["bytes"].get<double>(), r["count"].get<double>(), o.request.dtype.c_str(),
                  r["time_s"].get<double>() * 1e6, r["algbw_GBps"].get<double>(),
                  r["busbw_GBps"].get<double>());
    out << buf;
  }
  return 0;
}

int run_catalog(const CatalogOptions& o, std::ostream& out) {
  if (o.json) {
    const nlohmann::json j = o.what == "gpus"       ? driver::gpu_catalog_json()
                             : o.what == "fabrics"  ? driver::fabric_catalog_json()
                             : o.what == "networks" ? driver::network_catalog_json()
                             : o.what == "hardware" ? driver::hardware_catalog_json()
                             : o.what == "models"   ? driver::model_catalog_json()
                             : o.what == "engines"  ? driver::engine_catalog_json()
                                                    : driver::scenario_keys_json();
    out << j.dump(2) << "\n";
    return 0;
  }
  if (o.what == "engines") {
    out << driver::render_engine_catalog();
    return 0;
  }
  if (o.what == "keys") {
    out << render_scenario_reference_markdown();
    return 0;
  }
  if (o.what == "hardware") {
    out << render_hardware_catalog_markdown();
    return 0;
  }
  if (o.markdown) {
    if (o.what == "gpus") out << render_gpu_catalog_markdown();
    if (o.what == "fabrics") out << render_fabric_catalog_markdown();
    if (o.what == "networks") out << render_network_catalog_markdown();
    if (o.what != "models") return 0;
  }
  char buf[256];
  if (o.what == "gpus") {
    std::snprintf(buf, sizeof buf, "%-16s %12s %12s %10s %14s\n", "name", "bf16 TFLOP/s",
                  "fp8 TFLOP/s", "memory GiB", "memory GB/s");
    out << buf;
    for (const auto& g : gpu_catalog()) {
      std::snprintf(buf, sizeof buf, "%-16s %12.1f %12s %10.1f %14.0f\n", g.name.c_str(),
                    g.peak_for(DType::kBf16).value() / 1e12,
                    g.supports(DType::kFp8)
                        ? format_number("%.1f", g.peak_for(DType::kFp8).value() / 1e12).c_str()
                        : "-",
                    g.memory.value() / (1024.0 * 1024 * 1024), g.memory_bandwidth.value() / 1e9);
      out << buf;
    }
  } else if (o.what == "fabrics") {
    std::snprintf(buf, sizeof buf, "%-26s %-7s %16s %11s %12s\n", "name", "kind", "GB/s per GPU",
                  "efficiency", "latency us");
    out << buf;
    for (const auto& f : fabric_catalog()) {
      std::snprintf(buf, sizeof buf, "%-26s %-7s %16.1f %11.3f %12.2f\n", f.name.c_str(),
                    std::string(to_string(f.kind)).c_str(), f.per_gpu_bandwidth.value() / 1e9,
                    f.protocol_efficiency, f.latency.value() * 1e6);
      out << buf;
    }
  } else if (o.what == "networks") {
    std::snprintf(buf, sizeof buf, "%-12s %-11s %10s %12s %11s\n", "name", "kind", "Gb/s",
                  "latency us", "efficiency");
    out << buf;
    for (const auto& n : network_catalog()) {
      std::snprintf(buf, sizeof buf, "%-12s %-11s %10.0f %12.2f %11.2f\n", n.name.c_str(),
                    std::string(to_string(n.kind)).c_str(), n.port_bandwidth.value() * 8 / 1e9,
                    n.latency.value() * 1e6, n.protocol_efficiency);
      out << buf;
    }
  } else if (o.what == "models") {
    std::snprintf(buf, sizeof buf, "%-16s %-10s %14s  %s\n", "name", "family", "parameters",
                  "source");
    out << buf;
    for (const auto& name : models::preset_names()) {
      const models::ModelSpec* spec = models::find_preset(name);
      ModelGraph g = models::build_model(*spec, models::BuildOptions{});
      const double p = g.parameters();
      const std::string count = format_count(p);
      std::snprintf(buf, sizeof buf, "%-16s %-10s %14s  %s\n", name.c_str(),
                    std::string(models::to_string(spec->family)).c_str(), count.c_str(),
                    spec->source.substr(0, 60).c_str());
      out << buf;
    }
  }
  return 0;
}

}  // namespace dtsim::cli
