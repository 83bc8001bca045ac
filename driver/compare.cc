#include "driver/compare.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base/error.h"
#include "core/base/input_file.h"

namespace dtsim::driver {
namespace {

using nlohmann::json;

json read_result(const std::string& file) {
  const auto bad = [&](const std::string& why) {
    return InputError(Diagnostic{SourceLocation{file, 0, 0}, "", why});
  };
  // A regular file of bounded size (a device or a pipe would be read forever).
  const std::string text = read_input_file(
      file, InputFileRules{"result file", "; give the JSON file dtsim simulate --json -o wrote",
                           "the JSON file dtsim simulate --json -o wrote",
                           "a result is a few kilobytes to a few megabytes of JSON", 256u << 20});
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw bad("expected a result object from dtsim simulate --json");
    return j;
  } catch (const json::parse_error& e) {
    throw bad("not a JSON result (byte " + std::to_string(e.byte) +
              "); give the file dtsim simulate --json -o wrote");
  }
}

// The value at a dotted path ("breakdown_s.compute"), or nullptr where a key is missing.
const json* at_path(const json& j, const std::string& path) {
  const json* at = &j;
  std::string rest = path;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    const std::string key = rest.substr(0, dot);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
  }
  return at;
}

// The number at a dotted path, or an InputError naming the file and the key.
double number_at(const json& j, const std::string& path, const std::string& file) {
  const json* at = at_path(j, path);
  if (!at)
    throw InputError(Diagnostic{
        SourceLocation{file, 0, 0}, path,
        "the result has no '" + path + "'; compare reads results of dtsim simulate --json"});
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
  // A step time of zero or less measures nothing: every error against it would be meaningless.
  for (const auto& [j, file] : {std::pair{&p, &predicted_file}, std::pair{&m, &measured_file}})
    if (const double step = number_at(*j, "step_time_s", *file); !(step > 0))
      throw InputError(Diagnostic{SourceLocation{*file, 0, 0}, "step_time_s",
                                  "the step time is " + std::to_string(step) +
                                      " s; a result's step time must be positive"});
  // Results of different jobs compare, but not without a word.
  for (const char* key :
       {"scenario", "config.gpu", "config.gpus", "config.tp", "config.pp", "config.dp", "config.cp",
        "config.ep", "config.micro_batch_size", "config.global_batch_size", "model.parameters"}) {
    const json *a = at_path(p, key), *b = at_path(m, key);
    if (a && b && *a != *b)
      c.warnings.push_back(std::string(key) + " differs: " + a->dump() + " in the prediction, " +
                           b->dump() + " in the measurement");
  }
  // A measurement taken on a disturbed machine (dtsim real's measurement_conditions) varies by
  // itself as much as the errors below may show.
  for (const auto& [j, which] : {std::pair{&m, "measurement"}, std::pair{&p, "prediction's file"}})
    if (const json* cond = at_path(*j, "measurement_conditions"); cond && cond->is_object()) {
      const json* disturbed = at_path(*cond, "disturbed");
      const json* summary = at_path(*cond, "summary");
      if (disturbed && disturbed->is_boolean() && disturbed->get<bool>() && summary &&
          summary->is_string())
        c.disturbed.push_back("the " + std::string(which) +
                              " was taken on a disturbed machine: " + summary->get<std::string>());
      else if (summary && summary->is_string())
        c.conditions.push_back("the " + std::string(which) +
                               " was taken undisturbed: " + summary->get<std::string>());
    }
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
