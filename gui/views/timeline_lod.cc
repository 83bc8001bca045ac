#include "gui/views/timeline_lod.h"

#include <algorithm>
#include <array>

namespace dtsim::gui {
namespace {

// A run of sub-pixel spans being merged, with the time each kind covers in it.
struct MergedRun {
  bool open = false;
  double x0 = 0, x1 = 0;
  int count = 0;
  int first_span = -1;
  std::array<double, kSpanKinds> time_by_kind{};

  void start(double from, double to, const TraceSpan& s, int index) {
    open = true;
    x0 = from;
    x1 = to;
    count = 1;
    first_span = index;
    time_by_kind.fill(0);
    time_by_kind[static_cast<size_t>(s.kind)] = s.duration_us;
  }
  void add(double to, const TraceSpan& s) {
    x1 = std::max(x1, to);
    ++count;
    time_by_kind[static_cast<size_t>(s.kind)] += s.duration_us;
  }
  void close(double width_px, std::vector<LaneRect>& out) {
    if (!open) return;
    open = false;
    LaneRect r;
    r.x0_px = x0;
    r.x1_px = std::min(width_px, std::max(x1, x0 + 1));
    r.kind = static_cast<SpanKind>(std::max_element(time_by_kind.begin(), time_by_kind.end()) -
                                   time_by_kind.begin());
    r.span = count == 1 ? first_span : -1;
    r.merged = count;
    out.push_back(r);
  }
};

}  // namespace

void lane_rects(const TraceLane& lane, double start_us, double us_per_px, int width_px,
                std::vector<LaneRect>& out) {
  if (lane.spans.empty() || us_per_px <= 0 || width_px <= 0) return;
  const double end_us = start_us + width_px * us_per_px;
  const double width = width_px;
  auto it = std::lower_bound(lane.spans.begin(), lane.spans.end(), start_us - lane.longest_us,
                             [](const TraceSpan& s, double t) { return s.start_us < t; });
  MergedRun run;
  for (; it != lane.spans.end() && it->start_us < end_us; ++it) {
    const TraceSpan& s = *it;
    // A span that ends where the range starts is not in it (zero-length spans at the start are).
    if (s.end_us() < start_us || (s.duration_us > 0 && s.end_us() == start_us)) continue;
    const double x0 = std::max(0.0, (s.start_us - start_us) / us_per_px);
    const double x1 = std::min(width, (s.end_us() - start_us) / us_per_px);
    const int index = static_cast<int>(it - lane.spans.begin());
    if (x1 - x0 >= 1) {
      run.close(width, out);
      out.push_back(LaneRect{x0, x1, s.kind, index, 1});
      continue;
    }
    if (run.open && x0 < run.x1 + 1) {
      run.add(x1, s);
    } else {
      run.close(width, out);
      run.start(x0, x1, s, index);
    }
  }
  run.close(width, out);
}

}  // namespace dtsim::gui
