#include "cli/commands.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/hardware/catalog_markdown.h"
#include "core/report/memory_parts.h"
#include "core/report/report.h"
#include "core/scenario/reference.h"
#include "driver/catalog.h"
#include "driver/collective_benchmark.h"
#include "driver/compare.h"
#include "driver/output_file.h"
#include "driver/predict.h"
#include "driver/real.h"
#include "driver/validate.h"
#include "models/model_builder.h"
#include "models/model_spec.h"

namespace dtsim::cli {
namespace {

// --max-memory as bytes, or an error naming the flag.
double max_memory_bytes(const std::string& text) {
  const auto limit = parse_bytes(text);
  if (!limit || limit.value->value() <= 0)
    throw InputError(Diagnostic{SourceLocation{}, "--max-memory",
                                "expected a size such as 16GiB, found '" + text + "'"});
  return limit.value->value();
}

// --output and --trace (either may be empty), checked before any work: neither may be the
// scenario or the other (driver/output_file.h).
void open_outputs(const std::string& output, const std::string& trace, const std::string& scenario,
                  std::optional<driver::OutputFile>& result_file,
                  std::optional<driver::OutputFile>& trace_file) {
  const std::vector<std::string> inputs = {scenario};
  if (!output.empty())
    result_file.emplace(output, "--output", inputs, std::vector<const driver::OutputFile*>{});
  if (!trace.empty())
    trace_file.emplace(
        trace, "--trace", inputs,
        std::vector<const driver::OutputFile*>{result_file ? &*result_file : nullptr});
}

// --timeout as a duration, or an error naming the flag.
Seconds timeout_of(const std::string& text) {
  const auto t = parse_duration(text);
  if (!t || t.value->value() <= 0)
    throw InputError(
        Diagnostic{SourceLocation{}, "--timeout",
                   "expected a duration such as 60s or 5min, found '" + printable(text, 60) + "'"});
  return *t.value;
}

// Only rank 0 of a real-mode job reports progress (the others would repeat it).
std::chrono::milliseconds progress_quiet_for(const real::LaunchInfo& launch) {
  return launch.rank == 0 ? std::chrono::milliseconds(2000) : std::chrono::hours(24 * 365);
}

std::optional<real::Backend> backend_of(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return name == "cpu" ? real::Backend::kCpu : real::Backend::kCuda;
}

real::FaultInjection fault_of(const std::string& text) {
  real::FaultInjection f;
  if (text.empty()) return f;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  int rank = -1;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      rank = std::stoi(text.substr(colon + 1), &used);
      if (used != text.size() - colon - 1) rank = -1;
    } catch (const std::exception&) {
      rank = -1;
    }
  }
  if ((kind != "exit" && kind != "hang") || rank < 0)
    throw InputError(
        Diagnostic{SourceLocation{}, "--inject-fault",
                   "expected exit:RANK or hang:RANK, found '" + printable(text, 60) + "'"});
  f.kind = kind == "exit" ? real::FaultInjection::Kind::kExit : real::FaultInjection::Kind::kHang;
  f.rank = rank;
  return f;
}

}  // namespace

namespace {

// "activations 52.1 GiB": the memory category largest at the peak.
std::string largest_category(const Results& r) {
  const MemoryCategory largest = dtsim::largest_category(r.per_category_bytes);
  return std::string(to_string(largest)) + " " +
         format_bytes(Bytes(r.per_category_bytes[static_cast<size_t>(largest)]));
}

}  // namespace

