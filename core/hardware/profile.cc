// Reading, writing and applying hardware profiles (contract in profile.h). The reader checks the
// file as the scenario loader checks a scenario (core/scenario/scenario.cc): bounded size, UTF-8
// text, located diagnostics for every problem in one pass.
#include "core/hardware/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <set>
#include <string_view>

#include "core/base/error.h"
#include "core/base/input_file.h"
#include "core/base/text.h"
#include "core/hardware/cluster_config.h"
#include "core/hardware/gemm_table.h"

namespace dtsim {
namespace {

// A profile holds a few hundred GEMM samples and sweeps, tens of kilobytes; the scenario loader's
// 16 MiB bound is generous for it and still bounds the reader's memory.
constexpr std::uintmax_t kMaxProfileBytes = 16u << 20;

// Floors and ceilings far outside any plausible measurement (the slowest: one CPU core's GEMM at
// a tiny shape, some MFLOP/s), so that a unit slip ("612FLOPS" for "612TFLOPS", "4.2s" for
// "4.2us") is an error rather than a step time of days.
constexpr double kMinRate = 1e6;       // FLOP/s
constexpr double kMinBandwidth = 1e6;  // bytes/s
constexpr double kMaxDuration = 1;     // s, one kernel launch or one message's latency
constexpr double kMaxAttentionFactor = 10;
constexpr double kMaxDimension = 1e9;  // a GEMM dimension
constexpr double kMaxRanks = 1e7;

// The collective names of kCollectiveKindNames (core/ir/program.h), which this stage sits below
// and cannot include; tests/core/profile_test.cc checks that the two lists agree.
constexpr std::string_view kCollectiveOps[] = {
    "all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all", "barrier"};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

std::string kind_of(const YAML::Node& n) {
  if (!n || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  return "'" + printable(n.Scalar(), 80) + "'";
}

// One located key of a map: the key's node (for missing-value positions) and its value.
struct Field {
  YAML::Node key;
  YAML::Node value;
  std::string path;
};

class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : file_(std::move(file)) {}

  SourceLocation where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.line < 0) return SourceLocation{file_, 0, 0};
    return SourceLocation{file_, m.line + 1, m.column + 1};
  }
  // A value's position, or its key's where the value is empty: yaml-cpp marks an empty value at
  // the next token, often on the following line.
  SourceLocation where(const Field& f) const {
    return f.value && !f.value.IsNull() ? where(f.value) : where(f.key);
  }
  void error(const SourceLocation& at, const std::string& path, const std::string& message) {
    sink_.add(at, path, message);
  }
  void error(const Field& f, const std::string& message) { error(where(f), f.path, message); }

