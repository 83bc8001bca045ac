#include "core/reliability/failures.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim::reliability {

Seconds job_mtbf(const std::vector<FailureProcess>& processes) {
  double rate_per_s = 0;
  for (const auto& p : processes)
    if (p.components > 0 && p.mtbf.value() > 0)
      rate_per_s += static_cast<double>(p.components) / p.mtbf.value();
  return Seconds(rate_per_s > 0 ? 1.0 / rate_per_s : INFINITY);
}

FailureSource::FailureSource(std::vector<FailureProcess> processes,
                             std::vector<ScriptedFailure> scripted, uint64_t seed)
    : processes_(std::move(processes)), scripted_(std::move(scripted)), rng_(seed) {
  std::stable_sort(scripted_.begin(), scripted_.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  for (size_t i = 0; i < processes_.size(); ++i) {
    const FailureProcess& p = processes_[i];
    if (p.components <= 0 || !(p.mtbf.value() > 0)) continue;
    if (p.distribution == FailureDistribution::kWeibull && p.shape <= 0)
      throw std::logic_error("a Weibull failure process needs a positive shape");
    const bool whole = p.distribution == FailureDistribution::kExponential;
    const int64_t draws = whole ? 1 : p.components;
    for (int64_t c = 0; c < draws; ++c)
      pending_.push(Pending{draw_s(p, whole), static_cast<int>(i)});
  }
}

double FailureSource::draw_s(const FailureProcess& p, bool whole_class) {
  // 1 - U is in (0, 1], so the logarithm is finite.
  const double u = 1.0 - std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const double e = -std::log(u);  // a unit exponential
  if (whole_class) return e * p.mtbf.value() / static_cast<double>(p.components);
  if (p.distribution == FailureDistribution::kExponential) return e * p.mtbf.value();
  // Weibull by inversion: scale x E^(1/k), with scale = mean / Gamma(1 + 1/k).
  const double scale_s = p.mtbf.value() / std::tgamma(1.0 + 1.0 / p.shape);
  return scale_s * std::pow(e, 1.0 / p.shape);
}

std::optional<FailureEvent> FailureSource::peek() const {
  std::optional<FailureEvent> next;
  if (!pending_.empty()) {
    const Pending& top = pending_.top();
    next = FailureEvent{Seconds(top.at_s), processes_[static_cast<size_t>(top.process)].component,
                        false};
  }
  if (next_scripted_ < scripted_.size() && (!next || scripted_[next_scripted_].at <= next->at)) {
    const ScriptedFailure& s = scripted_[next_scripted_];
    next = FailureEvent{s.at, s.component, true};
  }
  return next;
}

FailureEvent FailureSource::pop() {
  const std::optional<FailureEvent> next = peek();
  if (!next) throw std::logic_error("FailureSource::pop with no failure to come");
  if (next->scripted) {
    ++next_scripted_;
    return *next;
  }
  const Pending top = pending_.top();
  pending_.pop();
  const FailureProcess& p = processes_[static_cast<size_t>(top.process)];
  const bool whole = p.distribution == FailureDistribution::kExponential;
  pending_.push(Pending{top.at_s + draw_s(p, whole), top.process});
  return *next;
}

}  // namespace dtsim::reliability
