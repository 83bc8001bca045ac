#include "driver/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/input_file.h"
#include "core/base/text.h"
#include "core/scenario/scenario.h"
#include "driver/child_process.h"
#include "driver/output_file.h"
#include "driver/predict.h"
#include "driver/progress.h"
#include "real/backends.h"
#include "real/launch.h"

namespace dtsim::driver {
namespace {

using Clock = std::chrono::steady_clock;

InputError flag_error(const std::string& flag, const std::string& message) {
  return InputError(Diagnostic{SourceLocation{}, flag, message});
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// A number as a value text: whole numbers without a decimal point while a double holds them
// exactly (below 2^53); larger ones, which a 64-bit integer may not hold, in exponent form.
std::string number_text(double v) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::fabs(v) < kExactIntegers &&
      std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v)))
    return std::to_string(static_cast<long long>(std::llround(v)));
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

std::vector<std::string> range_values(const std::string& key, const std::string& args, int index) {
  std::vector<double> n;
  std::stringstream in(args);
  std::string part;
  while (std::getline(in, part, ',')) {
    part = trim(part);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(v))
      throw InputError(
          Diagnostic{SourceLocation{"--vary", index, 0}, key,
                     "range(a,b,step) takes three numbers, found '" + printable(args, 80) + "'"});
    n.push_back(v);
  }
  if (n.size() != 3)
    throw InputError(
        Diagnostic{SourceLocation{"--vary", index, 0}, key,
                   "range(a,b,step) takes three numbers, found " + std::to_string(n.size())});
  const double a = n[0], b = n[1], step = n[2];
  if (step == 0)
    throw InputError(
        Diagnostic{SourceLocation{"--vary", index, 0}, key, "range(a,b,step): step must not be 0"});
  const double count = std::floor((b - a) / step + 1e-9) + 1;
  if (count < 1)
    throw InputError(
        Diagnostic{SourceLocation{"--vary", index, 0}, key,
                   "range(" + printable(args, 80) + ") is empty: from a, step never reaches b"});
  if (count > static_cast<double>(kMaxSweepRows))
    throw InputError(Diagnostic{SourceLocation{"--vary", index, 0}, key,
                                "range(" + printable(args, 80) + ") has " + number_text(count) +
                                    " values; a sweep takes at most " +
                                    std::to_string(kMaxSweepRows) + " configurations"});
  std::vector<std::string> values;
  for (long long i = 0; i < static_cast<long long>(count); ++i)
    values.push_back(number_text(a + static_cast<double>(i) * step));
  return values;
}

void check_values(const std::string& key, const std::vector<std::string>& values,
                  const std::string& flag, int index) {
  DiagnosticSink sink;
  for (const auto& v : values) check_override(Override{key + "=" + v}, flag, index, sink);
  sink.throw_if_any();
}

// What a child said on stderr, without the "error: --set:N: " that names its own command line
// (the row's overrides say which values it ran with).
std::string child_message(const std::string& err) {
  std::string out;
  std::stringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("error: ", 0) == 0) line = line.substr(7);
    if (line.rfind("--set:", 0) == 0) {
      const size_t colon = line.find(": ");
      if (colon != std::string::npos) line = line.substr(colon + 2);
    }
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