  // The keys of a map, each known one once; unknown and repeated keys are reported. `map_at` is
  // where the map is (for a missing key), `path` its key path ("" at the top).
  std::map<std::string, Field> fields(const YAML::Node& map, const std::string& path,
                                      const std::vector<std::string>& known) {
    std::map<std::string, Field> out;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(where(key), path, "expected a key name, found " + kind_of(key));
        continue;
      }
      const std::string name = key.Scalar();
      const std::string p = path.empty() ? name : path + "." + name;
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string msg = "unknown key";
        if (auto dym = did_you_mean(name, known); !dym.empty())
          msg += "; did you mean '" + dym + "'?";
        else
          msg += "; valid keys here: " + join(known);
        error(where(key), p, msg);
        continue;
      }
      if (out.count(name)) {
        error(where(key), p, "duplicate key; each key may appear once");
        continue;
      }
      out.emplace(name, Field{key, it->second, p});
    }
    return out;
  }

  // The field `name`, or a diagnostic at `at` (the key of the map at `path`, or the map itself
  // for the top level and list items) saying it is missing.
  const Field* require(const std::map<std::string, Field>& fields, const SourceLocation& at,
                       const std::string& path, const std::string& name, const std::string& what) {
    if (auto it = fields.find(name); it != fields.end()) return &it->second;
    error(at, path.empty() ? name : path + "." + name,
          "missing: a profile needs " + name + " here (" + what + ")");
    return nullptr;
  }
  static const Field* optional(const std::map<std::string, Field>& fields,
                               const std::string& name) {
    auto it = fields.find(name);
    return it == fields.end() ? nullptr : &it->second;
  }

  std::optional<std::string> text(const Field& f) {
    if (!f.value.IsScalar() || f.value.Scalar().empty()) {
      error(f, "expected text, found " + kind_of(f.value));
      return std::nullopt;
    }
    return f.value.Scalar();
  }

  // A quantity with a unit, through the scenario's parser, within [min, max].
  template <class Q>
  std::optional<Q> quantity(const Field& f, Parsed<Q> (*parse)(std::string_view),
                            const std::string& example, double min, double max) {
    if (!f.value.IsScalar()) {
      error(f,
            "expected a quantity with a unit such as " + example + ", found " + kind_of(f.value));
      return std::nullopt;
    }
    const Parsed<Q> parsed = parse(f.value.Scalar());
    if (!parsed) {
      error(f, parsed.error);
      return std::nullopt;
    }
    const double v = parsed.value->value();
    if (v < min || v > max) {
      error(f, "'" + printable(f.value.Scalar(), 80) + "' is " + (v < min ? "below" : "above") +
                   " any plausible measurement (expected " +
                   (v < min ? "at least " + format_number("%g", min)
                            : "at most " + format_number("%g", max)) +
                   " in base units, e.g. " + example + ")");
      return std::nullopt;
    }
    return parsed.value;
  }

  std::optional<double> number(const Field& f, double min_exclusive, double max,
                               const std::string& what) {
    double v = 0;
    bool ok = f.value.IsScalar();
    if (ok) {
      try {
        v = f.value.as<double>();
      } catch (const YAML::Exception&) {
        ok = false;
      }
    }
    if (!ok || !std::isfinite(v) || v <= min_exclusive || v > max) {
      error(f, "expected " + what + ", found " + kind_of(f.value));
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> whole(const Field& f, double min, double max, const std::string& what) {
    auto v = number(f, min - 1, max, what);
    if (v && (*v < min || *v != std::floor(*v))) {
      error(f, "expected " + what + ", found " + kind_of(f.value));
      return std::nullopt;
    }
    return v;
  }

  // A map of free-form strings (machine, software).
  std::map<std::string, std::string> strings(const Field& f) {
    std::map<std::string, std::string> out;
    if (!f.value.IsMap()) {
      error(f, "expected a map of names to text, found " + kind_of(f.value));
      return out;
    }
    for (auto it = f.value.begin(); it != f.value.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(where(key), f.path, "expected a key name, found " + kind_of(key));
        continue;
      }
      const std::string p = f.path + "." + key.Scalar();
      if (!it->second.IsScalar()) {
        error(Field{key, it->second, p}, "expected text, found " + kind_of(it->second));
        continue;
      }
      if (!out.emplace(key.Scalar(), it->second.Scalar()).second)
        error(where(key), p, "duplicate key; each key may appear once");
    }
    return out;
  }

  // The items of a list, each a map with exactly `keys`; `visit` reads one item's fields.
  template <class Visit>
  void items(const Field& f, const std::vector<std::string>& keys, bool allow_empty,
             const std::string& example, Visit visit) {
    if (!f.value.IsSequence() || (!allow_empty && f.value.size() == 0)) {
      error(f, "expected a list of maps such as " + example + ", found " +
                   (f.value.IsSequence() ? "an empty list" : kind_of(f.value)));
      return;
    }
    for (size_t i = 0; i < f.value.size(); ++i) {
      const YAML::Node item = f.value[i];
      const std::string p = f.path + "[" + std::to_string(i) + "]";
      if (!item.IsMap()) {
        error(where(item), p, "expected a map such as " + example + ", found " + kind_of(item));
        continue;
      }
      const size_t before = sink_.diagnostics().size();
      const auto item_fields = fields(item, p, keys);
      bool complete = true;
      for (const auto& k : keys)
        complete =
            require(item_fields, where(item), p, k, "every item has " + join(keys)) && complete;
      if (complete) visit(item_fields);
      if (sink_.diagnostics().size() != before) bad_items_ = true;
    }
  }

  bool bad_items() const { return bad_items_; }
  const std::string& file() const { return file_; }
  void throw_if_any() const { sink_.throw_if_any(); }

 private:
  std::string file_;
  DiagnosticSink sink_;
  bool bad_items_ = false;
};

