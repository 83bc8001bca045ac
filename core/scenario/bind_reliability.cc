// The whole-run binder: training.steps and training.tokens, failures and checkpoint. Checks that
// need the step time or the checkpoint size (an interval shorter than the write, an event after
// the end of the run) are the driver's (driver/reliability.cc), which knows both.
#include <yaml-cpp/yaml.h>

#include "core/base/text.h"
#include "core/scenario/internal/binders.h"

namespace dtsim::scenario_binding {
namespace {

using reliability::ComponentClass;
using reliability::kComponentClassNames;

// Scripted events come as YAML text (a freeform key); each is {at: DURATION, kind: CLASS,
// node: N}. Diagnostics name the events key's line and the event by index.
void bind_events(const Reader& r, const ClusterConfig& cluster, ReliabilityConfig& rel,
                 DiagnosticSink& sink) {
  const std::string path = "failures.events";
  const std::string text = r.get_or<std::string>(path, "");
  if (text.empty()) return;
  const SourceLocation where = r.where(path);
  std::string kinds;
  for (const auto& name : kComponentClassNames.names()) kinds += (kinds.empty() ? "" : ", ") + name;
  YAML::Node list;
  try {
    list = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    sink.add(where, path, "cannot read the events: " + e.msg);
    return;
  }
  if (!list.IsSequence()) {
    sink.add(where, path,
             "expected a list of events such as [{at: 120s, kind: node, node: 3}], found " +
                 printable(text, 80));
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const YAML::Node e = list[i];
    if (!e.IsMap()) {
      sink.add(where, at, "expected a map such as {at: 120s, kind: node, node: 3}");
      continue;
    }
    reliability::ScriptedFailure f;
    bool ok = true;
    for (const auto& kv : e) {
      const std::string key = kv.first.Scalar();
      if (key != "at" && key != "kind" && key != "node") {
        std::string msg = "unknown key '" + printable(key, 40) + "' in an event (at, kind, node)";
        if (auto dym = did_you_mean(key, {"at", "kind", "node"}); !dym.empty())
          msg += "; did you mean '" + dym + "'?";
        sink.add(where, at + "." + printable(key, 40), msg);
        ok = false;
      }
    }
    if (!e["at"] || !e["at"].IsScalar()) {
      sink.add(where, at + ".at", "an event needs its time, e.g. at: 120s");
      ok = false;
    } else if (auto t = parse_duration(e["at"].Scalar()); !t) {
      sink.add(where, at + ".at", t.error);
      ok = false;
    } else {
      f.at = *t.value;
    }
    const std::string kind = e["kind"] && e["kind"].IsScalar() ? e["kind"].Scalar() : "";
    if (auto k = kComponentClassNames.parse(kind)) {
      f.component = *k;
    } else {
      sink.add(where, at + ".kind",
               (kind.empty() ? std::string("an event needs its kind")
                             : "unknown kind '" + printable(kind, 40) + "'") +
                   "; expected one of " + kinds);
      ok = false;
    }
    if (e["node"]) {
      int64_t node = -1;
      bool whole = e["node"].IsScalar();
      if (whole) {
        try {
          node = e["node"].as<int64_t>();
        } catch (const YAML::Exception&) {
          whole = false;
        }
      }
      if (!whole || node < 0) {
        sink.add(where, at + ".node",
                 "expected a node index of at least 0, found " +
                     printable(e["node"].IsScalar() ? e["node"].Scalar() : "a list or map", 40));
        ok = false;
      } else if (node >= cluster.nodes) {
        sink.add(where, at + ".node",
                 "node " + std::to_string(node) + " does not exist: the cluster has " +
                     std::to_string(cluster.nodes) + " nodes (0 to " +
                     std::to_string(cluster.nodes - 1) + ")");
        ok = false;
      } else {
        f.node = node;
      }
    }
    if (ok) rel.events.push_back(Located<reliability::ScriptedFailure>{f, where});
  }
}

}  // namespace

void bind_reliability(const Reader& r, const ClusterConfig& cluster, ReliabilityConfig& rel,
                      DiagnosticSink& sink) {
  rel.steps = Located<int64_t>{r.value<int64_t>("training.steps"), r.where("training.steps")};
  if (auto tokens = r.get<double>("training.tokens")) {
    rel.tokens = Located<double>{*tokens, r.where("training.tokens")};
    if (r.find("training.steps"))
      sink.add(r.where("training.tokens"), "training.tokens",
               "give the run's length once: training.steps or training.tokens, not both");
  }
  rel.failures_given = !r.under("failures.").empty();
  rel.checkpoint_given = !r.under("checkpoint.").empty();

  for (const auto& c : kComponentClassNames)
    if (auto mtbf = r.get<Seconds>("failures." + std::string(c.name) + "_mtbf"))
      rel.mtbf.emplace_back(
          c.value, Located<Seconds>{*mtbf, r.where("failures." + std::string(c.name) + "_mtbf")});
  rel.distribution = reliability::kFailureDistributionNames.from_valid(
      r.value<std::string>("failures.distribution"));
  rel.shape = r.value<double>("failures.shape");
  if (r.find("failures.shape") && rel.distribution != reliability::FailureDistribution::kWeibull)
    sink.add(r.where("failures.shape"), "failures.shape",
             "a shape needs distribution: weibull (the exponential has none)");
  rel.detection_timeout = r.value<Seconds>("failures.detection_timeout");
  bind_events(r, cluster, rel, sink);

  if (auto interval = r.get<Seconds>("checkpoint.interval"))
    rel.interval = Located<Seconds>{*interval, r.where("checkpoint.interval")};
  rel.write_bandwidth = r.value<BytesPerSecond>("checkpoint.write_bandwidth");
  rel.mode = reliability::kCheckpointModeNames.from_valid(r.value<std::string>("checkpoint.mode"));
  rel.snapshot_bandwidth = r.value<BytesPerSecond>("checkpoint.snapshot_bandwidth");
  rel.restart_overhead = r.value<Seconds>("checkpoint.restart_overhead");
  rel.spare_nodes = r.get_or<int64_t>("checkpoint.spare_nodes", -1);
  rel.repair_time = r.value<Seconds>("checkpoint.repair_time");
  rel.elastic = r.value<bool>("checkpoint.elastic");
}

}  // namespace dtsim::scenario_binding
