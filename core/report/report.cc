#include "core/report/report.h"
#include "core/base/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/hardware/cluster.h"

namespace dtsim {

namespace {

// Float noise: a result that is a difference of sums (the breakdown's `other`, a category freed
// to nothing) comes out as 8.9e-16 where it is 0. One rule cleans it, here and nowhere else: a
// value whose magnitude is at most kNoiseTolerance times the section's scale (the step time for
// breakdown_s, else the largest magnitude in the section) is written as 0. Doubles that hold a
// whole number exactly (byte and parameter counts) are written as integers. Sections of counts
// (model, communication, config) hold sums of whole numbers, not differences, and get scale 0:
// their small entries (a 4-byte flag all-reduce next to 10 GB of gradients) are real.
constexpr double kNoiseTolerance = 1e-9;
constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53

double largest_magnitude(const nlohmann::json& j) {
  double m = 0;
  if (j.is_number_float()) return std::fabs(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j) m = std::max(m, largest_magnitude(v));
  return m;
}

void tidy(nlohmann::json& j, double scale) {
  if (j.is_structured()) {
    for (auto& v : j) tidy(v, scale);
    return;
  }
  if (!j.is_number_float()) return;
  double v = j.get<double>();
  v = without_noise(v, scale);
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) <= kLargestExactInteger)
    j = static_cast<int64_t>(v);
  else
    j = v;
}

}  // namespace

double without_noise(double value, double scale) {
  return std::fabs(value) <= kNoiseTolerance * scale ? 0.0 : value;
}

nlohmann::json results_to_json(const Results& r) {
  using nlohmann::json;
  json j;
  j["engine"] = r.engine;
  j["scenario"] = r.scenario;
  j["source"] = r.source;
  j["step_time_s"] = r.step_time_s;
  j["throughput"] = {{"samples_per_s", r.samples_per_s}, {"tokens_per_s", r.tokens_per_s}};
  j["flops"] = {{"model_tflops_per_gpu", r.model_tflops_per_gpu},
                {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
                {"mfu", r.mfu},
                {"hfu", r.hfu}};
  j["breakdown_s"] = {{"compute", r.breakdown_s.compute},
                      {"exposed_communication", r.breakdown_s.exposed_communication},
                      {"pipeline_bubble", r.breakdown_s.pipeline_bubble},
                      {"straggler_wait", r.breakdown_s.straggler_wait},
                      {"other", r.breakdown_s.other}};
  json per_category;
  for (int c = 0; c < kMemoryCategories; ++c)
    per_category[std::string(to_string(static_cast<MemoryCategory>(c)))] =
        r.per_category_bytes[static_cast<size_t>(c)];
  j["memory"] = {{"peak_bytes_per_gpu", r.peak_bytes_per_gpu},
                 {"capacity_bytes", r.capacity_bytes},
                 {"fits", r.fits},
                 {"per_category_bytes", per_category}};
  json other_layers = json::array();
  for (const auto& l : r.layers.other)
    other_layers.push_back({{"name", l.name}, {"kind", l.kind}, {"parameters", l.parameters}});
  j["model"] = {{"parameters", r.parameters},
                {"flops_per_step", r.model_flops_per_step},
                {"hardware_flops_per_step", r.hardware_flops_per_step},
                {"layers", r.layers.blocks},
                {"block_kind", r.layers.block_kind},
                {"other_layers", other_layers}};
  json groups = json::array();
  for (const auto& g : r.communication) {
    json kinds = json::object();
    for (const auto& k : g.per_kind)
      kinds[k.kind] = {
          {"count", k.count}, {"size_bytes", k.size_bytes}, {"bus_bytes", k.bus_bytes}};
    groups.push_back({{"name", g.name},
                      {"ranks", g.ranks},
                      {"groups", g.groups},
                      {"per_kind", kinds},
                      {"size_bytes", g.size_bytes},
                      {"bus_bytes", g.bus_bytes}});
  }
  j["communication"] = {{"per_group", groups},
                        {"size_bytes", r.communication_size_bytes},
                        {"bus_bytes", r.communication_bus_bytes}};
  // No failure model yet: every step counts, so goodput is 1 by definition.
  j["reliability"] = {{"modelled", false}, {"goodput", 1.0}, {"expected_interruptions", 0.0}};
  j["config"] = {{"gpus", r.gpus},
                 {"gpu", r.gpu},
                 {"precision", r.precision},
                 {"grad_dtype", r.grad_dtype},
                 {"tp", r.tp},
                 {"pp", r.pp},
                 {"dp", r.data_parallel},
                 {"cp", r.cp},
                 {"ep", r.ep},
                 {"sequence_parallel", r.sequence_parallel},
                 {"zero_stage", r.zero_stage},
                 {"schedule", r.schedule},
                 {"virtual_stages", r.virtual_stages},
                 {"micro_batch_size", r.micro_batch_size},
                 {"seq_length", r.seq_length},
                 {"recompute", r.recompute},
                 {"optimizer", r.optimizer},
                 {"framework", r.framework},
                 {"engine", r.engine},
                 {"fidelity", r.fidelity},
                 {"data_parallel", r.data_parallel},
                 {"micro_batches", r.micro_batches},
                 {"global_batch_size", r.global_batch_size},
                 {"iterations", r.iterations}};
  // Only with a profile, so results of catalog hardware keep their shape.
  if (!r.profile.empty()) j["config"]["profile"] = r.profile;
  j["time_by_kind_s"] = r.time_by_kind_s;
  tidy(j["time_by_kind_s"], r.step_time_s);
  j["notes"] = r.notes;  // an empty list when the engine made no approximation it must state
  tidy(j["step_time_s"], r.step_time_s);
  tidy(j["breakdown_s"], r.step_time_s);
  tidy(j["memory"], r.capacity_bytes);
  for (const char* section : {"throughput", "flops", "reliability"})
    tidy(j[section], largest_magnitude(j[section]));
  for (const char* section : {"model", "communication", "config"}) tidy(j[section], 0);
  return j;
}

std::string format_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e9) return format_number("%.2f B", n / 1e9);
  if (a >= 1e6) return format_number("%.1f M", n / 1e6);
  if (a >= 1e3) return format_number("%.1f K", n / 1e3);
  return format_number("%.0f", n);
}