void check_text(const std::string& bytes, const std::string& file) {
  check_yaml_text(bytes, file, "YAML hardware profile", "profile");
}

std::string read_bounded(const std::string& path) {
  return read_input_file(
      path, InputFileRules{"profile", "", "a profile that dtsim calibrate wrote",
                           "a profile is tens of kilobytes of YAML", kMaxProfileBytes});
}

// ISO-8601 date and time, as calibrate writes it (2026-12-01T22:40:00Z).
bool iso_8601(const std::string& s) {
  static const std::regex kIso(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))");
  return std::regex_match(s, kIso);
}

void read_device(ProfileReader& r, const Field& f, HardwareProfile& p) {
  if (!f.value.IsMap()) {
    r.error(f, "expected a map with memory_bandwidth, kernel_launch_overhead and gemm, found " +
                   kind_of(f.value));
    return;
  }
  const auto fields = r.fields(
      f.value, f.path, {"memory_bandwidth", "kernel_launch_overhead", "attention_factor", "gemm"});
  if (auto* x = r.require(fields, r.where(f.key), f.path, "memory_bandwidth",
                          "the bandwidth a streaming kernel achieves, e.g. 4.1TBps"))
    if (auto v = r.quantity(*x, parse_bandwidth, "4.1TBps", kMinBandwidth, 1e16))
      p.memory_bandwidth = *v;
  if (auto* x = r.require(fields, r.where(f.key), f.path, "kernel_launch_overhead",
                          "the time of an empty kernel back to back, e.g. 4.2us"))
    if (auto v = r.quantity(*x, parse_duration, "4.2us", 0, kMaxDuration))
      p.kernel_launch_overhead = *v;
  if (auto* x = ProfileReader::optional(fields, "attention_factor"))
    if (auto v = r.number(*x, 0, kMaxAttentionFactor,
                          "a number above 0 and at most 10 (attention rate over GEMM rate)"))
      p.attention_factor = *v;
  const Field* gemm =
      r.require(fields, r.where(f.key), f.path, "gemm",
                "the measured GEMM grid, e.g. - {dtype: bf16, m: 1024, n: 1024, k: 1024, rate: "
                "612TFLOPS}");
  if (!gemm) return;
  r.items(*gemm, {"dtype", "m", "n", "k", "rate"}, false,
          "{dtype: bf16, m: 1024, n: 1024, k: 1024, rate: 612TFLOPS}",
          [&](const std::map<std::string, Field>& item) {
            GemmSample s;
            bool ok = true;
            const Field& dt = item.at("dtype");
            const auto dtype =
                dt.value.IsScalar() ? kDTypeNames.parse(dt.value.Scalar()) : std::nullopt;
            if (!dtype) {
              r.error(dt, "expected one of " + join([] {
                            std::vector<std::string> names;
                            for (const auto& d : kDTypeNames) names.emplace_back(d.name);
                            return names;
                          }()) +
                              ", found " + kind_of(dt.value));
              ok = false;
            } else {
              s.dtype = *dtype;
            }
            for (auto [name, dim] :
                 {std::pair{"m", &s.m}, std::pair{"n", &s.n}, std::pair{"k", &s.k}}) {
              if (auto v = r.whole(item.at(name), 1, kMaxDimension,
                                   "a GEMM dimension, a whole number of at least 1"))
                *dim = *v;
              else
                ok = false;
            }
            if (auto v = r.quantity(item.at("rate"), parse_flop_rate, "612TFLOPS", kMinRate, 1e21))
              s.rate = *v;
            else
              ok = false;
            if (ok) p.gemm.push_back(s);
          });
  // The grid per dtype, once every item reads: with a broken item the "missing point" would only
  // repeat that item's own error.
  if (r.bad_items()) return;
  for (const auto& d : kDTypeNames) {
    std::vector<GemmPoint> points;
    for (const GemmSample& s : p.gemm)
      if (s.dtype == d.value) points.push_back({s.m, s.n, s.k, s.rate});
    if (points.empty()) continue;
    try {
      GemmTable::from_samples(points);
    } catch (const InputError& e) {
      r.error(r.where(gemm->key), gemm->path,
              std::string(d.name) + ": " + e.diagnostics().front().message);
    }
  }
}

