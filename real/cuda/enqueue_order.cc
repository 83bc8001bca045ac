#include "real/cuda/enqueue_order.h"

#include <algorithm>

#include "core/base/error.h"

namespace dtsim::real::cuda {

std::string op_name(const Program& p, size_t s, size_t i) {
  const Op& op = p.streams[s].ops[i];
  std::string name = op.label.name.empty() ? "(unnamed)" : op.label.name;
  if (op.label.micro_batch >= 0)
    name += " (micro-batch " + std::to_string(op.label.micro_batch) + ")";
  return name + " [stream " + p.streams[s].name + ", op " + std::to_string(i) + "]";
}

std::vector<EnqueueStep> enqueue_order(const Program& p) {
  std::vector<EnqueueStep> order;
  order.reserve(p.op_count());
  std::vector<bool> recorded(static_cast<size_t>(std::max(0, p.num_events)), false);
  auto is_recorded = [&](EventId e) {
    return e >= 0 && static_cast<size_t>(e) < recorded.size() && recorded[static_cast<size_t>(e)];
  };
  std::vector<size_t> next(p.streams.size(), 0);
  for (;;) {
    bool progress = false, done = true;
    for (size_t s = 0; s < p.streams.size(); ++s) {
      if (next[s] >= p.streams[s].ops.size()) continue;
      done = false;
      const Op& op = p.streams[s].ops[next[s]];
      if (!std::all_of(op.waits.begin(), op.waits.end(), is_recorded)) continue;
      order.push_back(EnqueueStep{s, next[s]});
      if (op.record) {
        if (*op.record < 0 || static_cast<size_t>(*op.record) >= recorded.size())
          throw RuntimeError("the Program records event " + std::to_string(*op.record) + " in " +
                             op_name(p, s, next[s]) + ", but it has events 0 to " +
                             std::to_string(p.num_events - 1));
        recorded[static_cast<size_t>(*op.record)] = true;
      }
      ++next[s];
      progress = true;
    }
    if (done) return order;
    if (!progress) {
      std::string blocked;
      for (size_t s = 0; s < p.streams.size(); ++s)
        if (next[s] < p.streams[s].ops.size()) {
          std::string events;
          for (EventId e : p.streams[s].ops[next[s]].waits)
            if (!is_recorded(e)) events += (events.empty() ? "" : ", ") + std::to_string(e);
          blocked += "\n  " + op_name(p, s, next[s]) + " waits for event(s) " + events;
        }
      throw RuntimeError(
          "the Program cannot progress: these ops wait for events that no op before them "
          "records (a cycle of waits, or a missing record):" +
          blocked);
    }
  }
}

}  // namespace dtsim::real::cuda