std::string describe_layers(const LayerCounts& c) {
  std::string s = std::to_string(c.blocks) + " " +
                  (c.per_kind.size() == 1 ? c.block_kind + " " : std::string()) +
                  (c.blocks == 1 ? "block" : "blocks");
  if (c.per_kind.size() > 1) {
    s += " (";
    for (size_t i = 0; i < c.per_kind.size(); ++i)
      s += (i ? ", " : "") + std::to_string(c.per_kind[i].second) + " " + c.per_kind[i].first;
    s += ")";
  }
  if (!c.other.empty()) {
    s += " (+ ";
    for (size_t i = 0; i < c.other.size(); ++i) s += (i ? ", " : "") + c.other[i].name;
    s += ")";
  }
  return s;
}

namespace {
std::string line(const char* label, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-28s %s\n", label, value.c_str());
  return buf;
}
std::string pct(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f %%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}
}  // namespace

std::string render_summary(const Results& r) {
  std::string out;
  // Names come from the scenario: a terminal escape sequence in one is shown, not obeyed.
  out += "dtsim: " + printable(r.scenario, 200) + "  (engine: " + r.engine +
         (r.source == "measured" ? ", measured" : "") + ")\n";
  out +=
      line("cluster", std::to_string(r.gpus) + " x " + printable(r.gpu, 200) + ", " + r.precision);
  out += line("parallelism", r.parallelism);
  out += line("batch", std::to_string(r.global_batch_size) + " samples/step, " +
                           std::to_string(r.micro_batches) + " micro-batches per replica");
  out += "\n";
  out += line("step time", format_duration(Seconds(r.step_time_s)));
  out += line("throughput", format_number("%.1f samples/s", r.samples_per_s) + ", " +
                                format_number("%.0f tokens/s", r.tokens_per_s));
  out += line("model FLOPs per GPU",
              format_flop_rate(FlopsPerSecond(r.model_tflops_per_gpu * 1e12)) + "  (MFU " +
                  format_number("%.1f %%", 100 * r.mfu) + " of dense " + r.precision + " peak)");
  out += line("hardware FLOPs per GPU",
              format_flop_rate(FlopsPerSecond(r.hardware_tflops_per_gpu * 1e12)) + "  (HFU " +
                  format_number("%.1f %%", 100 * r.hfu) + " of dense " + r.precision + " peak)");
  out += "\n  where the step goes\n";
  Breakdown b = r.breakdown_s;  // the JSON's noise rule, so both say 0 where it is 0
  for (double* part :
       {&b.compute, &b.exposed_communication, &b.pipeline_bubble, &b.straggler_wait, &b.other})
    *part = without_noise(*part, r.step_time_s);
  out +=
      line("  compute", format_duration(Seconds(b.compute)) + "  " + pct(b.compute, r.step_time_s));
  out += line("  exposed communication", format_duration(Seconds(b.exposed_communication)) + "  " +
                                             pct(b.exposed_communication, r.step_time_s));
  out += line("  pipeline bubble", format_duration(Seconds(b.pipeline_bubble)) + "  " +
                                       pct(b.pipeline_bubble, r.step_time_s));
  out += line("  straggler wait", format_duration(Seconds(b.straggler_wait)) + "  " +
                                      pct(b.straggler_wait, r.step_time_s));
  out += line("  other (idle, launch gaps)",
              format_duration(Seconds(b.other)) + "  " + pct(b.other, r.step_time_s));
  out += "\n  memory per GPU\n";
  for (int c = 0; c < kMemoryCategories; ++c)
    out += line(("  " + std::string(to_string(static_cast<MemoryCategory>(c)))).c_str(),
                format_bytes(Bytes(r.per_category_bytes[static_cast<size_t>(c)])));
  out += line("  peak", format_bytes(Bytes(r.peak_bytes_per_gpu)) + " of " +
                            format_bytes(Bytes(r.capacity_bytes)) +
                            (r.fits ? "  (fits)" : "  (DOES NOT FIT)"));
  if (!r.communication.empty()) {
    char buf[256];
    out +=
        "\n  communication per GPU per step (size: nccl-tests operation size; bus: bytes on "
        "the links)\n";
    std::snprintf(buf, sizeof buf, "    %-9s %6s  %-15s %6s %12s %12s\n", "group", "ranks", "kind",
                  "ops", "size", "bus");
    out += buf;
    for (const auto& g : r.communication)
      for (const auto& k : g.per_kind) {
        std::snprintf(buf, sizeof buf, "    %-9s %6d  %-15s %6lld %12s %12s\n", g.name.c_str(),
                      g.ranks, k.kind.c_str(), static_cast<long long>(k.count),
                      format_bytes(Bytes(k.size_bytes)).c_str(),
                      format_bytes(Bytes(k.bus_bytes)).c_str());
        out += buf;
      }
    std::snprintf(buf, sizeof buf, "    %-9s %6s  %-15s %6s %12s %12s\n", "total", "", "", "",
                  format_bytes(Bytes(r.communication_size_bytes)).c_str(),
                  format_bytes(Bytes(r.communication_bus_bytes)).c_str());
    out += buf;
  }
  out += "\n";
  out += line("model", r.model_name + ": " + describe_layers(r.layers));
  out += line("model parameters", format_count(r.parameters));
  out += line("model FLOPs per step", format_flops(Flops(r.model_flops_per_step)));
  if (!r.notes.empty()) {
    out += "\n  notes (approximations of the " + r.engine + " engine)\n";
    for (const auto& n : r.notes) out += "    - " + n + "\n";
  }
  return out;
}

