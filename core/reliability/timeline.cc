#include "core/reliability/timeline.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <string>

#include "core/base/error.h"

namespace dtsim::reliability {
namespace {

class Run {
 public:
  Run(const RunPolicy& policy, FailureSource failures, uint64_t seed)
      : p_(policy),
        failures_(std::move(failures)),
        step_rng_(seed ^ 0x9e3779b97f4a7c15ULL),
        spares_left_(policy.spare_nodes),
        dp_now_(std::max(1, policy.data_parallel)) {}

  RunOutcome go() {
    const int64_t k = p_.interval_steps;
    while (done_ < p_.steps) {
      if (k > 0 && !p_.step_time_sampler && done_ % k == 0) bulk_periods();
      const int64_t boundary = k > 0 ? std::min(p_.steps, (done_ / k + 1) * k) : p_.steps;
      if (!run_steps(boundary - done_)) {
        on_failure();
        continue;
      }
      if (done_ == p_.steps) break;
      if (!checkpoint()) on_failure();
    }
    return outcome();
  }

 private:
  struct Segment {
    int64_t steps;
    double base_s;  // at full size
    double run_s;   // as run (elastic slowdown included)
  };

  double next_failure_s() const {
    const auto next = failures_.peek();
    return next ? next->at.value() : std::numeric_limits<double>::infinity();
  }

  // Moves the clock by d unless a failure comes first; either way the time spent goes to
  // `bucket`. False when a failure stopped it (the clock is then at the failure).
  bool advance(double d, Seconds& bucket) {
    const double nf = next_failure_s();
    if (t_ + d <= nf) {
      t_ += d;
      bucket += Seconds(d);
      return true;
    }
    bucket += Seconds(nf - t_);
    t_ = nf;
    return false;
  }

  // Whole checkpoint periods (k steps and a checkpoint) that end before the next failure, in
  // one jump: a 30-day run of short intervals is thousands of periods. Only at a checkpoint
  // boundary, with constant step times, and (async) when each write ends within the next period,
  // so that no checkpoint waits. It stops short of the run's last period, whose end has no
  // checkpoint; the step-by-step path below finishes it.
  void bulk_periods() {
    const int64_t k = p_.interval_steps;
    const double d = p_.step_time.value() * elastic_step_factor(p_.data_parallel, dp_now_);
    const double run_s = static_cast<double>(k) * d;
    const bool sync = p_.mode == CheckpointMode::kSync;
    const double write_s = p_.write_time.value();
    if (!sync && write_s > run_s) return;
    const double stall_s = sync ? write_s : p_.snapshot_time.value();
    const double period_s = run_s + stall_s;
    const int64_t most = (p_.steps - done_ - 1) / k;
    if (most < 2) return;
    refresh_async();
    if (!sync && pending_ && persist_end_s_ > t_ + run_s) return;
    const double nf = next_failure_s();
    const double fit =
        std::isfinite(nf) ? std::floor((nf - t_) / period_s) : static_cast<double>(most);
    const int64_t c = fit >= static_cast<double>(most) ? most : static_cast<int64_t>(fit);
    if (c < 2) return;
    const double base = p_.step_time.value();
    if (sync) {
      keep(c * k, static_cast<double>(c * k) * base, static_cast<double>(c) * run_s, d);
      make_durable(done_);
    } else {
      // Every write but the last ends within the period after it.
      keep((c - 1) * k, static_cast<double>((c - 1) * k) * base, static_cast<double>(c - 1) * run_s,
           d);
      make_durable(done_);
      keep(k, static_cast<double>(k) * base, run_s, d);
    }
    t_ += static_cast<double>(c) * period_s;
    lost_.checkpoint += Seconds(static_cast<double>(c) * stall_s);
    checkpoints_ += c;
    if (!sync) {
      pending_ = true;
      pending_steps_ = done_;
      persist_end_s_ = t_ + write_s;
    }
  }

