#include "cli/plan_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/units.h"
#include "core/report/json_numbers.h"
#include "core/report/report.h"
#include "driver/child_process.h"
#include "driver/plan_search.h"
#include "driver/progress.h"

namespace dtsim::cli {
namespace {

// The plan's phases, each a counted bar (driver/progress.h).
class StderrPlanProgress : public driver::PlanProgress {
 public:
  void phase(const std::string& what, std::size_t total) override {
    bar_.reset();  // ends the previous phase's line first
    bar_ = std::make_unique<driver::CountedProgress>("plan: " + what, total, "configurations");
  }
  void advance(std::size_t done) override {
    if (bar_) bar_->advance(done);
  }

 private:
  std::unique_ptr<driver::CountedProgress> bar_;
};

std::string gib(double bytes) {
  return format_number("%.1f GiB", bytes / (1024.0 * 1024 * 1024));
}

// "16.8-19.6" (seconds), or "-" where no comparable published runs give an interval.
std::string interval_cell(const StepTimeInterval& i) {
  if (i.runs == 0) return "-";
  return format_number("%.3f", i.low_s) + "-" + format_number("%.3f", i.high_s);
}

nlohmann::json row_json(const driver::PlanRow& r) {
  nlohmann::json j{{"config", r.config.describe()},
                   {"tp", r.config.tp},
                   {"cp", r.config.cp},
                   {"pp", r.config.pp},
                   {"dp", r.config.dp},
                   {"ep", r.config.ep},
                   {"zero_stage", r.config.zero_stage},
                   {"micro_batch_size", r.config.micro_batch_size},
                   {"schedule", std::string(to_string(r.config.schedule))},
                   {"virtual_stages", r.config.virtual_stages},
                   {"recompute", std::string(to_string(r.config.recompute))},
                   {"overrides", r.config.overrides()},
                   {"analytic_step_time_s", r.analytic.step_time_s},
                   {"step_time_interval_s", interval_json(r.interval)},
                   {"peak_bytes_per_gpu", r.peak_bytes},
                   {"capacity_bytes", r.capacity_bytes},
                   {"headroom_bytes", r.capacity_bytes - r.peak_bytes},
                   {"simulated", r.simulated}};
  if (r.simulated) {
    j["step_time_s"] = r.step_time_s;
    j["mfu"] = r.mfu;
    j["tokens_per_s"] = r.tokens_per_s;
    j["breakdown_s"] = {{"compute", r.compute_s},
                        {"exposed_communication", r.exposed_communication_s},
                        {"pipeline_bubble", r.pipeline_bubble_s}};
    j["limited_by"] = r.limiter;
  } else if (!r.error.empty()) {
    j["error"] = r.error;
    if (r.over_memory) j["over_memory"] = true;
    if (r.misses_goal) j["misses_goal"] = true;
  }
  nlohmann::json run = {{"steps", r.run.steps},
                        {"time_to_train_s", r.run.time_to_train_s},
                        {"gpu_hours", r.run.gpu_hours},
                        {"from_simulation", r.run_from_simulation}};
  if (r.run.cost) run["cost"] = *r.run.cost;
  if (r.run.energy_j) run["energy_j"] = *r.run.energy_j;
  j["run"] = run;
  j["pareto"] = r.pareto;
  return j;
}

nlohmann::json report_json(const driver::PlanReport& rep) {
  nlohmann::json ranked = nlohmann::json::array(), misses = nlohmann::json::array();
  for (const auto& r : rep.ranked) ranked.push_back(row_json(r));
  for (const auto& r : rep.closest_misses)
    misses.push_back({{"config", r.config.describe()},
                      {"overrides", r.config.overrides()},
                      {"peak_bytes_per_gpu", r.peak_bytes},
                      {"capacity_bytes", r.capacity_bytes},
                      {"over_bytes", r.peak_bytes - r.capacity_bytes}});
  nlohmann::json j = {
      {"scenario", rep.scenario_name},
      {"model", rep.model},
      {"gpus", rep.gpus},
      {"gpu", rep.gpu},
      {"global_batch_size", rep.global_batch_size},
      {"capacity_bytes", rep.capacity_bytes},
      {"search",
       {{"enumerated", rep.enumerated},
        {"invalid", rep.invalid},
        {"invalid_by_key", rep.invalid_by_key},
        {"do_not_fit", rep.do_not_fit},
        {"do_not_fit_by_largest_category", rep.do_not_fit_by_category},
        {"fit", rep.fits},
        {"step_level_evaluations", rep.step_level_evaluations},
        {"engine_evaluations", rep.engine_evaluations},
        {"engine_ops", rep.engine_ops},
        {"engine_budget_ops", rep.engine_budget_ops},
        {"not_evaluated", rep.not_evaluated},
        {"analytic_wall_s", rep.analytic_wall_s},
        {"analytic_cpu_s", rep.analytic_cpu_s},
        {"step_level_cpu_s", rep.step_level_cpu_s},
        {"configs_per_s", rep.analytic_wall_s > 0
                              ? static_cast<double>(rep.enumerated) / rep.analytic_wall_s
                              : 0.0}}},
      {"closest_misses", misses},
      {"warnings", rep.warnings},
      {"rank_by", std::string(driver::kRankByNames.to_string(rep.rank_by))},
      {"objective", std::string(driver::kObjectiveNames.to_string(rep.goal.objective))},
      {"run_steps", rep.steps},
      {"miss_goal", rep.miss_goal},
      {"ranked", ranked}};
  if (rep.goal.deadline_s) j["deadline_s"] = *rep.goal.deadline_s;
  if (rep.goal.budget) j["budget"] = rep.goal.budget->amount;
  if (rep.price) {
    j["price_per_gpu_hour"] = rep.price->amount;
    j["currency"] = rep.price->currency;
  }
  whole_numbers_as_integers(j);
  return j;
}

// The whole run of each ranked configuration, side by side: time, GPU-hours, cost and energy, and
// the rows on the Pareto front of time and cost.
void render_runs(const driver::PlanReport& rep, std::ostream& out) {
  out << "\n  whole run: " << rep.steps << " steps";
  if (rep.goal.deadline_s) out << ", deadline " << driver::run_time_text(*rep.goal.deadline_s);
  if (rep.goal.budget) out << ", budget " << format_money(*rep.goal.budget);
  out << " (SimGrid's run where simulated; * on the Pareto front of time and cost)\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-2s  %16s %12s %16s %14s  %s\n", "#", "time to train",
                "GPU-hours", "cost", "energy", "front");
  out << line;
  int rank = 0;
  for (const auto& r : rep.ranked) {
    ++rank;
    const std::string cost =
        r.run.cost && rep.price ? format_money(Money{*r.run.cost, rep.price->currency}) : "-";
    const std::string energy = r.run.energy_j ? format_energy(Joules(*r.run.energy_j)) : "-";
    std::snprintf(line, sizeof line, "  %-2d  %16s %12.0f %16s %14s  %s\n", rank,
                  driver::run_time_text(r.run.time_to_train_s).c_str(), r.run.gpu_hours,
                  cost.c_str(), energy.c_str(), r.pareto ? "*" : "");
    out << line;
  }
}

void render(const driver::PlanReport& rep, const std::string& scenario,
            const std::vector<std::string>& overrides, std::ostream& out) {
  // The model is named beside the scenario: --set model.preset=... searches another one.
  out << "dtsim plan: " << printable(rep.scenario_name, 200) << ", model "
      << printable(rep.model, 200) << " (" << rep.gpus << " x " << rep.gpu << ", global batch "
      << rep.global_batch_size << ")\n";
  out << "  searched     " << rep.enumerated << " configurations in "
      << format_number("%.1f s", rep.analytic_wall_s) << " ("
      << format_number("%.0f", rep.analytic_wall_s > 0 ? rep.enumerated / rep.analytic_wall_s : 0)
      << " configs/s, " << format_number("%.1f s", rep.analytic_cpu_s) << " CPU)\n";
  out << "  invalid      " << rep.invalid;
  if (!rep.invalid_by_key.empty()) {
    out << " (refused by the scenario checks, by key:";
    bool first = true;
    for (const auto& [key, n] : rep.invalid_by_key) {
      out << (first ? " " : ", ") << key << " " << n;
      first = false;
    }
    out << ")";
  }
  out << "\n  no fit       " << rep.do_not_fit;
  if (!rep.do_not_fit_by_category.empty()) {
    out << " (over " << gib(rep.capacity_bytes) << "; largest at the peak:";
    bool first = true;
    for (const auto& [cat, n] : rep.do_not_fit_by_category) {
      out << (first ? " " : ", ") << cat << " " << n;
      first = false;
    }
    out << ")";
  }
  if (rep.not_evaluated > 0)
    out << "\n  skipped      " << rep.not_evaluated
        << " (ZeRO-3 configurations, built op by op, left when the analytic engine's budget of "
        << format_number("%.3g", rep.engine_budget_ops)
        << " ops ran out, the same on every run; pin them with --constraint "
           "parallelism.zero_stage=3 to rank them)";
  if (rep.miss_goal > 0)
    out << "\n  miss goal    " << rep.miss_goal << " (past the deadline or over the budget)";
  const char* objective = rep.goal.objective == driver::Objective::kCost     ? "the run's cost"
                          : rep.goal.objective == driver::Objective::kEnergy ? "the run's energy"
                          : rep.run_sized                                    ? "the time to train"
                                          : "the analytic step time";
  out << "\n  fit          " << rep.fits << ", ranked by " << objective
      << (rep.rank_by == driver::RankBy::kHigh ? " at the step's 80 % interval's upper end "
                                                 "(--rank-by high)"
                                               : "")
      << "; ";
  if (!rep.ranked.empty() && !rep.ranked.front().simulated && rep.ranked.front().error.empty())
    out << "the best " << rep.ranked.size() << " listed, none simulated (--analytic-only)\n";
  else
    out << "the best " << rep.ranked.size() << " simulated with SimGrid\n";
  if (!rep.closest_misses.empty()) {
    out << "  closest misses:\n";
    for (const auto& r : rep.closest_misses)
      out << "    " << r.config.describe() << ": " << gib(r.peak_bytes) << " per GPU, "
          << format_bytes(Bytes(r.peak_bytes - r.capacity_bytes)) << " over\n";
  }
  out << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-2s  %-66s %10s %15s %10s %6s %10s %10s  %s\n", "#",
                "config", "step (s)", "80% interval", "analytic", "MFU", "peak", "headroom",
                "limited by");
  out << line;
  int rank = 0;
  for (const auto& r : rep.ranked) {
    ++rank;
    if (!r.simulated) {
      const bool analytic_only = r.error.empty();
      std::snprintf(line, sizeof line, "  %-2d  %-66s %10s %15s %10.3f %6s %10s %10s  %s\n", rank,
                    r.config.describe().c_str(),
                    analytic_only   ? "-"
                    : r.over_memory ? "no fit"
                                    : "failed",
                    interval_cell(r.interval).c_str(), r.analytic.step_time_s, "-",
                    gib(r.peak_bytes).c_str(), gib(r.capacity_bytes - r.peak_bytes).c_str(),
                    printable(r.error, 120).c_str());
      out << line;
      continue;
    }
    const double step = r.step_time_s;
    std::string why = r.limiter;
    if (why == "communication")
      why += format_number(" (%.0f %% exposed)", 100 * r.exposed_communication_s / step);
    else if (why == "bubble")
      why += format_number(" (%.0f %% idle)", 100 * r.pipeline_bubble_s / step);
    else if (why == "memory")
      why += format_number(" (%.0f %% used)", 100 * r.peak_bytes / r.capacity_bytes);
    std::snprintf(line, sizeof line, "  %-2d  %-66s %10.3f %15s %10.3f %5.1f%% %10s %10s  %s\n",
                  rank, r.config.describe().c_str(), step, interval_cell(r.interval).c_str(),
                  r.analytic.step_time_s, 100 * r.mfu, gib(r.peak_bytes).c_str(),
                  gib(r.capacity_bytes - r.peak_bytes).c_str(), why.c_str());
    out << line;
  }
  if (rep.run_sized) render_runs(rep, out);
  for (const auto& w : rep.warnings) out << "\nwarning: " << w << "\n";
  if (!rep.ranked.empty() && (rep.ranked.front().simulated || rep.ranked.front().error.empty())) {
    const auto& best = rep.ranked.front();
    out << "\nbest: " << best.config.describe() << "\n  dtsim simulate "
        << printable(scenario, 200);
    for (const auto& o : overrides) out << " --set " << printable(o, 200);
    for (const auto& o : best.config.overrides()) out << " --set " << o;
    out << "\n";
  }
}

}  // namespace