nlohmann::json chrome_trace(const Trace& trace, const Job& job, const Cluster& cluster,
                            const ModelGraph& model) {
  using nlohmann::json;
  json events = json::array();
  constexpr int kTidsPerRank = 64;  // streams per rank never approach this
  for (const auto& p : job.programs) {
    const int node = cluster.node_of(p.rank);
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", node},
                      {"tid", 0},
                      {"args", {{"name", "node " + std::to_string(node)}}}});
    for (size_t s = 0; s < p.streams.size(); ++s) {
      const int tid = p.rank * kTidsPerRank + static_cast<int>(s);
      events.push_back(
          {{"ph", "M"},
           {"name", "thread_name"},
           {"pid", node},
           {"tid", tid},
           {"args", {{"name", "rank " + std::to_string(p.rank) + " " + p.streams[s].name}}}});
    }
  }
  for (const auto& span : trace.spans) {
    const Program* p = job.program_for(span.rank);
    if (!p) continue;
    const Op& op = p->streams[static_cast<size_t>(span.stream)].ops[span.op_index];
    json args = {{"phase", std::string(to_string(op.label.phase))}, {"iteration", span.iteration}};
    if (op.label.layer >= 0) {
      const int block = block_index(model, op.label.layer);
      if (block >= 0) args["layer"] = block;
      if (static_cast<size_t>(op.label.layer) < model.layers.size())
        args["layer_name"] = model.layers[static_cast<size_t>(op.label.layer)].name;
    }
    if (op.label.micro_batch >= 0) args["micro_batch"] = op.label.micro_batch;
    std::string cat = "compute";
    if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
      args["flops"] = c->flops.value();
      args["bytes"] = c->bytes.value();
    } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
      cat = std::string(to_string(c->kind));
      args["bytes"] = span.moved.value();
      args["group"] = job.group(c->group).name;
    } else if (const auto* s = std::get_if<SendOp>(&op.body)) {
      cat = "send";
      args["bytes"] = span.moved.value();
      args["peer"] = s->peer;
    } else if (const auto* rcv = std::get_if<RecvOp>(&op.body)) {
      cat = "recv";
      args["bytes"] = span.moved.value();
      args["peer"] = rcv->peer;
    }
    events.push_back({{"ph", "X"},
                      {"name", op.label.name},
                      {"cat", cat},
                      {"pid", cluster.node_of(span.rank)},
                      {"tid", span.rank * kTidsPerRank + span.stream},
                      {"ts", span.start.value() * 1e6},
                      {"dur", (span.end - span.start).value() * 1e6},
                      {"args", args}});
  }
  // Stragglers: each wait for a slower member, on the stream of the collective it waited for.
  for (const auto& w : trace.straggler_waits) {
    const Program* p = job.program_for(w.rank);
    if (!p) continue;
    const Op& op = p->streams[static_cast<size_t>(w.stream)].ops[w.op_index];
    events.push_back({{"ph", "X"},
                      {"name", "straggler_wait"},
                      {"cat", "straggler_wait"},
                      {"pid", cluster.node_of(w.rank)},
                      {"tid", w.rank * kTidsPerRank + w.stream},
                      {"ts", w.start.value() * 1e6},
                      {"dur", (w.end - w.start).value() * 1e6},
                      {"args", {{"waited_for", op.label.name}, {"iteration", w.iteration}}}});
  }
  return json{{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"engine", trace.engine}, {"time_unit", "us"}}}};
}

}  // namespace dtsim
