// Overlap efficiency of a run from the profiler's op events.
//
// Lanes are grouped by what can work at the same time: the whole CPU is one lane (its workers
// share the cores), and each queue of an accelerator is one lane (its compute streams share the
// device; each copy direction has its own engine). A lane's busy time is the union of its ops'
// [start, end) intervals; the wall is first start to last end.
//
//   efficiency = (sum of lane busy - wall) / (sum of lane busy - max lane busy)
//
// 1 when the lanes ran completely side by side (wall = the busiest lane), 0 when they ran one
// after the other (wall = the sum).
#pragma once

#include <string>
#include <vector>

#include "tandem/profiler.h"

namespace tandem::bench {

struct LaneOverlap {
  double wall_s = 0;
  double busy_sum_s = 0;
  double busy_max_s = 0;
  double efficiency = 0;
  std::vector<std::string> lanes;
};

LaneOverlap lane_overlap(const std::vector<profiler::OpEvent>& events);

}  // namespace tandem::bench