int run_simulate(const SimulateOptions& o, std::ostream& out) {
  auto overrides = o.overrides;
  if (!o.engine.empty()) overrides.push_back("simulate.engine=" + o.engine);
  Scenario sc = driver::load(o.scenario, overrides);
  // Both outputs are checked before any work, and written only once the run has succeeded.
  std::optional<driver::OutputFile> result_file, trace_file;
  open_outputs(o.output, o.trace, o.scenario, result_file, trace_file);

  std::optional<driver::Prediction> prediction;
  nlohmann::json j;
  {
    // Progress ends before anything is printed, so its line never runs into the summary.
    driver::Progress progress;
    driver::PredictOptions options;
    options.progress = &progress;
    options.with_chrome_trace = trace_file.has_value();
    if (!o.max_memory.empty()) options.max_memory_bytes = max_memory_bytes(o.max_memory);
    prediction.emplace(driver::predict(std::move(sc), options));
    const driver::Prediction& p = *prediction;
    j = results_to_json(p.results);
    if (trace_file) {
      progress.phase("writing the trace");
      nlohmann::json trace = chrome_trace(p.trace, p.job, p.cluster, p.model);
      if (p.results.reliability) add_whole_run(trace, *p.results.reliability);
      trace_file->commit(trace.dump() + "\n");
    }
    if (result_file) result_file->commit(j.dump(2) + "\n");
  }
  const Results& results = prediction->results;
  if (o.json)
    out << j.dump(2) << "\n";
  else
    out << render_summary(results);
  // A configuration that does not fit cannot run: the result is printed and written for those
  // who want to see where the memory goes, and the verdict is an error (exit 2), as dtsim
  // validate's is.
  if (!results.fits) {
    out.flush();
    throw InputError(Diagnostic{
        SourceLocation{o.scenario, 0, 0}, "memory",
        "does not fit: the peak memory per GPU, " +
            format_bytes(Bytes(results.peak_bytes_per_gpu)) + ", exceeds the GPU's " +
            format_bytes(Bytes(results.capacity_bytes)) +
            " (largest at the peak: " + largest_category(results) +
            "); the result above shows where the memory goes, and dtsim validate lists the "
            "fixes"});
  }
  return 0;
}

int run_validate(const ValidateOptions& o, std::ostream& out) {
  // The report is printed once the checks end, so progress lines never interleave with it; what
  // it holds is printed before a problem found late (the memory verdict) is reported too.
  std::ostringstream report;
  try {
    driver::Progress progress;
    progress.phase("building each simulated rank's Program");
    driver::Plan plan = driver::plan_scenario(
        driver::load(o.scenario, o.overrides),
        o.max_memory.empty() ? driver::kDefaultMaxMemoryBytes : max_memory_bytes(o.max_memory));
    progress.phase("checking placement, collectives and memory");
    driver::validate(plan, report);
  } catch (...) {
    out << report.str();
    throw;
  }
  out << report.str();
  return 0;
}

