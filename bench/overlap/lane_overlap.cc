#include "lane_overlap.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace tandem::bench {

namespace {

std::string lane_of(const profiler::OpEvent& event) {
  if (!event.device.is_accelerator()) return "cpu";
  return to_string(event.device) + " " + queue_name(event.queue);
}

double union_seconds(std::vector<std::pair<std::int64_t, std::int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total_ns = 0;
  std::int64_t begin = 0, end = std::numeric_limits<std::int64_t>::min();
  for (const auto& [start, stop] : intervals) {
    if (start > end) {
      if (end > begin) total_ns += static_cast<double>(end - begin);
      begin = start;
      end = stop;
    } else {
      end = std::max(end, stop);
    }
  }
  if (end > begin) total_ns += static_cast<double>(end - begin);
  return total_ns * 1e-9;
}

}  // namespace

LaneOverlap lane_overlap(const std::vector<profiler::OpEvent>& events) {
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> lanes;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (const profiler::OpEvent& event : events) {
    if (event.skipped || event.end_ns <= event.start_ns) continue;
    lanes[lane_of(event)].emplace_back(event.start_ns, event.end_ns);
    first = std::min(first, event.start_ns);
    last = std::max(last, event.end_ns);
  }
  LaneOverlap result;
  if (lanes.empty()) return result;
  result.wall_s = static_cast<double>(last - first) * 1e-9;
  for (auto& [name, intervals] : lanes) {
    const double busy = union_seconds(std::move(intervals));
    result.busy_sum_s += busy;
    result.busy_max_s = std::max(result.busy_max_s, busy);
    result.lanes.push_back(name);
  }
  const double overlappable = result.busy_sum_s - result.busy_max_s;
  result.efficiency = overlappable > 0
                          ? std::clamp((result.busy_sum_s - result.wall_s) / overlappable, 0.0, 1.0)
                          : 0.0;
  return result;
}

}  // namespace tandem::bench
