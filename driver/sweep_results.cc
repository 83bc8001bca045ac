#include "driver/sweep_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/input_file.h"
#include "core/base/text.h"
#include "core/report/metrics.h"
#include "core/report/report.h"

namespace dtsim::driver {
namespace {

// The fixed columns before the varied keys and after them; the result's columns follow.
constexpr const char* kConfigColumn = "config";
const std::vector<std::string> kRunColumns = {"status", "exit_code", "wall_s", "error"};
constexpr const char* kSweepColumn = "sweep";

// A row is 2 to 4 kB of text; the limit leaves room for long error messages.
constexpr std::uintmax_t kMaxResultsFileBytes = kMaxSweepRows * (8u << 10);

// Result keys kept as one JSON cell: lists, and maps whose keys vary from run to run.
bool is_json_cell(const std::string& key) {
  return key == "time_by_kind_s" || key == "notes" || key == "communication.per_group" ||
         key == "model.other_layers" || key == "memory.per_stage" ||
         key == "parameter_server.per_server" || key == "parameter_server.staleness_histogram";
}

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::json>>& out) {
  if (j.is_object() && !is_json_cell(prefix)) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out.emplace_back(prefix, j);
}

// The cell text of a value: strings as they are, numbers in full precision, the rest as JSON.
std::string cell_text(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    std::ostringstream s;
    s.precision(17);
    s << v.get<double>();
    return s.str();
  }
  return v.dump();
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// A cell's text back as a value: numbers and booleans typed, JSON cells parsed, else a string.
nlohmann::json cell_value(const std::string& key, const std::string& text) {
  if (text.empty()) return nullptr;
  if (is_json_cell(key)) return nlohmann::json::parse(text, nullptr, false);
  if (text == "true") return true;
  if (text == "false") return false;
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size() && std::isfinite(d)) {
    const bool integral = text.find_first_of(".eE") == std::string::npos;
    if (integral && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
    return d;
  }
  return text;
}

void set_dotted(nlohmann::json& root, const std::string& key, nlohmann::json value) {
  nlohmann::json* node = &root;
  size_t start = 0;
  for (;;) {
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
    if (dot == std::string::npos) {
      (*node)[part] = std::move(value);
      return;
    }
    node = &(*node)[part];
    start = dot + 1;
  }
}

const nlohmann::json* get_dotted(const nlohmann::json& root, const std::string& key) {
  const nlohmann::json* node = &root;
  size_t start = 0;
  for (;;) {
    if (!node->is_object()) return nullptr;
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
    auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

InputError bad_file(const std::string& path, int line, const std::string& message) {
  SourceLocation where;
  where.file = path;
  where.line = line;
  return InputError(Diagnostic{where, "", message});
}

// Splits one CSV record (RFC 4180); the caller has joined lines inside quotes. Returns false on
// a malformed quote.
bool split_csv(const std::string& line, std::vector<std::string>& cells) {
  cells.clear();
  std::string cell;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cell += c;
      }
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
      was_quoted = false;
    } else if (c == '"') {
      if (!cell.empty() || was_quoted) return false;
      quoted = was_quoted = true;
    } else {
      cell += c;
    }
  }
  if (quoted) return false;
  cells.push_back(std::move(cell));
  return true;
}

// Whether a CSV record is complete (its quotes are balanced).
bool quotes_balanced(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '"';
  return n % 2 == 0;
}

SweepRow row_from_json(const std::string& path, int line, const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("config") || !j.contains("status") ||
      !j["config"].is_string() || !j["status"].is_string())
    throw bad_file(path, line,
                   "not a dtsim sweep results line: expected an object with \"config\" and "
                   "\"status\"");
  SweepRow row;
  row.config = j["config"].get<std::string>();
  row.status = j["status"].get<std::string>();
  if (row.status != "ok" && row.status != kDoesNotFit && row.status != "error" &&
      row.status != "timeout")
    throw bad_file(path, line,
                   "status must be ok, does-not-fit, error or timeout, found '" +
                       printable(row.status, 40) + "'");
  if (j.contains("overrides") && j["overrides"].is_object())
    for (auto it = j["overrides"].begin(); it != j["overrides"].end(); ++it)
      row.overrides.emplace_back(
          it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  row.exit_code = j.value("exit_code", 0);
  row.wall_s = j.value("wall_s", 0.0);
  row.error = j.value("error", std::string());
  if (j.contains("sweep") && j["sweep"].is_string()) row.sweep = j["sweep"].get<std::string>();
  if (j.contains("result")) row.result = j["result"];
  if (row.ok() && !row.result.is_object())
    throw bad_file(path, line, "a row with status ok has no result object");
  return row;
}

}  // namespace