void read_intra_node(ProfileReader& r, const Field& f, HardwareProfile& p) {
  if (!f.value.IsMap() || f.value.size() == 0) {
    r.error(f, "expected a map with bandwidth (e.g. 150GBps) and latency (e.g. 2.1us), found " +
                   (f.value.IsMap() ? std::string("an empty map") : kind_of(f.value)));
    return;
  }
  const auto fields = r.fields(f.value, f.path, {"bandwidth", "latency"});
  if (auto* x = ProfileReader::optional(fields, "bandwidth"))
    if (auto v = r.quantity(*x, parse_bandwidth, "150GBps", kMinBandwidth, 1e16))
      p.intra_node_bandwidth = *v;
  if (auto* x = ProfileReader::optional(fields, "latency"))
    if (auto v = r.quantity(*x, parse_duration, "2.1us", 0, kMaxDuration))
      p.intra_node_latency = *v;
}

void read_collectives(ProfileReader& r, const Field& f, HardwareProfile& p) {
  r.items(
      f, {"op", "ranks", "size", "time", "busbw"}, true,
      "{op: all-reduce, ranks: 8, size: 1MiB, time: 31.2us, busbw: 60.1GBps}",
      [&](const std::map<std::string, Field>& item) {
        CollectiveSample s;
        bool ok = true;
        const Field& op = item.at("op");
        const bool known =
            op.value.IsScalar() && std::find(std::begin(kCollectiveOps), std::end(kCollectiveOps),
                                             op.value.Scalar()) != std::end(kCollectiveOps);
        if (known) {
          s.op = op.value.Scalar();
        } else {
          std::vector<std::string> names(std::begin(kCollectiveOps), std::end(kCollectiveOps));
          r.error(op, "expected a collective (" + join(names) + "), found " + kind_of(op.value));
          ok = false;
        }
        if (auto v = r.whole(item.at("ranks"), 1, kMaxRanks, "a whole number of ranks"))
          s.ranks = static_cast<int>(*v);
        else
          ok = false;
        if (auto v = r.quantity(item.at("size"), parse_bytes, "1MiB", 0, 1e18))
          s.size = *v;
        else
          ok = false;
        if (auto v = r.quantity(item.at("time"), parse_duration, "31.2us", 1e-12, 3600))
          s.time = *v;
        else
          ok = false;
        if (auto v = r.quantity(item.at("busbw"), parse_bandwidth, "60.1GBps", 0, 1e16))
          s.busbw = *v;
        else
          ok = false;
        if (ok) p.collectives.push_back(s);
      });
}

void read_p2p(ProfileReader& r, const Field& f, HardwareProfile& p) {
  r.items(f, {"size", "time", "bandwidth"}, true, "{size: 1MiB, time: 10.2us, bandwidth: 98GBps}",
          [&](const std::map<std::string, Field>& item) {
            P2pSample s;
            bool ok = true;
            if (auto v = r.quantity(item.at("size"), parse_bytes, "1MiB", 0, 1e18))
              s.size = *v;
            else
              ok = false;
            if (auto v = r.quantity(item.at("time"), parse_duration, "10.2us", 1e-12, 3600))
              s.time = *v;
            else
              ok = false;
            if (auto v = r.quantity(item.at("bandwidth"), parse_bandwidth, "98GBps", 0, 1e16))
              s.bandwidth = *v;
            else
              ok = false;
            if (ok) p.p2p.push_back(s);
          });
}