int run_collective(const CollectiveOptions& o, std::ostream& out) {
  auto overrides = o.overrides;
  if (!o.engine.empty()) overrides.push_back("simulate.engine=" + o.engine);
  const Scenario sc = driver::load_cluster(o.scenario, overrides);
  // nccl-tests' flags with nccl-tests' meaning: -t threads each drive -g GPUs (ranks t x g);
  // -n, -w and -c change nothing in a simulation, and a note on stderr says so.
  driver::CollectiveRequest request = o.request;
  if (o.threads > 0) request.ranks = o.threads * std::max(1, request.ranks);
  if (o.iterations)
    std::cerr << "note: -n " << *o.iterations
              << ": a simulation is deterministic; each row is one iteration's time\n";
  if (o.warmup) std::cerr << "note: -w " << *o.warmup << ": a simulation has no warm-up\n";
  if (o.check)
    std::cerr << "note: -c " << *o.check
              << ": dtsim moves no data, so there is nothing to check (#wrong stays 0)\n";
  const auto& c = sc.cluster;
  driver::CollectiveBenchmark bench;
  {
    driver::Progress progress;  // ends before the table is printed
    progress.phase("simulating the collective on the " + sc.simulate.engine + " engine");
    bench = driver::run_collective_benchmark(sc, request);
  }
  auto text_or_null = [](const std::string& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(v);
  };
  if (o.json) {
    // One shape for one size and for a sweep (docs/schemas/collective-result.schema.json).
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : bench.rows)
      rows.push_back(
          // Whole counts (sizes round to whole elements) are written as integers.
          {{"size_bytes", static_cast<int64_t>(std::llround(r.bytes.value()))},
           {"count_elements", static_cast<int64_t>(std::llround(r.count))},
           {"algorithm", r.algorithm},
           {"protocol", text_or_null(r.protocol)},
           {"time_s", r.time_s},
           {"algbw_GBps", r.algbw_GBps},
           {"busbw_GBps", r.busbw_GBps},
           {"nccl_algorithm", text_or_null(r.nccl_algorithm)},
           {"nccl_protocol", text_or_null(r.nccl_protocol)},
           {"nccl_time_s", r.nccl_time_s ? nlohmann::json(*r.nccl_time_s) : nlohmann::json()},
           {"note", text_or_null(r.note)}});
    nlohmann::json j{{"op", bench.op},
                     {"dtype", bench.dtype},
                     {"type", bench.type_name},
                     {"redop", bench.redop},
                     {"root_rank", bench.root},
                     {"ranks", bench.ranks},
                     {"engine", bench.engine},
                     {"requested_algorithm", o.request.algorithm},
                     {"rows", rows}};
    // Only when other jobs share the network, so results without them keep their shape.
    if (const double f = c.network.background_fraction; f > 0) j["background_link_fraction"] = f;
    out << j.dump(2) << "\n";
    return 0;
  }
  // nccl-tests' all_reduce_perf table (src/common.cu, Reporter): size, count, type, redop, root,
  // then time, algbw, busbw and #wrong out of place and in place, then dtsim's own columns.
  char buf[512];
  out << "# dtsim collective: " << bench.op << " on " << bench.ranks << " ranks (" << c.nodes
      << " x " << c.gpus_per_node << " " << c.gpu.name << "), algorithm " << o.request.algorithm
      << ", engine " << bench.engine << "\n"
      << "# Simulated, not measured: out-of-place and in-place are one simulation, and #wrong is "
         "0 because dtsim moves no data and checks none.\n"
      << "# After nccl-tests' columns: algorithm (what each size ran as, /protocol where one is "
         "modelled), nccl (NCCL's cost model's pick, - where it does not cover the system), note "
         "(why busbw falls below the previous size's, - where it does not).\n";
  if (const double f = c.network.background_fraction; f > 0)
    out << "# Other jobs' traffic holds " << format_number("%g", 100 * f)
        << "% of every network link (background.link_fraction): these times are at "
        << format_number("%g", 100 * (1 - f)) << "% of each NIC and uplink.\n";
  out << "#\n";
  std::snprintf(buf, sizeof buf,
                "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                "in-place\n",
                "", "", "", "", "");
  out << buf;
  std::snprintf(buf, sizeof buf,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %-14s %-14s "
                "%s\n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong", "algorithm", "nccl", "note");
  out << buf;
  std::snprintf(buf, sizeof buf,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
  out << buf;
  double busbw_sum = 0;
  for (const auto& r : bench.rows) {
    const std::string algorithm = r.protocol.empty() ? r.algorithm : r.algorithm + "/" + r.protocol;
    const std::string nccl =
        r.nccl_algorithm.empty() ? "-" : r.nccl_algorithm + "/" + r.nccl_protocol;
    const double time_us = r.time_s * 1e6;
    // As nccl-tests prints times: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f.
    const std::string time = time_us >= 10000 ? format_number("%7.0f", time_us)
                             : time_us >= 100 ? format_number("%7.1f", time_us)
                                              : format_number("%7.2f", time_us);
    std::snprintf(buf, sizeof buf,
                  "%12.0f  %12.0f  %8s  %6s  %6i  %7s  %6.2f  %6.2f  %5i  %7s  %6.2f  %6.2f  %5i  "
                  "%-14s %-14s %s\n",
                  r.bytes.value(), r.count, bench.type_name.c_str(), bench.redop.c_str(),
                  bench.root, time.c_str(), r.algbw_GBps, r.busbw_GBps, 0, time.c_str(),
                  r.algbw_GBps, r.busbw_GBps, 0, algorithm.c_str(), nccl.c_str(),
                  r.note.empty() ? "-" : r.note.c_str());
    out << buf;
    busbw_sum += r.busbw_GBps;
  }
  out << "# Out of bounds values : 0 OK\n"
      << "# Avg bus bandwidth    : "
      << format_number("%g", bench.rows.empty() ? 0.0 : busbw_sum / bench.rows.size()) << "\n#\n";
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
    std::snprintf(buf, sizeof buf, "%-16s %12s %12s %12s %10s %14s\n", "name", "fp16 TFLOP/s",
                  "bf16 TFLOP/s", "fp8 TFLOP/s", "memory GiB", "memory GB/s");
    out << buf;
    for (const auto& g : gpu_catalog()) {
      // A dtype the GPU has no tensor-core peak for is "-", as simulate refuses it (V100 bf16).
      const auto peak = [&](DType d) {
        return g.supports(d) ? format_number("%.1f", g.peak_for(d).value() / 1e12)
                             : std::string("-");
      };
      std::snprintf(buf, sizeof buf, "%-16s %12s %12s %12s %10.1f %14.0f\n", g.name.c_str(),
                    peak(DType::kFp16).c_str(), peak(DType::kBf16).c_str(),
                    peak(DType::kFp8).c_str(), g.memory.value() / (1024.0 * 1024 * 1024),
                    g.memory_bandwidth.value() / 1e9);
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

int run_compare(const CompareOptions& o, std::ostream& out) {
  const driver::Comparison c = driver::compare_results(o.predicted, o.measured);
  const bool gated = o.max_error_percent >= 0;
  const bool beyond = gated && c.worst_metric_error() * 100 > o.max_error_percent;
  const auto error_text = [](const driver::ComparedValue& v) {
    return v.error ? format_number("%+.1f %%", *v.error * 100) : std::string("-");
  };
  const auto value_text = [](const driver::ComparedValue& v, double x) {
    return v.unit == "bytes" ? format_bytes(Bytes(x)) : format_duration(Seconds(x));
  };
  if (o.json) {
    auto rows = [](const std::vector<driver::ComparedValue>& vs) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& v : vs)
        a.push_back({{"name", v.name},
                     {"unit", v.unit},
                     {"predicted", v.predicted},
                     {"measured", v.measured},
                     {"error_fraction", v.error ? nlohmann::json(*v.error) : nlohmann::json()}});
      return a;
    };
    nlohmann::json j = {{"predicted_file", c.predicted_file},
                        {"measured_file", c.measured_file},
                        {"predicted_source", c.predicted_source},
                        {"measured_source", c.measured_source},
                        {"metrics", rows(c.metrics)},
                        {"by_kind", rows(c.by_kind)},
                        {"worst_metric_error_fraction", c.worst_metric_error()},
                        {"warnings", c.warnings},
                        {"disturbed", c.disturbed},
                        {"conditions", c.conditions}};
    if (gated) {
      j["max_error_fraction"] = o.max_error_percent / 100;
      j["within_limit"] = !beyond;
    }
    out << j.dump(2) << "\n";
    return beyond ? 1 : 0;  // exit 1: beyond the limit (design: a runtime failure, not bad input)
  }
  const auto describe = [](const std::string& file, const std::string& source,
                           const std::string& engine) {
    return printable(file, 200) + " (" + (source.empty() ? "?" : source) +
           (engine.empty() ? "" : ", " + engine) + ")";
  };
  out << "dtsim compare: " << describe(c.predicted_file, c.predicted_source, c.predicted_engine)
      << " against " << describe(c.measured_file, c.measured_source, c.measured_engine) << "\n";
  out << "  error = (predicted - measured) / measured; positive: the prediction is slower or "
         "larger\n";
  for (const auto& w : c.warnings)
    out << "  warning: the two results are of different jobs: " << printable(w, 300) << "\n";
  for (const auto& d : c.disturbed) out << "  warning: " << printable(d, 600) << "\n";
  for (const auto& d : c.conditions) out << "  " << printable(d, 600) << "\n";
  out << "\n";
  char buf[256];
  const auto table = [&](const char* title, const std::vector<driver::ComparedValue>& vs) {
    std::snprintf(buf, sizeof buf, "  %-30s %14s %14s %10s\n", title, "predicted", "measured",
                  "error");
    out << buf;
    for (const auto& v : vs) {
      std::snprintf(buf, sizeof buf, "  %-30s %14s %14s %10s\n", printable(v.name, 30).c_str(),
                    value_text(v, v.predicted).c_str(), value_text(v, v.measured).c_str(),
                    error_text(v).c_str());
      out << buf;
    }
  };
  table("metric", c.metrics);
  if (!c.by_kind.empty()) {
    out << "\n";
    table("busy time per step, by op kind", c.by_kind);
  }
  out << "\n  worst metric error " << format_number("%.1f %%", c.worst_metric_error() * 100);
  if (gated)
    out << (beyond ? ", beyond" : ", within") << " the limit of "
        << format_number("%g %%", o.max_error_percent);
  out << "\n";
  return beyond ? 1 : 0;  // exit 1: beyond the limit (design: a runtime failure, not bad input)
}

