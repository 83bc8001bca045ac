// The `stragglers:` binder: each list entry becomes a StragglerEntry with its ranks, nodes and
// NICs checked against the cluster (issue 14, acceptance 8).
//
// The schema keeps the list as YAML text (ValueType::kFreeform), which has lost the lines of
// the entries. When the list came from the scenario file itself (not --set), the binder reads
// that file's `stragglers` node again so that each problem names the line of its own entry.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {
namespace {

class StragglerReader {
 public:
  StragglerReader(const SourceLocation& list_where, bool located, DiagnosticSink& sink)
      : list_where_(list_where), located_(located), sink_(sink) {}

  SourceLocation where(const YAML::Node& n) const {
    if (!located_) return list_where_;
    const auto m = n.Mark();
    if (m.line < 0) return list_where_;
    return SourceLocation{list_where_.file, m.line + 1, m.column + 1};
  }
  void error(const YAML::Node& n, const std::string& path, std::string msg) {
    sink_.add(where(n), path, std::move(msg));
    ok_ = false;
  }
  bool ok() const { return ok_; }

  // Every key of `map` must be one of `keys`.
  void only_keys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string>& keys) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string name = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (std::find(keys.begin(), keys.end(), name) == keys.end())
        error(it->first, path + "." + name,
              "unknown key '" + name + "'; valid keys here: " + join(keys));
    }
  }

  std::optional<double> number(const YAML::Node& map, const std::string& key,
                               const std::string& path, const std::string& what) {
    const YAML::Node n = map[key];
    if (!n) {
      error(map, path + "." + key, "missing: " + what);
      return std::nullopt;
    }
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v)) {
      error(n, path + "." + key, "expected " + what + ", found " + text(n));
      return std::nullopt;
    }
    return v;
  }

  // A slowdown: a factor of at least 1 (kernels take this many times as long).
  std::optional<double> slowdown(const YAML::Node& map, const std::string& path) {
    auto v = number(map, "slowdown", path, "a slowdown factor such as 1.3");
    if (!v) return v;
    if (*v < 1 || *v > kMaxSlowdown) {
      error(map["slowdown"], path + ".slowdown",
            "a slowdown is a factor from 1 to " + format_count(kMaxSlowdown) +
                " (1.3: every kernel takes 30% longer), found " + text(map["slowdown"]));
      return std::nullopt;
    }
    return v;
  }

  // Whole numbers in [0, limit), `what` naming one ("rank", "node").
  std::vector<int> indices(const YAML::Node& n, const std::string& path, const std::string& what,
                           int limit) {
    std::vector<int> out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n, path, "expected a non-empty list of " + what + " numbers, found " + text(n));
      return out;
    }
    // A GPU named twice in one entry would be slowed twice over (slowdown^k): refused.
    std::map<int, size_t> first;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      const auto v = index(n[i], p, what, limit);
      if (!v) continue;
      if (const auto [at, fresh] = first.emplace(*v, i); !fresh) {
        error(n[i], p,
              what + " " + std::to_string(*v) + " is already listed at " + path + "[" +
                  std::to_string(at->second) + "]; name each " + what + " once per entry");
        continue;
      }
      out.push_back(*v);
    }
    return out;
  }

  std::optional<int> index(const YAML::Node& n, const std::string& path, const std::string& what,
                           int limit) {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || v != std::floor(v)) {
      error(n, path, "expected a " + what + " number, found " + text(n));
      return std::nullopt;
    }
    if (v < 0 || v >= limit) {
      error(n, path,
            what + " " + text(n) + " does not exist; the cluster has " + what + "s 0 to " +
                std::to_string(limit - 1));
      return std::nullopt;
    }
    return static_cast<int>(v);
  }

  static std::string text(const YAML::Node& n) {
    if (!n) return "nothing";
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a map";
    return "nothing";
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  // Beyond this a "straggler" is a stopped GPU, which is a failure (the failures: section), not
  // a slowdown.
  static constexpr double kMaxSlowdown = 1000;

 private:
  SourceLocation list_where_;
  bool located_;
  DiagnosticSink& sink_;
  bool ok_ = true;
};

