#include "core/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/text.h"
#include "core/hardware/cluster.h"
#include "core/report/json_numbers.h"

namespace dtsim {

namespace {

// Float noise: a result that is a difference of sums (the breakdown's `other`, a category freed
// to nothing) comes out as 8.9e-16 where it is 0. One rule cleans it, here and nowhere else: a
// value whose magnitude is at most kNoiseTolerance times the section's scale (the step time for
// breakdown_s, else the largest magnitude in the section) is written as 0. Doubles that hold a
// whole number exactly (byte and parameter counts) are written as integers (json_numbers.h).
// Sections of counts (model, communication, config) hold sums of whole numbers, not differences,
// and get scale 0: their small entries (a 4-byte flag all-reduce next to 10 GB of gradients) are
// real.
constexpr double kNoiseTolerance = 1e-9;

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
  if (j.is_number_float()) j = as_json_number(without_noise(j.get<double>(), scale));
}

// The reliability section (docs/design.md section 5): the whole run's figures, when one was run.
nlohmann::json reliability_json(const std::optional<reliability::RunReport>& rel) {
  using nlohmann::json;
  // No failure model: every step counts, so goodput is 1 by definition.
  if (!rel) return {{"modelled", false}, {"goodput", 1.0}, {"expected_interruptions", 0.0}};
  const reliability::RunOutcome& o = rel->outcome;
  json by_cause = json::object(), parts = json::object();
  for (const auto& c : reliability::kComponentClassNames) {
    by_cause[std::string(c.name)] = o.interruptions_by_cause[static_cast<size_t>(c.value)];
    parts[std::string(c.name)] = rel->components[static_cast<size_t>(c.value)];
  }
  json j = {
      {"modelled", true},
      {"goodput", o.goodput},
      {"expected_interruptions", rel->expected_interruptions},
      {"interruptions", o.interruptions},
      {"interruptions_by_cause", by_cause},
      {"components", parts},
      {"steps", rel->steps},
      {"time_to_train_s", o.time_to_train.value()},
      {"failure_free_time_s", rel->failure_free_time.value()},
      {"useful_s", o.useful.value()},
      {"lost_s",
       {{"rework", o.lost.rework.value()},
        {"detection", o.lost.detection.value()},
        {"restart", o.lost.restart.value()},
        {"checkpoint", o.lost.checkpoint.value()},
        {"repair_wait", o.lost.repair_wait.value()},
        {"elastic", o.lost.elastic.value()}}},
      {"checkpoint_mode", std::string(reliability::kCheckpointModeNames.to_string(rel->mode))},
      {"checkpoint_bytes", rel->checkpoint_size.value()},
      {"checkpoint_write_s", rel->checkpoint_write.value()},
      {"checkpoint_stall_s", rel->checkpoint_stall.value()},
      {"checkpoint_interval_s", rel->checkpoint_interval.value()},
      {"checkpoint_interval_steps", rel->interval_steps},
      {"checkpoint_interval_source", rel->interval_steps == 0      ? "none"
                                     : rel->interval_is_young_daly ? "young-daly"
                                                                   : "scenario"},
      {"checkpoints_written", o.checkpoints_written},
      {"spares_used", o.spares_used},
      {"final_data_parallel", o.final_data_parallel},
      {"step_time_p50_s", o.step_time_p50.value()},
      {"step_time_p90_s", o.step_time_p90.value()},
      {"step_time_p99_s", o.step_time_p99.value()}};
  // Without random failures the job's MTBF and the optimal intervals are infinite: left out.
  if (std::isfinite(rel->job_mtbf.value())) {
    j["job_mtbf_s"] = rel->job_mtbf.value();
    j["young_daly_interval_s"] = rel->young_daly_interval.value();
    j["daly_interval_s"] = rel->daly_interval.value();
  }
  return j;
}

}  // namespace

nlohmann::json interval_json(const StepTimeInterval& interval) {
  nlohmann::json j = {
      {"coverage", interval.coverage}, {"runs", interval.runs}, {"basis", interval.basis}};
  if (interval.runs > 0) {  // no band is invented where no comparable runs exist
    j["low"] = interval.low_s;
    j["high"] = interval.high_s;
  }
  return j;
}