HardwareProfile parse_profile(const std::string& bytes, const std::string& file) {
  check_text(bytes, file);
  YAML::Node root;
  try {
    root = YAML::Load(bytes);
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{SourceLocation{file, e.mark.line + 1, e.mark.column + 1}, "",
                                "YAML syntax error: " + e.msg});
  }
  if (!root.IsDefined() || root.IsNull())
    throw InputError(Diagnostic{SourceLocation{file, 0, 0}, "",
                                "the profile is empty; dtsim calibrate writes one (see "
                                "docs/real-mode.md, \"Profiles\")"});
  ProfileReader r(file);
  if (!root.IsMap())
    throw InputError(Diagnostic{r.where(root), "",
                                "expected a map of profile fields (dtsim_profile, kind, "
                                "gpu_model, ...) at the top level, found " +
                                    kind_of(root)});
  HardwareProfile p;
  p.file = file;
  const auto fields =
      r.fields(root, "",
               {"dtsim_profile", "kind", "gpu_model", "created", "command", "machine", "software",
                "device", "intra_node", "collectives", "p2p"});
  if (auto* f = r.require(fields, r.where(root), "", "dtsim_profile", "the format, 1")) {
    if (auto v = r.whole(*f, 1, 1e9, "the format number 1")) {
      if (*v != 1)
        r.error(*f, "format " + format_number("%.0f", *v) +
                        " is not one this dtsim reads (it reads format 1); write the profile "
                        "again with this dtsim's calibrate");
      p.format = static_cast<int>(*v);
    }
  }
  if (auto* f = r.require(fields, r.where(root), "", "kind", "gpu or cpu")) {
    if (auto v = r.text(*f)) {
      if (*v == "gpu" || *v == "cpu")
        p.kind = *v;
      else
        r.error(*f, "expected gpu or cpu, found '" + printable(*v, 80) + "'");
    }
  }
  if (auto* f = r.require(fields, r.where(root), "", "gpu_model",
                          "the catalog GPU it measures, as cluster.gpu names it, e.g. H200-SXM"))
    if (auto v = r.text(*f)) p.gpu_model = *v;
  if (auto* f = r.require(fields, r.where(root), "", "created",
                          "when it was measured, ISO-8601 UTC, e.g. 2026-12-01T22:40:00Z")) {
    if (auto v = r.text(*f)) {
      if (iso_8601(*v))
        p.created = *v;
      else
        r.error(*f, "expected an ISO-8601 date and time such as 2026-12-01T22:40:00Z, found '" +
                        printable(*v, 80) + "'");
    }
  }
  if (auto* f = r.require(fields, r.where(root), "", "command", "the calibrate command line"))
    if (auto v = r.text(*f)) p.command = *v;
  if (auto* f = r.require(fields, r.where(root), "", "machine", "free-form text, at least host")) {
    p.machine = r.strings(*f);
    if (f->value.IsMap() && !p.machine.count("host"))
      r.error(r.where(*f), f->path + ".host",
              "missing: a profile needs machine.host (the host it was measured on)");
  }
  if (auto* f =
          r.require(fields, r.where(root), "", "software", "free-form text, e.g. {dtsim: 0.4}"))
    p.software = r.strings(*f);
  if (auto* f = r.require(fields, r.where(root), "", "device",
                          "memory_bandwidth, kernel_launch_overhead and the gemm grid"))
    read_device(r, *f, p);
  if (auto* f = ProfileReader::optional(fields, "intra_node")) read_intra_node(r, *f, p);
  if (auto* f = ProfileReader::optional(fields, "collectives")) read_collectives(r, *f, p);
  if (auto* f = ProfileReader::optional(fields, "p2p")) read_p2p(r, *f, p);
  r.throw_if_any();
  return p;
}

// A quantity written so that the scenario parser reads back the same double, in the unit that
// needs the shortest plain number ("0.8us", not "800ns" or "8e-07s"; the larger unit on a tie),
// else in the base unit with 17 significant digits (exact, since the parser multiplies by 1).
template <class Q>
std::string with_unit(Q q, Parsed<Q> (*parse)(std::string_view),
                      const std::vector<std::pair<const char*, double>>& units,
                      const char* base_unit) {
  const double v = q.value();
  std::string best_number, best_symbol;
  for (const auto& [symbol, factor] : units) {
    for (int digits = 1; digits <= 17; ++digits) {
      char number[64];
      std::snprintf(number, sizeof number, "%.*g", digits, v / factor);
      if (std::strchr(number, 'e')) continue;  // an exponent: another unit reads better
      const Parsed<Q> back = parse(std::string(number) + symbol);
      if (!back || back.value->value() != v) continue;
      if (best_number.empty() || std::strlen(number) < best_number.size()) {
        best_number = number;
        best_symbol = symbol;
      }
      break;
    }
  }
  if (!best_number.empty()) return best_number + best_symbol;
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", v);
  return std::string(number) + base_unit;
}