int run_real(const RealOptions& o, std::ostream& out) {
  driver::MeasureOptions options;
  options.backend = backend_of(o.backend);
  options.iterations = o.iterations;
  options.real.warmup_iterations = o.warmup;
  options.real.timeout = timeout_of(o.timeout);
  options.real.compute_scale = o.compute_scale;
  options.real.fault = fault_of(o.inject_fault);
  const real::LaunchInfo launch = real::detect_launch();
  // Outputs are checked before any work on rank 0, which alone writes them.
  std::optional<driver::OutputFile> result_file, trace_file;
  if (launch.rank == 0) open_outputs(o.output, o.trace, o.scenario, result_file, trace_file);
  std::optional<driver::Measurement> m;
  nlohmann::json j;
  {
    driver::Progress progress(progress_quiet_for(launch));
    options.progress = &progress;
    m.emplace(driver::measure(o.scenario, o.overrides, options));
    if (!m->root) return 0;
    j = results_to_json(m->results);
    if (trace_file) {
      progress.phase("writing the trace");
      trace_file->commit(chrome_trace(m->trace, m->job, m->cluster, m->model).dump() + "\n");
    }
    if (result_file) result_file->commit(j.dump(2) + "\n");
  }
  if (o.json)
    out << j.dump(2) << "\n";
  else
    out << render_summary(m->results);
  return 0;
}

