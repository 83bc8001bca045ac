#include "driver/compare.h"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base/error.h"

namespace dtsim::driver {
namespace {

using nlohmann::json;

json read_result(const std::string& file) {
  const auto bad = [&](const std::string& why) {
    return InputError(Diagnostic{SourceLocation{file, 0, 0}, "", why});
  };
  std::ifstream in(file, std::ios::binary);
  if (!in) throw bad("cannot open the result file");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    json j = json::parse(text.str());
    if (!j.is_object()) throw bad("expected a result object from dtsim simulate --json");
    return j;
  } catch (const json::parse_error& e) {
    throw bad("not a JSON result (byte " + std::to_string(e.byte) +
              "); give the file dtsim simulate --json -o wrote");
  }
}

// The number at a dotted path, or an InputError naming the file and the key.
double number_at(const json& j, const std::string& path, const std::string& file) {
  const json* at = &j;
  std::string rest = path;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    const std::string key = rest.substr(0, dot);
    if (!at->is_object() || !at->contains(key)) {
      throw InputError(Diagnostic{
          SourceLocation{file, 0, 0}, path,
          "the result has no '" + path + "'; compare reads results of dtsim simulate --json"});
    }
    at = &(*at)[key];
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
  }
  if (!at->is_number())
    throw InputError(Diagnostic{SourceLocation{file, 0, 0}, path, "expected a number"});
  return at->get<double>();
}

std::string text_at(const json& j, const std::string& key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

ComparedValue compared(std::string name, std::string unit, double predicted, double measured) {
  ComparedValue v{std::move(name), std::move(unit), predicted, measured, std::nullopt};
  if (measured != 0)
    v.error = (predicted - measured) / measured;
  else if (predicted == 0)
    v.error = 0.0;
  return v;
}

}  // namespace

double Comparison::worst_metric_error() const {
  double worst = 0;
  for (const auto& m : metrics)
    if (m.error) worst = std::max(worst, std::fabs(*m.error));
  return worst;
}

Comparison compare_results(const std::string& predicted_file, const std::string& measured_file) {
  const json p = read_result(predicted_file), m = read_result(measured_file);
  Comparison c;
  c.predicted_file = predicted_file;
  c.measured_file = measured_file;
  c.predicted_source = text_at(p, "source");
  c.measured_source = text_at(m, "source");
  c.predicted_engine = text_at(p, "engine");
  c.measured_engine = text_at(m, "engine");
  const struct {
    const char* name;
    const char* path;
    const char* unit;
  } metrics[] = {{"step time", "step_time_s", "s"},
                 {"compute", "breakdown_s.compute", "s"},
                 {"exposed communication", "breakdown_s.exposed_communication", "s"},
                 {"pipeline bubble", "breakdown_s.pipeline_bubble", "s"},
                 {"straggler wait", "breakdown_s.straggler_wait", "s"},
                 {"peak memory per GPU", "memory.peak_bytes_per_gpu", "bytes"}};
  for (const auto& metric : metrics)
    c.metrics.push_back(compared(metric.name, metric.unit,
                                 number_at(p, metric.path, predicted_file),
                                 number_at(m, metric.path, measured_file)));
  // Op kinds: the union of both files' kinds.
  std::map<std::string, std::pair<double, double>> kinds;
  for (const auto& [j, file, second] :
       {std::tuple{&p, &predicted_file, false}, std::tuple{&m, &measured_file, true}}) {
    if (!j->contains("time_by_kind_s")) continue;  // results written before it existed
    for (const auto& [kind, value] : (*j)["time_by_kind_s"].items()) {
      if (!value.is_number())
        throw InputError(Diagnostic{SourceLocation{*file, 0, 0}, "time_by_kind_s." + kind,
                                    "expected a number of seconds"});
      (second ? kinds[kind].second : kinds[kind].first) = value.get<double>();
    }
  }
  for (const auto& [kind, pm] : kinds)
    c.by_kind.push_back(compared(kind, "s", pm.first, pm.second));
  return c;
}

}  // namespace dtsim::driver