// The ranks of `nodes`, in order.
std::vector<int> ranks_of_nodes(const std::vector<int>& nodes, const ClusterConfig& cluster) {
  std::vector<int> ranks;
  for (int n : nodes)
    for (int g = 0; g < cluster.gpus_per_node; ++g) ranks.push_back(n * cluster.gpus_per_node + g);
  return ranks;
}

// The ranks an entry names through `ranks:` or `nodes:` (exactly one of them).
std::vector<int> named_ranks(StragglerReader& rd, const YAML::Node& map, const std::string& path,
                             const ClusterConfig& cluster) {
  if (map["ranks"] && map["nodes"]) {
    rd.error(map, path, "give ranks or nodes, not both");
    return {};
  }
  if (map["ranks"]) return rd.indices(map["ranks"], path + ".ranks", "rank", cluster.total_gpus());
  return ranks_of_nodes(rd.indices(map["nodes"], path + ".nodes", "node", cluster.nodes), cluster);
}

void bind_entry(StragglerReader& rd, const YAML::Node& n, const std::string& path,
                const ClusterConfig& cluster, StragglerConfig& out) {
  StragglerEntry e;
  e.where = rd.where(n);
  if (!n.IsMap()) {
    rd.error(n, path,
             "expected a map: {ranks: [...], slowdown: F}, {nodes: [...], slowdown: F}, "
             "{random: {...}}, {link: {...}, fraction: X} or {throttle: {...}}, found " +
                 StragglerReader::text(n));
    return;
  }
  if (n["ranks"] || n["nodes"]) {
    rd.only_keys(n, path, {"ranks", "nodes", "slowdown"});
    e.kind = StragglerEntry::Kind::kSlow;
    e.ranks = named_ranks(rd, n, path, cluster);
    if (auto s = rd.slowdown(n, path)) e.slowdown = *s;
  } else if (n["random"]) {
    rd.only_keys(n, path, {"random"});
    const YAML::Node m = n["random"];
    const std::string p = path + ".random";
    e.kind = StragglerEntry::Kind::kRandom;
    if (!m.IsMap()) {
      rd.error(m, p, "expected a map {p, slowdown, per, duration}, found " + rd.text(m));
      return;
    }
    rd.only_keys(m, p, {"p", "slowdown", "per", "duration"});
    if (auto v = rd.number(m, "p", p, "a probability from 0 to 1")) {
      if (*v < 0 || *v > 1)
        rd.error(m["p"], p + ".p", "a probability is from 0 to 1, found " + rd.text(m["p"]));
      e.probability = *v;
    }
    if (auto s = rd.slowdown(m, p)) e.slowdown = *s;
    if (const YAML::Node per = m["per"]) {
      const std::string w = per.IsScalar() ? per.Scalar() : "";
      if (w != "step" && w != "op")
        rd.error(per, p + ".per", "expected step or op, found " + rd.text(per));
      e.per_op = w == "op";
    }
    if (m["duration"])
      if (auto v = rd.number(m, "duration", p, "a whole number of steps (or ops) from 1")) {
        if (*v < 1 || *v != std::floor(*v) || *v > 1000)
          rd.error(m["duration"], p + ".duration",
                   "expected a whole number of steps (or ops) from 1 to 1000, found " +
                       rd.text(m["duration"]));
        else
          e.duration = static_cast<int>(*v);
      }
  } else if (n["link"]) {
    rd.only_keys(n, path, {"link", "fraction"});
    const YAML::Node m = n["link"];
    const std::string p = path + ".link";
    e.kind = StragglerEntry::Kind::kLink;
    if (!m.IsMap()) {
      rd.error(m, p, "expected a map {node: N, nic: I} or {node: N, uplink: true}");
      return;
    }
    rd.only_keys(m, p, {"node", "nic", "uplink"});
    if (cluster.nodes < 2) rd.error(m, p, "a one-node cluster has no network link to degrade");
    if (!m["node"])
      rd.error(m, p + ".node", "missing: the node whose link is degraded");
    else if (auto v = rd.index(m["node"], p + ".node", "node", cluster.nodes))
      e.node = *v;
    const bool uplink = m["uplink"] && m["uplink"].IsScalar() && m["uplink"].Scalar() == "true";
    if (m["nic"] && m["uplink"])
      rd.error(m, p, "give nic or uplink, not both");
    else if (m["nic"]) {
      if (auto v = rd.index(m["nic"], p + ".nic", "NIC", cluster.network.nics_per_node)) e.nic = *v;
    } else if (!uplink)
      rd.error(m, p, "name the link: nic: I (a NIC of the node) or uplink: true");
    if (auto v =
            rd.number(n, "fraction", path, "the fraction of the link's rate left, in [0.001, 1]")) {
      // At least a thousandth, the slowest a straggler may be (kMaxSlowdown): below it the link
      // is down, which is a failure, not a slow link.
      if (*v < 1 / StragglerReader::kMaxSlowdown || *v > 1)
        rd.error(n["fraction"], path + ".fraction",
                 "a link keeps a fraction of its rate from 0.001 to 1 (a link at less is down: "
                 "a failure), found " +
                     rd.text(n["fraction"]));
      else
        e.fraction = *v;
    }
  } else if (n["throttle"]) {
    rd.only_keys(n, path, {"throttle"});
    const YAML::Node m = n["throttle"];
    const std::string p = path + ".throttle";
    e.kind = StragglerEntry::Kind::kThrottle;
    if (!m.IsMap()) {
      rd.error(m, p, "expected a map {ranks | nodes | all, period, slowdown, duty}");
      return;
    }
    rd.only_keys(m, p, {"ranks", "nodes", "all", "period", "slowdown", "duty"});
    const bool all = m["all"] && m["all"].IsScalar() && m["all"].Scalar() == "true";
    if (all && (m["ranks"] || m["nodes"]))
      rd.error(m, p, "give ranks, nodes or all: true, one of them");
    else if (all)
      for (int r = 0; r < cluster.total_gpus(); ++r) e.ranks.push_back(r);
    else if (m["ranks"] || m["nodes"])
      e.ranks = named_ranks(rd, m, p, cluster);
    else
      rd.error(m, p, "name the throttled GPUs: ranks: [...], nodes: [...] or all: true");
    if (auto s = rd.slowdown(m, p)) e.slowdown = *s;
    if (!m["period"] || !m["period"].IsScalar()) {
      rd.error(m, p + ".period", "missing: the throttling cycle, a duration such as 10min");
    } else {
      const auto d = parse_duration(m["period"].Scalar());
      if (!d || d.value->value() <= 0)
        rd.error(m["period"], p + ".period",
                 d ? "a period is longer than 0, found " + m["period"].Scalar() : d.error);
      else
        e.period = *d.value;
    }
    if (m["duty"])
      if (auto v = rd.number(m, "duty", p, "the share of each period spent slowed, in (0, 1]")) {
        if (*v <= 0 || *v > 1)
          rd.error(m["duty"], p + ".duty",
                   "a duty cycle is a share in (0, 1], found " + rd.text(m["duty"]));
        else
          e.duty = *v;
      }
  } else {
    rd.error(n, path,
             "expected one of ranks, nodes, random, link or throttle (e.g. {ranks: [3], "
             "slowdown: 1.3})");
    return;
  }
  out.entries.push_back(std::move(e));
}

}  // namespace