int run_plan(const PlanOptions& o, std::ostream& out) {
  driver::PlanRequest req;
  req.scenario = o.scenario;
  req.overrides = o.overrides;
  for (const auto& c : o.constraints) req.constraints.push_back(driver::parse_plan_constraint(c));
  req.top = o.top;
  req.simulate = !o.analytic_only;
  const auto rank_by = driver::kRankByNames.parse(o.rank_by);
  if (!rank_by) {
    std::string choices;
    for (const auto& n : driver::kRankByNames.names()) choices += (choices.empty() ? "" : ", ") + n;
    throw InputError(
        Diagnostic{SourceLocation{}, "--rank-by",
                   "expected one of " + choices + ", found '" + printable(o.rank_by, 60) + "'"});
  }
  req.rank_by = *rank_by;
  const auto objective = driver::kObjectiveNames.parse(o.objective);
  if (!objective) {
    std::string choices;
    for (const auto& n : driver::kObjectiveNames.names())
      choices += (choices.empty() ? "" : ", ") + n;
    throw InputError(
        Diagnostic{SourceLocation{}, "--objective",
                   "expected one of " + choices + ", found '" + printable(o.objective, 60) + "'"});
  }
  req.goal.objective = *objective;
  if (!o.deadline.empty()) {
    const auto t = parse_duration(o.deadline);
    if (!t || t.value->value() <= 0)
      throw InputError(Diagnostic{SourceLocation{}, "--deadline",
                                  "expected a duration such as 30d or 720h, found '" +
                                      printable(o.deadline, 60) + "'" +
                                      (t ? std::string() : ": " + t.error)});
    req.goal.deadline_s = t.value->value();
  }
  if (!o.budget.empty()) {
    const auto b = parse_money(o.budget);
    if (!b) throw InputError(Diagnostic{SourceLocation{}, "--budget", b.error});
    req.goal.budget = *b.value;
  }
  req.jobs = o.jobs;
  req.dtsim = o.dtsim.empty() ? driver::self_executable() : o.dtsim;
  if (!o.timeout.empty()) {
    const auto t = parse_duration(o.timeout);
    if (!t || t.value->value() <= 0)
      throw InputError(Diagnostic{
          SourceLocation{}, "--timeout",
          "expected a duration such as 60s or 5min, found '" + printable(o.timeout, 60) + "'"});
    req.child_timeout_s = t.value->value();
  }
  {
    const auto t = parse_duration(o.max_search_time);
    if (!t || !(t.value->value() >= 0))
      throw InputError(Diagnostic{SourceLocation{}, "--max-search-time",
                                  "expected a duration such as 30min or 2h (0 for no limit), "
                                  "found '" +
                                      printable(o.max_search_time, 60) + "'"});
    req.max_search_s = t.value->value();
  }
  driver::PlanReport rep;
  {
    driver::KillChildrenOnInterrupt guard;
    StderrPlanProgress progress;
    req.progress = &progress;
    rep = driver::plan_search(req);
  }
  if (o.json)
    out << report_json(rep).dump(2) << "\n";
  else
    render(rep, o.scenario, o.overrides, out);
  return 0;
}

}  // namespace dtsim::cli