// The row a finished child gives.
SweepRow row_of(const Overrides& config, const ChildOutcome& o, double timeout_s) {
  SweepRow row;
  row.config = config_id(config);
  row.overrides = config;
  row.wall_s = o.wall_s;
  row.exit_code = o.exit_code;
  auto error_text = [&](std::string prefix) {
    // One row is one line of the results file: the message's lines are joined with " | ".
    std::string err = trim(printable(child_message(o.err), 4000));
    for (size_t at = err.find('\n'); at != std::string::npos; at = err.find('\n', at)) {
      size_t end = at;
      while (end < err.size() && (err[end] == '\n' || err[end] == '\r')) ++end;
      err.replace(at, end - at, " | ");
    }
    return err.empty() ? prefix : (prefix.empty() ? err : prefix + ": " + err);
  };
  switch (o.status) {
    case ChildOutcome::Status::kExited:
      if (o.exit_code == 0) {
        row.result = nlohmann::json::parse(o.out, nullptr, false);
        if (row.result.is_object()) return row;
        row.result = nullptr;
        row.status = "error";
        row.exit_code = 1;
        row.error = error_text("dtsim simulate printed no JSON result");
        return row;
      }
      // Exit 2 with a whole result whose memory does not fit: the configuration cannot run, and
      // its result (where the memory goes) is kept.
      if (o.exit_code == 2) {
        nlohmann::json result = nlohmann::json::parse(o.out, nullptr, false);
        if (result_does_not_fit(result)) {
          row.result = std::move(result);
          row.status = kDoesNotFit;
          row.error = error_text("");
          return row;
        }
      }
      row.status = "error";
      row.error = error_text("");
      if (row.error.empty()) row.error = "dtsim simulate exited " + std::to_string(o.exit_code);
      return row;
    case ChildOutcome::Status::kTimedOut:
      row.status = "timeout";
      row.exit_code = 124;  // as timeout(1) reports it
      row.error = "ran longer than --timeout " + number_text(timeout_s) + " s and was stopped";
      return row;
    case ChildOutcome::Status::kSignalled:
      row.status = "error";
      row.exit_code = 128 + o.signal;
      row.error = error_text("dtsim simulate ended on signal " + std::to_string(o.signal) + " (" +
                             strsignal(o.signal) + ")");
      return row;
    case ChildOutcome::Status::kNotStarted:
    case ChildOutcome::Status::kCancelled:
      row.status = "error";
      row.exit_code = 127;
      row.error = o.error.empty() ? "the run was cancelled" : o.error;
      return row;
  }
  return row;
}

