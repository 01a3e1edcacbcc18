// Time intervals [start_ns, end_ns) from the profiler's events, and the arithmetic the overlap
// figures need: the union of a set of intervals, its length, and the length of the intersection
// of two unions (stage_overlap.h in pipeline_parallel, exchange_overlap.h in train_multi_device).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tandem::examples {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Sorted, disjoint intervals covering the same time as `intervals`.
inline std::vector<Interval> interval_union(std::vector<Interval> intervals) {
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

inline std::int64_t total_length(const std::vector<Interval>& disjoint) {
  std::int64_t total = 0;
  for (const Interval& interval : disjoint) total += interval.second - interval.first;
  return total;
}

// The length of the intersection of two sorted, disjoint interval lists.
inline std::int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t begin = std::max(a[i].first, b[j].first);
    const std::int64_t end = std::min(a[i].second, b[j].second);
    if (begin < end) total += end - begin;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

}  // namespace tandem::examples
