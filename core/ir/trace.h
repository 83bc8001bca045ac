// Trace: what an executor observed, per rank and stream. Metrics and reports read only this.
//
// Contract:
// - One Span per executed op that takes time (compute, collective, send, recv), with simulated
//   (or measured) start and end in seconds from the start of the run. Spans of one stream never
//   overlap.
// - Memory: per simulated rank, the peak of live bytes and the split by category at that peak.
// - Simulator traces contain no wall-clock times, so identical inputs give identical traces.
// - notes: the approximations the engine made for this run that change its answer (one
//   sentence each, addressed to the user), for reports to print with the result.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/base/units.h"
#include "core/ir/program.h"

namespace dtsim {

enum class SpanKind { kCompute, kCollective, kSend, kRecv };

struct Span {
  Rank rank = 0;
  StreamId stream = 0;
  int iteration = 0;
  size_t op_index = 0;  // index into the stream's ops
  SpanKind kind = SpanKind::kCompute;
  Seconds start{0};
  Seconds end{0};
  // Collectives, sends and receives: the bytes the engine moved, in the op's own terms
  // (nccl-tests' size for a collective). A simulator moves the op's bytes; a real back end
  // reports what its library calls carried (whole elements), so a conformance check can see it.
  Bytes moved{0};
};

struct RankMemory {
  Rank rank = 0;
  Bytes peak{0};
  std::array<Bytes, kMemoryCategories> at_peak{};  // by MemoryCategory, summing to peak
};

struct Trace {
  std::string engine;
  int iterations = 1;
  std::vector<Span> spans;
  std::vector<RankMemory> memory;
  std::vector<Seconds> iteration_end;  // end of each iteration, max over ranks
  std::vector<std::string> notes;      // approximations made (see the contract above)
  // With perturbations (stragglers): each time a rank reached a collective and waited for a
  // slower member, from its arrival to the collective's start (the op it waited for).
  std::vector<Span> straggler_waits;
  Seconds makespan() const { return iteration_end.empty() ? Seconds(0) : iteration_end.back(); }
};

}  // namespace dtsim