// Writes one whole line with one write(2) and flushes it to disk.
void write_line(int fd, const std::string& path, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw RuntimeError("cannot write to " + path + ": " + std::string(std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  fdatasync(fd);
}

// What a log line says of one finished run.
std::string run_detail(const SweepRow& row) {
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << (row.config.empty() ? "the scenario as it is" : row.config) << ": "
    << row.status;
  if (row.ok() && row.result.contains("step_time_s"))
    s << ", step " << row.result["step_time_s"].get<double>() << " s";
  else if (!row.ok())
    s << " (" << printable(row.error.substr(0, row.error.find('\n')), 160) << ")";
  s << ", ran " << row.wall_s << " s";
  return s.str();
}

bool file_has_content(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

// The rows a stream file already holds (for --resume); drops a cut-off last line from the file.
ResultsFile existing_rows(const std::string& path, const std::vector<std::string>& varied_keys,
                          const std::string& identity, const std::string& flag) {
  ResultsFile file = read_results(path);
  // Rows of another scenario (or an edited one), other --set values, another engine or memory
  // limit are not this sweep's, however their configuration ids read.
  for (const SweepRow& row : file.rows)
    if (row.sweep != identity)
      throw flag_error(
          flag, path + " holds rows of another sweep (" +
                    (row.sweep.empty() ? std::string("rows without a sweep identity, written by "
                                                     "an older dtsim")
                                       : "sweep " + row.sweep + ", this one is " + identity) +
                    "): the scenario file's content, the --set overrides, --engine or "
                    "--max-memory differ. Resume with the same ones, or choose another file");
  const std::set<std::string> want(varied_keys.begin(), varied_keys.end());
  const std::set<std::string> have(file.varied_keys.begin(), file.varied_keys.end());
  if (!file.rows.empty() && want != have) {
    std::string h, w;
    for (const auto& k : file.varied_keys) h += (h.empty() ? "" : ", ") + k;
    for (const auto& k : varied_keys) w += (w.empty() ? "" : ", ") + k;
    throw flag_error(flag, path + " holds a sweep over " + (h.empty() ? "no keys" : h) +
                               ", not over " + (w.empty() ? "no keys" : w) +
                               "; resume it with the same --vary keys, or choose another file");
  }
  if (file.dropped_partial_lines) {
    // Cut the partial line off, so the next row starts on a line of its own.
    if (::truncate(path.c_str(), static_cast<off_t>(file.complete_bytes)) != 0)
      throw RuntimeError("cannot repair " + path + ": " + std::string(std::strerror(errno)));
  }
  return file;
}

std::vector<std::string> child_argv(const SweepRequest& r, const Overrides& config) {
  std::vector<std::string> argv = {r.dtsim, "simulate", r.scenario, "--json"};
  if (!r.engine.empty()) argv.insert(argv.end(), {"--engine", r.engine});
  if (!r.max_memory.empty()) argv.insert(argv.end(), {"--max-memory", r.max_memory});
  for (const auto& s : r.overrides) argv.insert(argv.end(), {"--set", s});
  for (const auto& [k, v] : config) argv.insert(argv.end(), {"--set", k + "=" + v});
  return argv;
}

// The ordered union of every configuration's keys.
std::vector<std::string> keys_of(const std::vector<Overrides>& configs) {
  std::vector<std::string> keys;
  for (const auto& c : configs)
    for (const auto& [k, v] : c)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}

// The rows of several files of one sweep, one per configuration (the first file's wins). `keys`
// is filled from the first file with rows when empty, and every file must vary the same keys.
std::vector<SweepRow> unique_rows(std::vector<ResultsFile>& files, std::vector<std::string>& keys,
                                  int* duplicates) {
  std::vector<SweepRow> rows;
  std::set<std::string> seen;
  std::string first;
  for (auto& file : files) {
    if (file.rows.empty()) continue;
    if (keys.empty() && first.empty()) {
      keys = file.varied_keys;
      first = file.path;
    } else if (std::set<std::string>(keys.begin(), keys.end()) !=
               std::set<std::string>(file.varied_keys.begin(), file.varied_keys.end())) {
      throw InputError(Diagnostic{SourceLocation{file.path, 1, 0}, "",
                                  "this file varies other keys than " +
                                      (first.empty() ? std::string("the sweep") : first) +
                                      "; only shards of one sweep can be merged"});
    }
    if (first.empty()) first = file.path;
    for (auto& row : file.rows) {
      if (!seen.insert(row.config).second) {
        if (duplicates) ++*duplicates;
        continue;
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

SweepAxis parse_vary(const std::string& text, int index) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(Diagnostic{SourceLocation{"--vary", index, 0}, "",
                                "expected --vary key.path=v1,v2,... or key.path=range(a,b,step), "
                                "found '" +
                                    printable(text, 120) + "'"});
  SweepAxis axis;
  const std::string key = trim(text.substr(0, eq));
  const std::string values = trim(text.substr(eq + 1));
  // The key alone first, so a typo is reported once, with a suggestion.
  {
    DiagnosticSink sink;
    check_override(Override{key + "=0"}, "--vary", index, sink);
    for (const auto& d : sink.diagnostics())
      if (d.message.rfind("unknown key path", 0) == 0) throw InputError(sink.diagnostics());
  }
  axis.key = canonical_path(scenario_schema(), key);
  if (values.rfind("range(", 0) == 0 && values.back() == ')') {
    axis.values = range_values(axis.key, values.substr(6, values.size() - 7), index);
  } else {
    std::stringstream in(values);
    std::string v;
    while (std::getline(in, v, ',')) {
      v = trim(v);
      if (!v.empty()) axis.values.push_back(v);
    }
  }
  if (axis.values.empty())
    throw InputError(Diagnostic{SourceLocation{"--vary", index, 0}, axis.key,
                                "no values to vary over; give key=v1,v2,... or "
                                "key=range(a,b,step)"});
  std::set<std::string> seen;
  for (const auto& v : axis.values)
    if (!seen.insert(v).second)
      throw InputError(Diagnostic{SourceLocation{"--vary", index, 0}, axis.key,
                                  "the value '" + printable(v, 60) + "' is listed twice"});
  check_values(axis.key, axis.values, "--vary", index);
  return axis;
}

std::vector<Overrides> expand_axes(const std::vector<SweepAxis>& axes) {
  std::vector<Overrides> configs = {{}};
  for (const auto& axis : axes) {
    std::vector<Overrides> next;
    next.reserve(configs.size() * axis.values.size());
    for (const auto& c : configs)
      for (const auto& v : axis.values) {
        Overrides o = c;
        o.emplace_back(axis.key, v);
        next.push_back(std::move(o));
      }
    configs = std::move(next);
  }
  return configs;
}

std::vector<Overrides> read_grid(const std::string& path) {
  // A regular file of bounded size: a pipe or a device would be read forever.
  const std::string text = read_input_file(
      path, InputFileRules{"grid file", "; give a YAML file listing the override sets",
                           "a YAML file listing the override sets",
                           "a grid is a few kilobytes of YAML", 16u << 20});
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{SourceLocation{path, e.mark.line + 1, e.mark.column + 1}, "",
                                "not YAML: " + e.msg});
  }
  if (!root.IsSequence() || root.size() == 0)
    throw InputError(Diagnostic{SourceLocation{path, 1, 0}, "",
                                "a grid file is a YAML list of override sets, e.g.\n"
                                "- {parallelism.tensor: 8, parallelism.pipeline: 2}\n"
                                "- {parallelism.tensor: 4, parallelism.pipeline: 4}"});
  if (root.size() > kMaxSweepRows)
    throw InputError(Diagnostic{SourceLocation{path, 1, 0}, "",
                                "lists " + std::to_string(root.size()) +
                                    " override sets; a sweep takes at most " +
                                    std::to_string(kMaxSweepRows) + " configurations"});
  std::vector<Overrides> configs;
  DiagnosticSink sink;
  std::set<std::string> ids;
  for (size_t i = 0; i < root.size(); ++i) {
    const YAML::Node entry = root[i];
    const SourceLocation where{path, entry.Mark().line + 1, entry.Mark().column + 1};
    if (!entry.IsMap()) {
      sink.add(where, "", "each entry is a map of key.path: value");
      continue;
    }
    Overrides o;
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (!it->second.IsScalar()) {
        sink.add(where, key, "a grid value is one scalar (a number, a word or a size)");
        continue;
      }
      const std::string value = it->second.as<std::string>();
      DiagnosticSink one;
      check_override(Override{key + "=" + value}, path, static_cast<int>(i + 1), one);
      for (const auto& d : one.diagnostics()) sink.add(Diagnostic{where, d.key_path, d.message});
      o.emplace_back(canonical_path(scenario_schema(), key), value);
    }
    if (!ids.insert(config_id(o)).second) sink.add(where, "", "this override set is listed twice");
    configs.push_back(std::move(o));
  }
  sink.throw_if_any();
  return configs;
}

Shard parse_shard(const std::string& text) {
  Shard s;
  const size_t slash = text.find('/');
  auto whole = [](const std::string& t, int& out) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoi(t);
    return true;
  };
  if (slash == std::string::npos || !whole(text.substr(0, slash), s.index) ||
      !whole(text.substr(slash + 1), s.count) || s.count < 1 || s.index >= s.count)
    throw flag_error("--shard",
                     "expected i/n with 0 <= i < n (the Slurm array's task id and count, e.g. "
                     "--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT), found '" +
                         printable(text, 60) + "'");
  return s;
}

std::vector<Overrides> sweep_configurations(const SweepRequest& request,
                                            std::vector<std::string>& varied_keys) {
  if (request.vary.empty() == request.grid.empty())
    throw flag_error("--vary", request.grid.empty()
                                   ? "give at least one --vary key=v1,v2,... (or a --grid file)"
                                   : "--vary and --grid exclude each other: put every override "
                                     "set in the grid file");
  std::vector<Overrides> all;
  if (!request.grid.empty()) {
    all = read_grid(request.grid);
  } else {
    std::vector<SweepAxis> axes;
    for (size_t i = 0; i < request.vary.size(); ++i) {
      axes.push_back(parse_vary(request.vary[i], static_cast<int>(i + 1)));
      for (size_t j = 0; j + 1 < axes.size(); ++j)
        if (axes[j].key == axes.back().key)
          throw InputError(Diagnostic{SourceLocation{"--vary", static_cast<int>(i + 1), 0},
                                      axes.back().key, "this key is varied twice"});
    }
    double product = 1;
    for (const auto& a : axes) product *= static_cast<double>(a.values.size());
    if (product > static_cast<double>(kMaxSweepRows))
      throw flag_error("--vary", "the product of the axes has " + number_text(product) +
                                     " configurations; a sweep takes at most " +
                                     std::to_string(kMaxSweepRows) +
                                     " (the rows analyze, --resume and --merge read back)");
    all = expand_axes(axes);
  }
  varied_keys = keys_of(all);
  std::vector<Overrides> mine;
  for (size_t k = 0; k < all.size(); ++k)
    if (static_cast<int>(k % static_cast<size_t>(request.shard.count)) == request.shard.index)
      mine.push_back(std::move(all[k]));
  return mine;
}

SweepSummary run_sweep(const SweepRequest& request) {
  const auto started = Clock::now();
  if (request.jobs < 1) throw flag_error("-j", "the number of parallel runs must be at least 1");
  if (request.output.empty())
    throw flag_error("--output", "name the results file, e.g. -o results.csv (or .jsonl)");
  const ResultsFormat format = results_format(request.output, "--output");
  // The scenario and the --set overrides are checked against the schema once, so a typo is one
  // error rather than a failed row per configuration. Feasibility is each run's own.
  load_cluster(request.scenario, request.overrides);
  std::vector<std::string> varied_keys;
  std::vector<Overrides> configs = sweep_configurations(request, varied_keys);

  std::vector<std::string> all_ids;
  for (const auto& c : configs) all_ids.push_back(config_id(c));
  // Under an MPI (or torchrun-style) launch, the ranks split the shard.
  const real::LaunchInfo launch = real::detect_launch();
  std::unique_ptr<real::Channel> channel;
  if (launch.world > 1) {
    // The children are exec'd at once, which Open MPI's fork warning does not concern.
    ::setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    // Ranks finish their shares at different times: the channel waits as long as a sweep can.
    channel = real::make_channel(launch, real::Backend::kCuda, Seconds(30.0 * 24 * 3600));
    std::vector<Overrides> mine;
    for (size_t k = 0; k < configs.size(); ++k)
      if (static_cast<int>(k % static_cast<size_t>(launch.world)) == launch.rank)
        mine.push_back(std::move(configs[k]));
    configs = std::move(mine);
  }
  const bool parted = channel != nullptr;
  const std::string stream_path =
      parted ? request.output + ".rank-" + std::to_string(launch.rank) + ".part" : request.output;

  // What the rows are rows of: --resume and --merge keep only rows of this identity.
  std::string scenario_bytes;
  {
    std::ifstream in(request.scenario, std::ios::binary);
    scenario_bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string identity =
      sweep_identity(scenario_bytes, request.overrides, request.engine, request.max_memory);
  // The rows' file is appended to: it may not be a file the scenario named (a profile), nor a pipe.
  for (const std::string& path : {request.output, stream_path})
    refuse_unsafe_output(path, "--output");
  // Rows already written: refuse to mix sweeps unless --resume.
  std::set<std::string> done;
  for (const std::string& path : {request.output, stream_path}) {
    if (!file_has_content(path)) continue;
    if (!request.resume)
      throw flag_error("--output", path +
                                       " already holds results; add --resume to continue that "
                                       "sweep, or choose another file");
    for (const auto& row : existing_rows(path, varied_keys, identity, "--resume").rows)
      done.insert(row.config);
  }
  std::vector<Overrides> pending;
  for (auto& c : configs)
    if (!done.count(config_id(c))) pending.push_back(std::move(c));

  SweepSummary summary;
  summary.configurations = static_cast<int>(configs.size());
  summary.skipped = summary.configurations - static_cast<int>(pending.size());

  const int fd = ::open(stream_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw flag_error("--output", "cannot write " + stream_path + ": " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  if (!file_has_content(stream_path)) write_line(fd, stream_path, header_line(format, varied_keys));

  {
    KillChildrenOnInterrupt guard;
    CountedProgress progress("sweep", pending.size(), "runs");
    if (summary.skipped && launch.rank == 0)
      progress.message("sweep: " + std::to_string(summary.skipped) + " of " +
                       std::to_string(summary.configurations) + " configurations are already in " +
                       request.output + "; running the other " + std::to_string(pending.size()) +
                       "\n");
    ChildPool pool(request.jobs);
    // Ctrl-C (or SIGTERM) ends the sweep at once: say what is kept and how to go on.
    const auto farewell = [&] {
      const int done_now = summary.skipped + summary.ran;
      guard.set_farewell("\ndtsim sweep: interrupted; " + std::to_string(done_now) + " of " +
                         std::to_string(summary.configurations) +
                         " configurations have their rows in " + stream_path +
                         ". Run the same command with --resume to run the other " +
                         std::to_string(summary.configurations - done_now) + "\n");
    };
    farewell();
    size_t next = 0;
    while (next < pending.size() || pool.running() > 0) {
      while (next < pending.size() && pool.has_slot()) {
        pool.start(next, ChildSpec{child_argv(request, pending[next]), request.timeout_s});
        ++next;
      }
      for (auto& [id, outcome] : pool.wait(0.5)) {
        SweepRow row = row_of(pending[id], outcome, request.timeout_s);
        row.sweep = identity;
        write_line(fd, stream_path, format_line(format, varied_keys, row));
        ++summary.ran;
        if (row.ok())
          ++summary.ok;
        else if (row.status == kDoesNotFit)
          ++summary.does_not_fit;
        else if (row.status == "timeout")
          ++summary.timed_out;
        else
          ++summary.failed;
        progress.advance(static_cast<size_t>(summary.ran),
                         static_cast<size_t>(summary.failed + summary.timed_out), run_detail(row));
        farewell();
      }
    }
  }

  if (parted) {
    // Rank 0 joins the rows the output already held and every rank's rows into the output, in
    // the order of the configurations, and writes it whole; then each rank drops its part.
    std::ifstream in(stream_path, std::ios::binary);
    const std::string mine((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto gathered = channel->gather(std::vector<uint8_t>(mine.begin(), mine.end()));
    if (launch.rank == 0) {
      std::vector<ResultsFile> files;
      if (file_has_content(request.output)) files.push_back(read_results(request.output));
      for (size_t r = 0; r < gathered.size(); ++r)
        files.push_back(parse_results(std::string(gathered[r].begin(), gathered[r].end()),
                                      request.output + " (rank " + std::to_string(r) + ")",
                                      format));
      std::map<std::string, size_t> order;
      for (size_t k = 0; k < all_ids.size(); ++k) order.emplace(all_ids[k], k);
      std::vector<SweepRow> rows = unique_rows(files, varied_keys, nullptr);
      std::stable_sort(rows.begin(), rows.end(), [&](const SweepRow& a, const SweepRow& b) {
        auto ia = order.find(a.config), ib = order.find(b.config);
        const size_t ka = ia == order.end() ? order.size() : ia->second;
        const size_t kb = ib == order.end() ? order.size() : ib->second;
        return ka < kb;
      });
      OutputFile out(request.output, "--output", {}, {});
      std::string body = header_line(format, varied_keys);
      for (const auto& row : rows) body += format_line(format, varied_keys, row);
      out.commit(body);
    }
    channel->barrier();
    std::remove(stream_path.c_str());
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  return summary;
}

MergeSummary merge_results(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw flag_error("--merge", "name the results files to merge");
  if (output.empty()) throw flag_error("--output", "name the merged file, e.g. -o all.csv");
  const ResultsFormat format = results_format(output, "--output");
  OutputFile out(output, "--output", inputs, {});
  std::vector<ResultsFile> files;
  for (const auto& path : inputs) files.push_back(read_results(path));
  // Shards of one sweep share its identity; files of different sweeps do not merge.
  const SweepRow* first = nullptr;
  const std::string* first_path = nullptr;
  for (size_t f = 0; f < files.size(); ++f)
    for (const SweepRow& row : files[f].rows) {
      if (!first) {
        first = &row;
        first_path = &inputs[f];
      } else if (row.sweep != first->sweep) {
        throw flag_error("--merge",
                         inputs[f] + " holds rows of another sweep than " + *first_path + " (" +
                             (row.sweep.empty() ? "no identity" : row.sweep) + " against " +
                             (first->sweep.empty() ? "no identity" : first->sweep) +
                             "): a different scenario file, --set, --engine or --max-memory. "
                             "Merge the shards of one sweep");
      }
    }
  MergeSummary summary;
  summary.files = static_cast<int>(files.size());
  std::vector<std::string> keys;
  const std::vector<SweepRow> rows = unique_rows(files, keys, &summary.duplicates);
  std::string body = header_line(format, keys);
  for (const auto& row : rows) body += format_line(format, keys, row);
  summary.rows = static_cast<int>(rows.size());
  out.commit(body);
  return summary;
}

}  // namespace dtsim::driver
