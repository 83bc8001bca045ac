// Level of detail for the timeline: the rectangles that draw one lane of a trace at one zoom,
// however many spans it holds. The timeline calls it for each visible lane on every paint, so a
// 100k-span trace paints in milliseconds (bench/results/gui-timeline.md).
//
// Contract:
// - lane_rects() visits only the spans that reach the visible range [start_us, start_us +
//   width_px x us_per_px]: a binary search finds the first (spans are sorted by start, and none
//   is longer than TraceLane::longest_us), and the walk stops at the first span past the end.
// - A span at least one pixel wide is its own rectangle. Narrower spans that lie within a pixel
//   of each other merge into one rectangle, coloured by the kind that covers most of its time
//   (a dense stretch of short kernels reads as compute, not as noise).
// - For spans that do not overlap, one lane gives at most 2 x (width_px + 1) rectangles: each
//   merged rectangle starts a pixel past the previous one, and each wide one is a pixel long.
// - x is in pixels from the range's start, clipped to [0, width_px]; a merged rectangle is at
//   least one pixel wide so that a lone short kernel stays visible.
#pragma once

#include <vector>

#include "gui/views/trace_model.h"

namespace dtsim::gui {

struct LaneRect {
  double x0_px = 0, x1_px = 0;
  SpanKind kind = SpanKind::kCompute;
  int span = -1;   // index into the lane's spans when the rectangle draws one span; else -1
  int merged = 1;  // spans drawn by this rectangle
};

// Appends the lane's rectangles to `out` (see the contract).
void lane_rects(const TraceLane& lane, double start_us, double us_per_px, int width_px,
                std::vector<LaneRect>& out);

}  // namespace dtsim::gui