ResultsFormat results_format(const std::string& path, const std::string& flag) {
  auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".csv")) return ResultsFormat::kCsv;
  if (ends_with(".jsonl") || ends_with(".ndjson")) return ResultsFormat::kJsonl;
  throw InputError(
      Diagnostic{SourceLocation{}, flag,
                 "a results file ends in .csv or .jsonl, found '" + printable(path, 120) + "'"});
}

std::string sweep_identity(const std::string& scenario_bytes,
                           const std::vector<std::string>& overrides, const std::string& engine,
                           const std::string& max_memory) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64 offset basis
  const auto add = [&](const std::string& part) {
    for (const char ch : part) {
      h ^= static_cast<unsigned char>(ch);
      h *= 1099511628211ull;  // FNV prime
    }
    h ^= 0xff;  // a separator no UTF-8 text holds
    h *= 1099511628211ull;
  };
  add(scenario_bytes);
  for (const auto& o : overrides) add(o);
  add("engine=" + engine);
  add("max_memory=" + max_memory);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string config_id(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::string id;
  for (const auto& [key, value] : overrides) id += (id.empty() ? "" : ";") + key + "=" + value;
  return id;
}

std::optional<double> number_of(const SweepRow& row, const std::string& key) {
  auto as_number = [](const nlohmann::json& v) -> std::optional<double> {
    if (v.is_number()) return v.get<double>();
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    return std::nullopt;
  };
  for (const auto& [k, v] : row.overrides)
    if (k == key) {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end != v.c_str() && end == v.c_str() + v.size()) return d;
      // A value with a unit ("8GiB") is found in the result's config instead, if there.
      break;
    }
  if (!row.result.is_object()) return std::nullopt;
  const nlohmann::json* v = get_dotted(row.result, key);
  return v ? as_number(*v) : std::nullopt;
}

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> columns = [] {
    // Every key a result can have: a result with every optional part present.
    Results full;
    full.reliability = reliability::RunReport{};
    full.parameter_server = ParameterServerResults{};
    full.parameter_server->updates = "async";  // with the asynchronous keys
    full.step_time_interval.emplace();
    full.step_time_interval->runs = 1;  // low and high as numbers
    full.energy.modelled = true;        // every energy figure
    full.run.emplace();                 // with a price and a grid, every run figure
    full.run->price_per_gpu_hour = Money{1, "USD"};
    full.run->cost = 0;
    full.run->energy_modelled = true;
    full.run->carbon_g_per_kwh = 0;
    full.run->emissions_kg = 0;
    std::vector<std::pair<std::string, nlohmann::json>> flat;
    flatten(results_to_json(full), "", flat);
    // The figures people look at first lead; the rest follow in the JSON's (sorted) order.
    std::vector<std::string> keys = {"step_time_s",
                                     "step_time_interval_s.low",
                                     "step_time_interval_s.high",
                                     "throughput.samples_per_s",
                                     "throughput.tokens_per_s",
                                     "flops.mfu",
                                     "memory.peak_bytes_per_gpu",
                                     "memory.fits",
                                     "config.gpus"};
    for (auto& [k, v] : flat)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    return keys;
  }();
  return columns;
}

std::string header_line(ResultsFormat format, const std::vector<std::string>& varied_keys) {
  if (format == ResultsFormat::kJsonl) return "";
  std::string line = kConfigColumn;
  for (const auto& k : varied_keys) line += "," + csv_quote(k);
  for (const auto& k : kRunColumns) line += "," + k;
  line += "," + std::string(kSweepColumn);
  for (const auto& k : result_columns()) line += "," + csv_quote(k);
  return line + "\n";
}