std::string describe_interval(const StepTimeInterval& interval) {
  if (interval.runs == 0) return interval.basis;
  return format_number("%.0f%% interval ", 100 * interval.coverage) +
         format_duration(Seconds(interval.low_s)) + " to " +
         format_duration(Seconds(interval.high_s)) + ", from " + std::to_string(interval.runs) +
         " comparable published runs";
}

double without_noise(double value, double scale) {
  return std::fabs(value) <= kNoiseTolerance * scale ? 0.0 : value;
}

// config: every resolved setting, the fabrics as the run used them.
nlohmann::json config_json(const Results& r) {
  nlohmann::json c = {{"gpus", r.gpus},
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
  if (!r.profile.empty()) c["profile"] = r.profile;
  // The fabrics as the run used them (catalog, inline fields, --set and profile applied).
  c["intra_node"] = {{"name", r.intra_node.name},
                     {"bandwidth_bytes_per_s", r.intra_node.bandwidth_bytes_per_s},
                     {"latency_s", r.intra_node.latency_s}};
  c["network"] = {{"name", r.network.name},
                  {"kind", r.network.kind},
                  {"topology", r.network.topology},
                  {"nics_per_node", r.network.nics_per_node},
                  {"nic_bandwidth_bytes_per_s", r.network.bandwidth_bytes_per_s},
                  {"latency_s", r.network.latency_s},
                  {"oversubscription", r.network.oversubscription}};
  return c;
}

namespace {

nlohmann::json energy_json(const StepEnergy& e) {
  if (!e.modelled) return {{"modelled", false}, {"why_not", e.not_modelled}};
  return {{"modelled", true},
          {"gpu_utilisation", e.gpu_utilisation},
          {"gpu_power_w", e.gpu_power_w},
          {"node_power_w", e.node_power_w},
          {"network_power_w", e.network_power_w},
          {"it_power_w", e.it_power_w},
          {"pue", e.pue},
          {"facility_power_w", e.facility_power_w},
          {"energy_per_step_j", e.energy_per_step_j},
          {"approximation", kEnergyApproximation}};
}

nlohmann::json run_json(const RunTotals& t) {
  nlohmann::json j = {
      {"steps", t.steps}, {"time_to_train_s", t.time_to_train_s}, {"gpu_hours", t.gpu_hours}};
  if (t.price_per_gpu_hour) {
    j["price_per_gpu_hour"] = t.price_per_gpu_hour->amount;
    j["currency"] = t.price_per_gpu_hour->currency;
    j["cost"] = *t.cost;
  }
  if (t.energy_modelled) {
    j["energy_j"] = t.energy_j;
    j["energy_kwh"] = t.energy_j / 3.6e6;
    j["average_power_w"] = t.average_power_w;
  }
  if (t.carbon_g_per_kwh) {
    j["carbon_intensity_g_per_kwh"] = *t.carbon_g_per_kwh;
    if (t.emissions_kg) j["emissions_kg_co2e"] = *t.emissions_kg;
  }
  return j;
}

}  // namespace

nlohmann::json results_to_json(const Results& r) {
  using nlohmann::json;
  json j;
  j["engine"] = r.engine;
  j["scenario"] = r.scenario;
  j["source"] = r.source;
  j["step_time_s"] = r.step_time_s;
  if (r.step_time_interval) j["step_time_interval_s"] = interval_json(*r.step_time_interval);
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
  json per_stage = json::array();
  for (const StageMemory& stage : r.memory_per_stage) {
    json categories;
    for (int c = 0; c < kMemoryCategories; ++c)
      categories[std::string(to_string(static_cast<MemoryCategory>(c)))] =
          stage.per_category_bytes[static_cast<size_t>(c)];
    per_stage.push_back({{"stage", stage.stage},
                         {"rank", stage.rank},
                         {"peak_bytes", stage.peak_bytes},
                         {"per_category_bytes", categories},
                         {"weight_versions", stage.weight_versions},
                         {"weight_update_staleness", stage.weight_update_staleness()}});
  }
  j["memory"]["per_stage"] = per_stage;
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
  j["reliability"] = reliability_json(r.reliability);
  j["energy"] = energy_json(r.energy);
  if (r.run) j["run"] = run_json(*r.run);
  j["config"] = config_json(r);
  j["time_by_kind_s"] = r.time_by_kind_s;
  tidy(j["time_by_kind_s"], r.step_time_s);
  if (r.background)
    j["background"] = {
        {"link_fraction", r.background->link_fraction},
        {"this_job_share", r.background->this_job_share},
        {"other_jobs_share", r.background->link_fraction},
        {"nic_bandwidth_Bps", r.background->nic_bandwidth_Bps},
        {"other_jobs_nic_bandwidth_Bps", r.background->other_jobs_nic_bandwidth_Bps}};
  if (r.parameter_server) {
    const ParameterServerResults& ps = *r.parameter_server;
    nlohmann::json servers = nlohmann::json::array();
    for (const ServerLoad& l : ps.per_server)
      servers.push_back({{"server", l.server},
                         {"rank", l.rank},
                         {"node", l.node},
                         {"bytes_in_per_step", l.bytes_in_per_step},
                         {"bytes_out_per_step", l.bytes_out_per_step},
                         {"nic_in_busy_fraction", l.nic_in_busy_fraction},
                         {"nic_out_busy_fraction", l.nic_out_busy_fraction},
                         {"update_busy_fraction", l.update_busy_fraction}});
    j["parameter_server"] = {{"servers", ps.servers},
                             {"workers", ps.workers},
                             {"placement", ps.placement},
                             {"updates", ps.updates},
                             {"per_server", servers}};
    if (ps.updates == "async") {
      j["parameter_server"]["updates_per_s"] = ps.updates_per_s;
      j["parameter_server"]["staleness_histogram"] = ps.staleness_histogram;
      j["parameter_server"]["mean_staleness"] = ps.mean_staleness;
    }
  }
  if (r.background_job) {
    const BackgroundJob& b = *r.background_job;
    j["background_job"] = {{"scenario", b.scenario},
                           {"placement", b.placement},
                           {"nodes", b.nodes},
                           {"gpus", b.gpus},
                           {"step_time_s", b.step_time_s},
                           {"samples_per_s", b.samples_per_s},
                           {"tokens_per_s", b.tokens_per_s},
                           {"this_job_alone_step_time_s", b.this_job_alone_step_time_s},
                           {"this_job_slowdown", b.this_job_slowdown}};
  }
  if (const auto& m = r.measurement_conditions) {
    nlohmann::json c = {{"cpus", m->cpus},
                        {"compute_ops_compared", m->compute_ops_compared},
                        {"step_to_step_spread_median", m->spread_median},
                        {"step_to_step_spread_p90", m->spread_p90},
                        {"disturbed", m->disturbed},
                        {"summary", m->summary}};
    // Unknown figures (no /proc on this host) are left out rather than written as -1.
    if (m->load_before >= 0) c["load_average_before"] = m->load_before;
    if (m->load_after >= 0) c["load_average_after"] = m->load_after;
    if (m->steal_fraction >= 0) c["steal_fraction"] = m->steal_fraction;
    j["measurement_conditions"] = c;
  }
  j["notes"] = r.notes;  // an empty list when the engine made no approximation it must state
  tidy(j["step_time_s"], r.step_time_s);
  tidy(j["breakdown_s"], r.step_time_s);
  tidy(j["memory"], r.capacity_bytes);
  for (const char* section : {"throughput", "flops"})
    tidy(j[section], largest_magnitude(j[section]));
  // Times against the time to train; counts and fractions are whole or exact as they are.
  tidy(j["reliability"], r.reliability ? r.reliability->outcome.time_to_train.value() : 1.0);
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
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %-28s ", label);
  return buf + value + "\n";  // the value whole, however long
}
std::string pct(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f %%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

// A long time in the unit that reads best: "3.21 h (11556 s)".
std::string long_duration(Seconds t) {
  const double s = t.value();
  if (s >= 86400) return format_number("%.2f days", s / 86400) + format_number(" (%.0f s)", s);
  if (s >= 3600) return format_number("%.2f h", s / 3600) + format_number(" (%.0f s)", s);
  if (s >= 60) return format_number("%.1f min", s / 60) + format_number(" (%.0f s)", s);
  return format_duration(t);
}

std::string render_reliability(const reliability::RunReport& rel) {
  const reliability::RunOutcome& o = rel.outcome;
  const Seconds total = o.time_to_train;
  std::string out = "\n  reliability (whole run: " + std::to_string(rel.steps) + " steps)\n";
  out += line("  time to train",
              long_duration(total) + ", without failures " + long_duration(rel.failure_free_time));
  out += line("  goodput",
              format_number("%.1f %%", 100 * o.goodput) + "  (useful step time / wall time)");
  std::string causes;
  for (const auto& c : reliability::kComponentClassNames)
    if (const int64_t n = o.interruptions_by_cause[static_cast<size_t>(c.value)]; n > 0)
      causes += (causes.empty() ? ": " : ", ") + std::string(c.name) + " " + std::to_string(n);
  out += line("  interruptions", std::to_string(o.interruptions) +
                                     format_number(" (expected %.1f)", rel.expected_interruptions) +
                                     causes);
  const std::pair<const char*, Seconds> lost[] = {{"  lost to rework", o.lost.rework},
                                                  {"  lost to detection", o.lost.detection},
                                                  {"  lost to restarts", o.lost.restart},
                                                  {"  lost to checkpoints", o.lost.checkpoint},
                                                  {"  lost waiting for repair", o.lost.repair_wait},
                                                  {"  lost to elastic slowdown", o.lost.elastic}};
  for (const auto& [label, t] : lost)
    out += line(label, long_duration(t) + "  " + pct(t.value(), total.value()));
  out +=
      line("  checkpoint",
           format_bytes(rel.checkpoint_size) + ", write " + format_duration(rel.checkpoint_write) +
               ", stall " + format_duration(rel.checkpoint_stall) + " (" +
               std::string(reliability::kCheckpointModeNames.to_string(rel.mode)) + ")");
  out += line("  checkpoint interval",
              rel.interval_steps == 0
                  ? std::string("none")
                  : long_duration(rel.checkpoint_interval) + " = " +
                        std::to_string(rel.interval_steps) + " steps" +
                        (rel.interval_is_young_daly ? " (the Young/Daly optimum)" : ""));
  if (std::isfinite(rel.job_mtbf.value())) {
    out += line("  job MTBF", long_duration(rel.job_mtbf));
    out += line("  Young/Daly interval",
                long_duration(rel.young_daly_interval) +
                    " (sqrt(2 C M)); Daly 2006: " + long_duration(rel.daly_interval));
  }
  out += line("  step time p50 / p90 / p99", format_duration(o.step_time_p50) + " / " +
                                                 format_duration(o.step_time_p90) + " / " +
                                                 format_duration(o.step_time_p99));
  return out;
}

// Power per step, and the whole run's time, GPU-hours, cost, energy and emissions.
std::string render_energy(const Results& r) {
  const StepEnergy& e = r.energy;
  std::string out = "\n  power and energy\n";
  if (!e.modelled) return out + line("  not modelled", e.not_modelled);
  out += line("  per GPU", format_power(Watts(e.gpu_power_w)) + " mean  (utilisation " +
                               format_number("%.1f %%", 100 * e.gpu_utilisation) + ")");
  out += line("  cluster", format_power(Watts(e.facility_power_w)) + " at the facility  (IT " +
                               format_power(Watts(e.it_power_w)) + " x PUE " +
                               format_number("%.2f", e.pue) + "; nodes " +
                               format_power(Watts(e.node_power_w)) + " each, network " +
                               format_power(Watts(e.network_power_w)) + ")");
  out += line("  energy per step", format_energy(Joules(e.energy_per_step_j)));
  out += line("  left out", kEnergyApproximation);
  if (!r.run) return out;
  const RunTotals& t = *r.run;
  out += "\n  whole run (" + std::to_string(t.steps) + " steps)\n";
  out += line("  time to train", long_duration(Seconds(t.time_to_train_s)));
  out += line("  GPU-hours", format_number("%.0f", t.gpu_hours));
  if (t.cost)
    out += line("  cost", format_money(Money{*t.cost, t.price_per_gpu_hour->currency}) + "  (" +
                              format_money(*t.price_per_gpu_hour) + " per GPU-hour)");
  if (t.energy_modelled)
    out += line("  energy", format_energy(Joules(t.energy_j)) + "  (mean " +
                                format_power(Watts(t.average_power_w)) + ")");
  if (t.emissions_kg)
    out += line("  emissions",
                (*t.emissions_kg >= 1e3 ? format_number("%.1f t CO2e", *t.emissions_kg / 1e3)
                                        : format_number("%.2f kg CO2e", *t.emissions_kg)) +
                    "  (" + format_number("%g g CO2e/kWh", *t.carbon_g_per_kwh) + ")");
  return out;
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
  out += line("step time",
              format_duration(Seconds(r.step_time_s)) +
                  (r.step_time_interval ? "  (" + describe_interval(*r.step_time_interval) + ")"
                                        : std::string()));
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
  // Asynchronous pipelines: the versions each stage keeps and how stale its updates are.
  if (std::any_of(r.memory_per_stage.begin(), r.memory_per_stage.end(),
                  [](const StageMemory& s) { return s.weight_versions > 1; })) {
    std::string versions, staleness;
    for (const StageMemory& s : r.memory_per_stage) {
      versions += (versions.empty() ? "" : ", ") + std::to_string(s.weight_versions);
      staleness += (staleness.empty() ? "" : ", ") + std::to_string(s.weight_update_staleness());
    }
    out += line("  weight versions by stage", versions);
    out += line("  update staleness by stage", staleness + " updates");
  }
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
  if (r.reliability) out += render_reliability(*r.reliability);
  out += render_energy(r);
  if (r.background) {
    const BackgroundShare& b = *r.background;
    out += "\n  network shared with other jobs (background.link_fraction)\n";
    out +=
        line("  this job", pct(b.this_job_share, 1) + " of every network link, " +
                               format_bandwidth(BytesPerSecond(b.nic_bandwidth_Bps)) + " per NIC");
    out += line("  other jobs",
                pct(b.link_fraction, 1) + " of every network link, " +
                    format_bandwidth(BytesPerSecond(b.other_jobs_nic_bandwidth_Bps)) + " per NIC");
  }
  if (r.parameter_server) {
    const ParameterServerResults& ps = *r.parameter_server;
    out += "\n  parameter servers (" + std::to_string(ps.servers) + " " + ps.placement + ", " +
           ps.updates + " updates, " + std::to_string(ps.workers) + " workers)\n";
    for (const ServerLoad& l : ps.per_server)
      out +=
          line(("  server " + std::to_string(l.server) + " (rank " + std::to_string(l.rank) + ")")
                   .c_str(),
               format_bytes(Bytes(l.bytes_in_per_step)) + " in, " +
                   format_bytes(Bytes(l.bytes_out_per_step)) + " out per step; NIC in " +
                   pct(l.nic_in_busy_fraction, 1) + ", out " + pct(l.nic_out_busy_fraction, 1) +
                   ", update " + pct(l.update_busy_fraction, 1) + " busy");
    if (ps.updates == "async")
      out += line("  staleness", "mean " + format_number("%.2f", ps.mean_staleness) +
                                     " updates missed; " + format_number("%.4g", ps.updates_per_s) +
                                     " updates/s");
  }
  if (r.background_job) {
    const BackgroundJob& b = *r.background_job;
    out += "\n  cluster shared with a second job (background.scenario)\n";
    out += line("  other job", b.scenario + ", " + std::to_string(b.gpus) + " GPUs on " +
                                   std::to_string(b.nodes) + " nodes (" + b.placement + ")");
    out += line("  other job step time", format_duration(Seconds(b.step_time_s)));
    out += line("  this job alone",
                format_duration(Seconds(b.this_job_alone_step_time_s)) +
                    " per step; shared: " + format_number("%.3f", b.this_job_slowdown) + "x");
  }
  if (const auto& m = r.measurement_conditions)
    out += "\n  measured " + std::string(m->disturbed ? "on a DISTURBED machine" : "undisturbed") +
           ": " + m->summary + "\n";
  if (!r.notes.empty()) {
    out += "\n  notes (approximations of the " + r.engine +
           " engine, settings set aside, figures assumed)\n";
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

void add_whole_run(nlohmann::json& trace, const reliability::RunReport& run) {
  using nlohmann::json;
  // A process id no node has (nodes count from 0 and stay far below it).
  constexpr int kWholeRunPid = 1 << 30;
  json& events = trace["traceEvents"];
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", kWholeRunPid},
                    {"tid", 0},
                    {"args", {{"name", "whole run: failures and restarts"}}}});
  for (const reliability::Interruption& i : run.outcome.log) {
    const std::string cause(reliability::to_string(i.cause));
    events.push_back({{"ph", "X"},
                      {"name", cause + " failure: detection and restart"},
                      {"cat", "failure"},
                      {"pid", kWholeRunPid},
                      {"tid", 0},
                      {"ts", i.at.value() * 1e6},
                      {"dur", (i.resumed - i.at).value() * 1e6},
                      {"args", {{"cause", cause}, {"rework_s", i.rework.value()}}}});
  }
}

}  // namespace dtsim