  // n steps from done_; false when a failure stops them (partial_ holds the step under way).
  bool run_steps(int64_t n) {
    const double factor = elastic_step_factor(p_.data_parallel, dp_now_);
    if (!p_.step_time_sampler) {
      const double base = p_.step_time.value(), d = base * factor;
      const double nf = next_failure_s();
      if (t_ + static_cast<double>(n) * d <= nf) {
        keep(n, static_cast<double>(n) * base, static_cast<double>(n) * d, d);
        t_ += static_cast<double>(n) * d;
        return true;
      }
      // Whole steps before the failure, then the one it interrupts.
      const auto m = std::clamp<int64_t>(static_cast<int64_t>(std::floor((nf - t_) / d)), 0, n - 1);
      keep(m, static_cast<double>(m) * base, static_cast<double>(m) * d, d);
      t_ += static_cast<double>(m) * d;
      partial_s_ = nf - t_;
      t_ = nf;
      return false;
    }
    Segment seg{0, 0, 0};
    bool completed = true;
    for (int64_t i = 0; i < n; ++i) {
      const double base = p_.step_time_sampler(step_rng_).value(), d = base * factor;
      const double nf = next_failure_s();
      if (t_ + d > nf) {
        partial_s_ = nf - t_;
        t_ = nf;
        completed = false;
        break;
      }
      t_ += d;
      seg.steps += 1;
      seg.base_s += base;
      seg.run_s += d;
      samples_.emplace_back(d, 1);
    }
    if (seg.steps > 0) {
      ledger_.push_back(seg);
      done_ += seg.steps;
    }
    return completed;
  }

  void keep(int64_t n, double base_s, double run_s, double step_s) {
    if (n <= 0) return;
    ledger_.push_back(Segment{n, base_s, run_s});
    samples_.emplace_back(step_s, n);
    done_ += n;
  }

  // The steps up to `steps` are durable: they leave the ledger for the committed totals.
  void make_durable(int64_t steps) {
    while (!ledger_.empty() && durable_ + ledger_.front().steps <= steps) {
      durable_ += ledger_.front().steps;
      committed_base_s_ += ledger_.front().base_s;
      committed_run_s_ += ledger_.front().run_s;
      ledger_.pop_front();
    }
  }

  void refresh_async() {
    if (pending_ && persist_end_s_ <= t_) {
      make_durable(pending_steps_);
      pending_ = false;
    }
  }

  // False when a failure interrupts the checkpoint.
  bool checkpoint() {
    ++checkpoints_;
    if (p_.mode == CheckpointMode::kSync) {
      if (!advance(p_.write_time.value(), lost_.checkpoint)) return false;
      make_durable(done_);
      return true;
    }
    refresh_async();
    if (pending_ && !advance(persist_end_s_ - t_, lost_.checkpoint)) return false;
    refresh_async();
    if (!advance(p_.snapshot_time.value(), lost_.checkpoint)) return false;
    pending_ = true;
    pending_steps_ = done_;
    persist_end_s_ = t_ + p_.write_time.value();
    return true;
  }

  // Counts a failure, and sends a failed node to repair.
  void record(const FailureEvent& e) {
    ++interruptions_;
    if (interruptions_ > kMaxInterruptions)
      throw RunNeverEnds("the run had more than " + std::to_string(kMaxInterruptions) +
                         " interruptions without finishing: its failures come faster than it "
                         "can restart and checkpoint");
    ++by_cause_[static_cast<size_t>(e.component)];
    if (needs_node_replacement(e.component)) {
      ++nodes_needed_;
      repairs_.push(e.at.value() + p_.repair_time.value());
    }
  }

  // Time the job is down: failures in it are recorded and do not stop the clock.
  void downtime(double d, Seconds& bucket) {
    while (d > 0) {
      const double before = t_;
      if (advance(d, bucket)) return;
      d -= t_ - before;
      record(failures_.pop());
    }
  }

  void acquire_nodes() {
    while (nodes_needed_ > 0) {
      while (!repairs_.empty() && repairs_.top() <= t_) {
        repairs_.pop();
        if (spares_left_ >= 0) ++spares_left_;
      }
      if (spares_left_ != 0) {  // negative: unlimited
        if (spares_left_ > 0) --spares_left_;
        ++spares_used_;
        --nodes_needed_;
      } else if (p_.elastic && dp_now_ - p_.replicas_per_node >= 1) {
        dp_now_ -= p_.replicas_per_node;
        --nodes_needed_;
      } else {
        downtime(repairs_.top() - t_, lost_.repair_wait);
      }
    }
  }