void bind_stragglers(const Reader& r, const ClusterConfig& cluster, StragglerConfig& out,
                     DiagnosticSink& sink) {
  const Entry* entry = r.find("stragglers");
  const std::string* text = entry ? std::get_if<std::string>(&entry->value) : nullptr;
  if (!text || text->empty()) return;
  YAML::Node list = YAML::Load(*text);
  bool located = false;
  // The file's own node, when the list came from it: its marks give each entry's line.
  if (entry->where.line > 0 && !entry->where.file.empty()) try {
      const YAML::Node original = YAML::LoadFile(entry->where.file)["stragglers"];
      if (original && original.Mark().line + 1 == entry->where.line) {
        list = original;
        located = true;
      }
    } catch (const YAML::Exception&) {
      // The file read as a whole before; if it no longer does, keep the key's own line.
    }
  StragglerReader rd(entry->where, located, sink);
  if (!list.IsSequence()) {
    rd.error(list, "stragglers",
             "expected a list of entries such as [{ranks: [3], slowdown: 1.3}], found " +
                 StragglerReader::text(list));
    return;
  }
  for (size_t i = 0; i < list.size(); ++i)
    bind_entry(rd, list[i], "stragglers[" + std::to_string(i) + "]", cluster, out);
  if (!rd.ok()) out.entries.clear();
}

}  // namespace dtsim::scenario_binding
