#include "core/report/report.h"

#include <cstdio>

#include "core/hardware/cluster.h"

namespace dtsim {

nlohmann::json results_to_json(const Results& r) {
  using nlohmann::json;
  json j;
  j["engine"] = r.engine;
  j["scenario"] = r.scenario;
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
  j["model"] = {{"parameters", r.parameters},
                {"flops_per_step", r.model_flops_per_step},
                {"hardware_flops_per_step", r.hardware_flops_per_step}};
  // No failure model yet: every step counts, so goodput is 1 by definition.
  j["reliability"] = {{"modelled", false}, {"goodput", 1.0}, {"expected_interruptions", 0.0}};
  j["config"] = {{"gpus", r.gpus},
                 {"gpu", r.gpu},
                 {"precision", r.precision},
                 {"data_parallel", r.data_parallel},
                 {"micro_batches", r.micro_batches},
                 {"global_batch_size", r.global_batch_size},
                 {"iterations", r.iterations}};
  return j;
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
  out += "dtsim: " + r.scenario + "  (engine: " + r.engine + ")\n";
  out += line("cluster", std::to_string(r.gpus) + " x " + r.gpu + ", " + r.precision);
  out += line("parallelism", r.parallelism);
  out += line("batch", std::to_string(r.global_batch_size) + " samples/step, " +
                           std::to_string(r.micro_batches) + " micro-batches per replica");
  out += "\n";
  out += line("step time", format_duration(Seconds(r.step_time_s)));
  out += line("throughput", format_number("%.1f samples/s", r.samples_per_s) + ", " +
                                format_number("%.0f tokens/s", r.tokens_per_s));
  out +=
      line("model FLOPs per GPU", format_flop_rate(FlopsPerSecond(r.model_tflops_per_gpu * 1e12)) +
                                      "  (MFU " + format_number("%.1f %%", 100 * r.mfu) + ")");
  out += line("hardware FLOPs per GPU",
              format_flop_rate(FlopsPerSecond(r.hardware_tflops_per_gpu * 1e12)) + "  (HFU " +
                  format_number("%.1f %%", 100 * r.hfu) + ")");
  out += "\n  where the step goes\n";
  const auto& b = r.breakdown_s;
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
  out += "\n";
  out += line("model parameters", format_number("%.3f B", r.parameters / 1e9));
  out += line("model FLOPs per step", format_flops(Flops(r.model_flops_per_step)));
  return out;
}

nlohmann::json chrome_trace(const Trace& trace, const Job& job, const Cluster& cluster) {
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
    if (op.label.layer >= 0) args["layer"] = op.label.layer;
    if (op.label.micro_batch >= 0) args["micro_batch"] = op.label.micro_batch;
    std::string cat = "compute";
    if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
      args["flops"] = c->flops.value();
      args["bytes"] = c->bytes.value();
    } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
      cat = std::string(to_string(c->kind));
      args["bytes"] = c->bytes.value();
      args["group"] = job.group(c->group).name;
    } else if (const auto* s = std::get_if<SendOp>(&op.body)) {
      cat = "send";
      args["bytes"] = s->bytes.value();
      args["peer"] = s->peer;
    } else if (const auto* rcv = std::get_if<RecvOp>(&op.body)) {
      cat = "recv";
      args["bytes"] = rcv->bytes.value();
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
  return json{{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"engine", trace.engine}, {"time_unit", "us"}}}};
}

}  // namespace dtsim