  void on_failure() {
    const FailureEvent failure = failures_.pop();
    record(failure);
    refresh_async();
    pending_ = false;  // a write still running is lost with the job
    const Seconds rework_before = lost_.rework;
    for (const Segment& s : ledger_) lost_.rework += Seconds(s.run_s);
    lost_.rework += Seconds(partial_s_);
    const bool logged = log_.size() < kMaxLoggedInterruptions;
    if (logged)
      log_.push_back(Interruption{failure.at, failure.component, lost_.rework - rework_before});
    partial_s_ = 0;
    ledger_.clear();
    done_ = durable_;
    downtime(p_.detection_timeout.value(), lost_.detection);
    for (;;) {
      acquire_nodes();
      if (advance(p_.restart_overhead.value(), lost_.restart)) break;
      record(failures_.pop());
    }
    if (logged) log_.back().resumed = Seconds(t_);
  }

  RunOutcome outcome() {
    RunOutcome o;
    double base_s = committed_base_s_, run_s = committed_run_s_;
    for (const Segment& s : ledger_) {
      base_s += s.base_s;
      run_s += s.run_s;
    }
    lost_.elastic = Seconds(run_s - base_s);
    o.time_to_train = Seconds(t_);
    o.useful = Seconds(base_s);
    o.goodput = t_ > 0 ? base_s / t_ : 1;
    o.lost = lost_;
    o.interruptions_by_cause = by_cause_;
    o.interruptions = interruptions_;
    o.checkpoints_written = checkpoints_;
    o.spares_used = spares_used_;
    o.final_data_parallel = dp_now_;
    o.log = log_;
    std::sort(samples_.begin(), samples_.end());
    int64_t total = 0;
    for (const auto& s : samples_) total += s.second;
    auto quantile = [&](double q) {
      const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(total)));
      int64_t seen = 0;
      for (const auto& s : samples_) {
        seen += s.second;
        if (seen >= std::max<int64_t>(rank, 1)) return Seconds(s.first);
      }
      return Seconds(0);
    };
    o.step_time_p50 = quantile(0.50);
    o.step_time_p90 = quantile(0.90);
    o.step_time_p99 = quantile(0.99);
    return o;
  }

  const RunPolicy& p_;
  FailureSource failures_;
  std::mt19937_64 step_rng_;
  double t_ = 0;
  int64_t done_ = 0, durable_ = 0;
  std::deque<Segment> ledger_;  // kept steps after the durable checkpoint
  double committed_base_s_ = 0, committed_run_s_ = 0;
  double partial_s_ = 0;
  bool pending_ = false;
  double persist_end_s_ = 0;
  int64_t pending_steps_ = 0;
  int64_t spares_left_;
  std::priority_queue<double, std::vector<double>, std::greater<double>> repairs_;
  int64_t nodes_needed_ = 0, spares_used_ = 0;
  int dp_now_;
  LostTime lost_;
  std::array<int64_t, kComponentClasses> by_cause_{};
  int64_t interruptions_ = 0, checkpoints_ = 0;
  std::vector<std::pair<double, int64_t>> samples_;  // (step time s, steps)
  std::vector<Interruption> log_;
};

}  // namespace

RunOutcome simulate_run(const RunPolicy& policy, const std::vector<FailureProcess>& processes,
                        const std::vector<ScriptedFailure>& scripted, uint64_t seed) {
  if (policy.steps < 1) throw std::logic_error("simulate_run needs at least one step");
  if (!policy.step_time_sampler && !(policy.step_time.value() > 0))
    throw std::logic_error("simulate_run needs a positive step time");
  Run run(policy, FailureSource(processes, scripted, seed), seed);
  return run.go();
}

Seconds young_interval(Seconds checkpoint_cost, Seconds mtbf) {
  return Seconds(std::sqrt(2.0 * checkpoint_cost.value() * mtbf.value()));
}

Seconds daly_interval(Seconds checkpoint_cost, Seconds mtbf) {
  const double c = checkpoint_cost.value(), m = mtbf.value();
  if (c >= 2 * m) return mtbf;
  const double x = c / (2 * m);
  return Seconds(std::sqrt(2 * c * m) * (1 + std::sqrt(x) / 3 + x / 9) - c);
}

double first_order_goodput(Seconds checkpoint_cost, Seconds interval, Seconds mtbf,
                           Seconds recovery) {
  return 1 - (checkpoint_cost / interval + interval / (2 * mtbf) + recovery / mtbf);
}

}  // namespace dtsim::reliability