std::string format_line(ResultsFormat format, const std::vector<std::string>& varied_keys,
                        const SweepRow& row) {
  if (format == ResultsFormat::kJsonl) {
    nlohmann::json j;
    j["config"] = row.config;
    nlohmann::json overrides = nlohmann::json::object();
    for (const auto& [k, v] : row.overrides) overrides[k] = v;
    j["overrides"] = overrides;
    j["status"] = row.status;
    j["exit_code"] = row.exit_code;
    j["wall_s"] = row.wall_s;
    j["error"] = row.error;
    j["sweep"] = row.sweep;
    j["result"] = row.result;
    // dump() escapes control characters, so a line never holds a raw newline.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line = csv_quote(row.config);
  for (const auto& key : varied_keys) {
    std::string value;
    for (const auto& [k, v] : row.overrides)
      if (k == key) value = v;
    line += "," + csv_quote(value);
  }
  std::ostringstream wall;
  wall.precision(6);
  wall << row.wall_s;
  line += "," + row.status + "," + std::to_string(row.exit_code) + "," + wall.str() + "," +
          csv_quote(row.error) + "," + csv_quote(row.sweep);
  std::vector<std::pair<std::string, nlohmann::json>> flat;
  if (row.result.is_object()) flatten(row.result, "", flat);
  std::map<std::string, const nlohmann::json*> by_key;
  for (const auto& [k, v] : flat) by_key[k] = &v;
  for (const auto& key : result_columns()) {
    auto it = by_key.find(key);
    line += "," + (it == by_key.end() ? std::string() : csv_quote(cell_text(*it->second)));
  }
  return line + "\n";
}

ResultsFile read_results(const std::string& path) {
  const ResultsFormat format = results_format(path, "results file");
  // A regular file of bounded size: a pipe or a device would be read forever.
  return parse_results(
      read_input_file(path,
                      InputFileRules{"results file", "; give the file dtsim sweep -o wrote",
                                     "the .csv or .jsonl file dtsim sweep -o wrote",
                                     "a sweep writes about 2 kB a row", kMaxResultsFileBytes}),
      path, format);
}

ResultsFile parse_results(const std::string& text, const std::string& path, ResultsFormat format) {
  // Counted before any row is parsed, so that a file too large to hold costs little.
  if (const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
      lines > kMaxSweepRows + 1)
    throw InputError(Diagnostic{
        SourceLocation{path, 0, 0}, "",
        "holds " + std::to_string(lines) + " lines; dtsim reads results files of at most " +
            std::to_string(kMaxSweepRows) +
            " rows (about 35 kB of memory each): split the sweep with --shard and analyze "
            "each part"});
  ResultsFile file;
  file.path = path;
  file.format = format;
  // Whole lines only: a last line without its newline was cut off mid-write.
  size_t complete = text.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < text.size()) file.dropped_partial_lines = 1;
  size_t record_start = 0;  // where the CSV record being joined began
  std::vector<std::string> lines;
  std::vector<int> line_numbers;
  {
    size_t start = 0;
    int number = 0;
    std::string record;
    int record_line = 0;
    while (start < complete) {
      const size_t end = text.find('\n', start);
      const size_t line_start = start;
      std::string line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ++number;
      start = end + 1;
      if (file.format == ResultsFormat::kCsv) {
        // A quoted cell may hold newlines: join until the quotes balance.
        if (record.empty()) {
          record_line = number;
          record_start = line_start;
        }
        record += (record.empty() && record_line == number ? "" : "\n") + line;
        if (!quotes_balanced(record)) continue;
        lines.push_back(std::move(record));
        line_numbers.push_back(record_line);
        record.clear();
      } else {
        lines.push_back(std::move(line));
        line_numbers.push_back(number);
      }
    }
    // A record whose quoted cell never closes was cut off mid-write (rows are written whole).
    if (!record.empty()) {
      file.dropped_partial_lines = 1;
      complete = record_start;
    }
  }
  if (file.format == ResultsFormat::kJsonl) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].empty()) continue;
      const auto j = nlohmann::json::parse(lines[i], nullptr, false);
      if (j.is_discarded()) throw bad_file(path, line_numbers[i], "not a JSON line");
      SweepRow row = row_from_json(path, line_numbers[i], j);
      for (const auto& [k, v] : row.overrides)
        if (std::find(file.varied_keys.begin(), file.varied_keys.end(), k) ==
            file.varied_keys.end())
          file.varied_keys.push_back(k);
      file.rows.push_back(std::move(row));
    }
    file.complete_bytes = complete;
    return file;
  }
  file.complete_bytes = complete;
  if (lines.empty()) return file;  // an empty file: no header yet
  std::vector<std::string> header;
  if (!split_csv(lines[0], header) || header.empty() || header[0] != kConfigColumn)
    throw bad_file(path, line_numbers[0],
                   "not a dtsim sweep results file: the header must start with 'config,'");
  // The varied keys sit between "config" and "status".
  size_t status_column = 0;
  for (size_t c = 1; c < header.size(); ++c)
    if (header[c] == "status") {
      status_column = c;
      break;
    }
  if (status_column == 0 || header.size() < status_column + kRunColumns.size())
    throw bad_file(path, line_numbers[0],
                   "not a dtsim sweep results file: the header has no 'status' column");
  for (size_t k = 0; k < kRunColumns.size(); ++k)
    if (header[status_column + k] != kRunColumns[k])
      throw bad_file(path, line_numbers[0],
                     "not a dtsim sweep results file: expected column '" + kRunColumns[k] +
                         "', found '" + printable(header[status_column + k], 40) + "'");
  file.varied_keys.assign(header.begin() + 1, header.begin() + static_cast<long>(status_column));
  // The sweep's identity follows the run columns (files written before it have none).
  const bool has_sweep = header.size() > status_column + kRunColumns.size() &&
                         header[status_column + kRunColumns.size()] == kSweepColumn;
  const size_t first_result = status_column + kRunColumns.size() + (has_sweep ? 1 : 0);
  std::vector<std::string> cells;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (!split_csv(lines[i], cells)) throw bad_file(path, line_numbers[i], "a malformed quote");
    if (cells.size() != header.size())
      throw bad_file(path, line_numbers[i],
                     "expected " + std::to_string(header.size()) +
                         " cells as in the header, found " + std::to_string(cells.size()));
    nlohmann::json j;
    j["config"] = cells[0];
    nlohmann::json overrides = nlohmann::json::object();
    for (size_t c = 1; c < status_column; ++c) overrides[header[c]] = cells[c];
    j["overrides"] = overrides;
    j["status"] = cells[status_column];
    try {
      j["exit_code"] = std::stoi(cells[status_column + 1]);
      j["wall_s"] = std::stod(cells[status_column + 2]);
    } catch (const std::exception&) {
      throw bad_file(path, line_numbers[i], "exit_code and wall_s must be numbers");
    }
    j["error"] = cells[status_column + 3];
    if (has_sweep) j["sweep"] = cells[status_column + kRunColumns.size()];
    if (cells[status_column] == "ok" || cells[status_column] == kDoesNotFit) {
      nlohmann::json result = nlohmann::json::object();
      for (size_t c = first_result; c < header.size(); ++c) {
        nlohmann::json v = cell_value(header[c], cells[c]);
        if (!v.is_null()) set_dotted(result, header[c], std::move(v));
      }
      j["result"] = result;
    }
    SweepRow row = row_from_json(path, line_numbers[i], j);
    // Keep the overrides in the header's order (the JSON object sorted them).
    row.overrides.clear();
    for (size_t c = 1; c < status_column; ++c) row.overrides.emplace_back(header[c], cells[c]);
    file.rows.push_back(std::move(row));
  }
  return file;
}

bool result_does_not_fit(const nlohmann::json& result) {
  return result.is_object() && result.value("/memory/fits"_json_pointer, nlohmann::json()) == false;
}

}  // namespace dtsim::driver
