// How much two devices computed at the same time, from the profiler's events: the proof that a
// pipeline's stages overlap (each device's compute lanes merged into busy intervals, then
// intersected).
//
//   tandem::profiler::start();  ...one step...;  nd::waitall();  tandem::profiler::stop();
//   StageOverlap o = stage_overlap(tandem::profiler::events(), tandem::sim(0), tandem::sim(1));
//   o.both_s / std::min(o.first_s, o.second_s);   // 1: the shorter stage ran entirely in overlap
#pragma once

#include <tandem/profiler.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "busy_intervals.h"

namespace tandem::examples {

struct StageOverlap {
  double first_s = 0;   // time the first device's compute lanes were busy
  double second_s = 0;  // the same for the second device
  double both_s = 0;    // time both were busy at once
  double wall_s = 0;    // first start to last end of either device's compute
};

// The union of the compute intervals of `device`.
inline std::vector<Interval> compute_busy_intervals(const std::vector<profiler::OpEvent>& events,
                                                    Device device) {
  std::vector<Interval> intervals;
  for (const profiler::OpEvent& event : events) {
    if (event.device == device && event.queue == Queue::compute && !event.skipped) {
      intervals.emplace_back(event.start_ns, event.end_ns);
    }
  }
  return interval_union(std::move(intervals));
}

inline StageOverlap stage_overlap(const std::vector<profiler::OpEvent>& events, Device first,
                                  Device second) {
  const std::vector<Interval> a = compute_busy_intervals(events, first);
  const std::vector<Interval> b = compute_busy_intervals(events, second);
  StageOverlap overlap;
  overlap.first_s = static_cast<double>(total_length(a)) * 1e-9;
  overlap.second_s = static_cast<double>(total_length(b)) * 1e-9;
  overlap.both_s = static_cast<double>(overlap_length(a, b)) * 1e-9;
  if (!a.empty() && !b.empty()) {
    overlap.wall_s = static_cast<double>(std::max(a.back().second, b.back().second) -
                                         std::min(a.front().first, b.front().first)) *
                     1e-9;
  }
  return overlap;
}

}  // namespace tandem::examples