std::string bandwidth_text(BytesPerSecond b) {
  return with_unit(b, parse_bandwidth,
                   {{"TBps", 1e12}, {"GBps", 1e9}, {"MBps", 1e6}, {"kBps", 1e3}}, "Bps");
}
std::string duration_text(Seconds t) {
  return with_unit(t, parse_duration, {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}}, "s");
}
std::string rate_text(FlopsPerSecond r) {
  return with_unit(r, parse_flop_rate,
                   {{"PFLOPS", 1e15}, {"TFLOPS", 1e12}, {"GFLOPS", 1e9}, {"MFLOPS", 1e6}}, "FLOPS");
}
// Sizes: binary units where the size is a whole number of them (sweeps run over powers of two),
// else bytes.
std::string bytes_text(Bytes b) {
  const double v = b.value();
  for (const auto& [symbol, factor] : std::vector<std::pair<const char*, double>>{
           {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}}) {
    if (v >= factor && std::fmod(v, factor) == 0) return format_number("%.0f", v / factor) + symbol;
  }
  return with_unit(b, parse_bytes, {}, "B");
}

std::string whole_text(double v) {
  return format_number("%.0f", v);
}

// The fewest significant digits that read back as the same double.
std::string shortest(double v) {
  for (int digits = 1; digits < 17; ++digits) {
    const std::string text = format_number(("%." + std::to_string(digits) + "g").c_str(), v);
    if (std::strtod(text.c_str(), nullptr) == v) return text;
  }
  return format_number("%.17g", v);
}

}  // namespace

HardwareProfile load_profile(const std::string& path) {
  return parse_profile(read_bounded(path), path);
}

void write_profile(const HardwareProfile& p, std::ostream& out) {
  YAML::Emitter e;
  e << YAML::Comment("dtsim hardware profile (docs/real-mode.md, \"Profiles\")") << YAML::Newline;
  e << YAML::BeginMap;
  e << YAML::Key << "dtsim_profile" << YAML::Value << p.format;
  e << YAML::Key << "kind" << YAML::Value << p.kind;
  e << YAML::Key << "gpu_model" << YAML::Value << p.gpu_model;
  e << YAML::Key << "created" << YAML::Value << p.created;
  e << YAML::Key << "command" << YAML::Value << p.command;
  for (const auto& [key, values] :
       {std::pair{"machine", &p.machine}, std::pair{"software", &p.software}}) {
    e << YAML::Key << key << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : *values) e << YAML::Key << name << YAML::Value << value;
    e << YAML::EndMap;
  }
  e << YAML::Key << "device" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "memory_bandwidth" << YAML::Value << bandwidth_text(p.memory_bandwidth);
  e << YAML::Key << "kernel_launch_overhead" << YAML::Value
    << duration_text(p.kernel_launch_overhead);
  if (p.attention_factor)
    e << YAML::Key << "attention_factor" << YAML::Value << shortest(*p.attention_factor);
  e << YAML::Key << "gemm" << YAML::Value << YAML::BeginSeq;
  for (const GemmSample& s : p.gemm)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "dtype" << YAML::Value
      << std::string(to_string(s.dtype)) << YAML::Key << "m" << YAML::Value << whole_text(s.m)
      << YAML::Key << "n" << YAML::Value << whole_text(s.n) << YAML::Key << "k" << YAML::Value
      << whole_text(s.k) << YAML::Key << "rate" << YAML::Value << rate_text(s.rate) << YAML::EndMap;
  e << YAML::EndSeq << YAML::EndMap;
  if (p.intra_node_bandwidth || p.intra_node_latency) {
    e << YAML::Key << "intra_node" << YAML::Value << YAML::BeginMap;
    if (p.intra_node_bandwidth)
      e << YAML::Key << "bandwidth" << YAML::Value << bandwidth_text(*p.intra_node_bandwidth);
    if (p.intra_node_latency)
      e << YAML::Key << "latency" << YAML::Value << duration_text(*p.intra_node_latency);
    e << YAML::EndMap;
  }
  if (!p.collectives.empty()) {
    e << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
    for (const CollectiveSample& s : p.collectives)
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "op" << YAML::Value << s.op << YAML::Key
        << "ranks" << YAML::Value << s.ranks << YAML::Key << "size" << YAML::Value
        << bytes_text(s.size) << YAML::Key << "time" << YAML::Value << duration_text(s.time)
        << YAML::Key << "busbw" << YAML::Value << bandwidth_text(s.busbw) << YAML::EndMap;
    e << YAML::EndSeq;
  }
  if (!p.p2p.empty()) {
    e << YAML::Key << "p2p" << YAML::Value << YAML::BeginSeq;
    for (const P2pSample& s : p.p2p)
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "size" << YAML::Value << bytes_text(s.size)
        << YAML::Key << "time" << YAML::Value << duration_text(s.time) << YAML::Key << "bandwidth"
        << YAML::Value << bandwidth_text(s.bandwidth) << YAML::EndMap;
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  if (!e.good()) throw std::logic_error("write_profile: " + e.GetLastError());
  out << e.c_str() << "\n";
}

