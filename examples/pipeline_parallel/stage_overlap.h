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
#include <cstdint>
#include <utility>
#include <vector>

namespace tandem::examples {

struct StageOverlap {
  double first_s = 0;   // time the first device's compute lanes were busy
  double second_s = 0;  // the same for the second device
  double both_s = 0;    // time both were busy at once
  double wall_s = 0;    // first start to last end of either device's compute
};

namespace detail {

using Interval = std::pair<std::int64_t, std::int64_t>;

// The union of the compute intervals of `device`, sorted and disjoint.
inline std::vector<Interval> busy_intervals(const std::vector<profiler::OpEvent>& events,
                                            Device device) {
  std::vector<Interval> intervals;
  for (const profiler::OpEvent& event : events) {
    if (event.device == device && event.queue == Queue::compute && !event.skipped) {
      intervals.emplace_back(event.start_ns, event.end_ns);
    }
  }
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

inline double total_s(const std::vector<Interval>& intervals) {
  std::int64_t ns = 0;
  for (const Interval& interval : intervals) ns += interval.second - interval.first;
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace detail

inline StageOverlap stage_overlap(const std::vector<profiler::OpEvent>& events, Device first,
                                  Device second) {
  const std::vector<detail::Interval> a = detail::busy_intervals(events, first);
  const std::vector<detail::Interval> b = detail::busy_intervals(events, second);
  StageOverlap overlap;
  overlap.first_s = detail::total_s(a);
  overlap.second_s = detail::total_s(b);
  std::int64_t both_ns = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::int64_t begin = std::max(a[i].first, b[j].first);
    const std::int64_t end = std::min(a[i].second, b[j].second);
    if (end > begin) both_ns += end - begin;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  overlap.both_s = static_cast<double>(both_ns) * 1e-9;
  if (!a.empty() && !b.empty()) {
    overlap.wall_s = static_cast<double>(std::max(a.back().second, b.back().second) -
                                         std::min(a.front().first, b.front().first)) *
                     1e-9;
  }
  return overlap;
}

}  // namespace tandem::examples