int run_calibrate(const CalibrateOptions& o, std::ostream& out) {
  driver::CalibrateRequest request;
  request.backend = *backend_of(o.backend);
  request.timeout = timeout_of(o.timeout);
  request.options.command = o.command;
  request.options.gpu_model = o.gpu_model;
  request.options.quick = o.quick;
  const real::LaunchInfo launch = real::detect_launch();
  std::optional<driver::OutputFile> file;
  if (launch.rank == 0 && !o.output.empty())
    file.emplace(o.output, "-o", std::vector<std::string>{},
                 std::vector<const driver::OutputFile*>{});
  bool root = true;
  HardwareProfile p;
  {
    driver::Progress progress(progress_quiet_for(launch));
    request.options.phase = [&](const std::string& what) { progress.phase(what); };
    p = driver::calibrate(request, &root);
  }
  if (!root) return 0;
  std::ostringstream text;
  write_profile(p, text);
  if (file)
    file->commit(text.str());
  else
    out << text.str();
  if (file) {
    double best = 0;
    for (const auto& g : p.gemm) best = std::max(best, g.rate.value());
    out << "dtsim calibrate: wrote " << printable(o.output, 200) << " (" << p.kind << ", "
        << printable(p.gpu_model, 60) << " on " << printable(p.machine["host"], 60)
        << "): " << p.gemm.size() << " GEMM shapes, best " << format_flop_rate(FlopsPerSecond(best))
        << "; streaming " << format_bandwidth(p.memory_bandwidth) << "; per-op overhead "
        << format_duration(p.kernel_launch_overhead);
    if (p.intra_node_bandwidth)
      out << "; point-to-point " << format_bandwidth(*p.intra_node_bandwidth) << ", "
          << format_duration(*p.intra_node_latency);
    out << "\n";
  }
  return 0;
}

}  // namespace dtsim::cli