void apply_profile(const HardwareProfile& profile, ClusterConfig& cluster) {
  const SourceLocation in_profile{profile.file, 0, 0};
  if (!iequals(profile.gpu_model, cluster.gpu.name))
    throw InputError(Diagnostic{
        in_profile, "gpu_model",
        "the profile was measured on " + profile.gpu_model + ", but the cluster's GPU is " +
            cluster.gpu.name + "; use a profile of " + cluster.gpu.name +
            " (dtsim calibrate on that GPU) or set cluster.gpu to " + profile.gpu_model});
  std::map<DType, GemmTable> tables;
  for (const auto& d : kDTypeNames) {
    std::vector<GemmPoint> points;
    for (const GemmSample& s : profile.gemm)
      if (s.dtype == d.value) points.push_back({s.m, s.n, s.k, s.rate});
    if (points.empty()) continue;
    try {
      tables.emplace(d.value, GemmTable::from_samples(points));
    } catch (const InputError& e) {
      throw InputError(Diagnostic{in_profile, "device.gemm",
                                  std::string(d.name) + ": " + e.diagnostics().front().message});
    }
  }

  const std::string file = profile.file.empty() ? "a profile built in memory" : profile.file;
  std::string measured = "measured: " + file + " (created " + profile.created;
  if (auto host = profile.machine.find("host"); host != profile.machine.end())
    measured += " on " + host->second;
  measured += ")";

  GpuSpec& gpu = cluster.gpu;
  // The vendor's peak stays (MFU and HFU are fractions of it); a dtype the catalog gives no peak
  // for takes the best measured GEMM rate, so that the measured dtype can be used at all.
  for (const auto& [dtype, table] : tables)
    if (!gpu.supports(dtype)) gpu.peak[dtype] = table.best_rate();
  gpu.gemm_table = std::move(tables);
  gpu.attention_factor = profile.attention_factor;
  gpu.memory_bandwidth = profile.memory_bandwidth;
  gpu.memory_efficiency = 1;  // the figure is what a streaming kernel achieved
  gpu.kernel_launch_overhead = profile.kernel_launch_overhead;
  gpu.source = measured + " for memory bandwidth, launch overhead and the GEMM rates of " +
               [&] {
                 std::string dtypes;
                 for (const auto& [dtype, table] : gpu.gemm_table)
                   dtypes += (dtypes.empty() ? "" : ", ") + std::string(to_string(dtype));
                 return dtypes;
               }() +
               "; the rest: " + gpu.source;
  gpu.efficiency_source =
      measured +
      ": memory efficiency 1 (the bandwidth is achieved), GEMM rates per shape from "
      "the measured grid; " +
      (profile.attention_factor ? "attention factor measured"
                                : "attention: attention_efficiency / gemm_efficiency x the GEMM "
                                  "rate, from " +
                                      gpu.efficiency_source);

  if (profile.intra_node_bandwidth || profile.intra_node_latency) {
    IntraNodeFabricSpec& fabric = cluster.intra_node;
    if (profile.intra_node_bandwidth) {
      fabric.per_gpu_bandwidth = *profile.intra_node_bandwidth;
      fabric.protocol_efficiency = 1;  // achieved point-to-point, not a line rate
    }
    if (profile.intra_node_latency) fabric.latency = *profile.intra_node_latency;
    fabric.source = measured + " for " +
                    (profile.intra_node_bandwidth && profile.intra_node_latency
                         ? std::string("bandwidth and latency")
                     : profile.intra_node_bandwidth ? std::string("bandwidth")
                                                    : std::string("latency")) +
                    "; the rest: " + fabric.source;
  }
  cluster.profile = profile.file;
}

}  // namespace dtsim
