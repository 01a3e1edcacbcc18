// Aggregates over profiled ops: per-name statistics and per-device overlap figures.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tandem/profiler.h"

namespace tandem::profiler {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;  // [start, end) in ns

// Sorted, disjoint intervals covering the same time as `intervals`.
std::vector<Interval> merge(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (i.second <= i.first) continue;
    if (!merged.empty() && i.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, i.second);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

std::int64_t length(const std::vector<Interval>& merged) {
  std::int64_t total = 0;
  for (const Interval& i : merged) total += i.second - i.first;
  return total;
}

// Time covered by both of two merged interval lists.
std::int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first);
    const std::int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

}  // namespace

std::vector<OpStats> op_stats(const std::vector<OpEvent>& events) {
  std::map<std::string, OpStats> by_name;
  for (const OpEvent& e : events) {
    OpStats& s = by_name[e.name];
    const double d = us(e.end_ns - e.start_ns);
    if (s.count == 0) {
      s.name = e.name;
      s.min_us = s.max_us = d;
    }
    ++s.count;
    s.total_us += d;
    s.min_us = std::min(s.min_us, d);
    s.max_us = std::max(s.max_us, d);
    s.kernels += e.counts.kernels;
    s.library_calls += e.counts.library_calls;
    s.allocations += e.counts.allocations;
  }
  std::vector<OpStats> out;
  for (auto& [name, s] : by_name) {
    s.mean_us = s.total_us / static_cast<double>(s.count);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const OpStats& a, const OpStats& b) { return a.total_us > b.total_us; });
  return out;
}

std::vector<DeviceOverlap> overlap(const std::vector<OpEvent>& events) {
  std::map<std::pair<int, int>, std::vector<const OpEvent*>> by_device;
  for (const OpEvent& e : events) {
    by_device[{static_cast<int>(e.device.kind), e.device.id}].push_back(&e);
  }
  std::vector<DeviceOverlap> out;
  for (const auto& [key, ops] : by_device) {
    DeviceOverlap o;
    o.device = ops.front()->device;
    std::vector<Interval> compute, h2d, d2h, other;
    std::map<std::string, std::vector<Interval>> lanes;
    std::int64_t first = ops.front()->start_ns, last = ops.front()->end_ns;
    for (const OpEvent* e : ops) {
      const Interval i{e->start_ns, e->end_ns};
      first = std::min(first, e->start_ns);
      last = std::max(last, e->end_ns);
      lanes[e->lane].push_back(i);
      switch (e->queue) {
        case Queue::compute:
          compute.push_back(i);
          break;
        case Queue::copy_h2d:
          h2d.push_back(i);
          break;
        case Queue::copy_d2h:
          d2h.push_back(i);
          break;
        default:
          other.push_back(i);
      }
    }
    const auto c = merge(compute), h = merge(h2d), d = merge(d2h), x = merge(other);
    o.wall_us = us(last - first);
    o.compute_us = us(length(c));
    o.h2d_us = us(length(h));
    o.d2h_us = us(length(d));
    o.other_us = us(length(x));
    o.compute_h2d_us = us(intersection(c, h));
    o.compute_d2h_us = us(intersection(c, d));
    o.h2d_d2h_us = us(intersection(h, d));
    for (auto& [lane, intervals] : lanes) {
      const double busy = us(length(merge(intervals)));
      o.lane_busy_sum_us += busy;
      o.lane_busy_max_us = std::max(o.lane_busy_max_us, busy);
    }
    const double room = o.lane_busy_sum_us - o.lane_busy_max_us;
    if (room > 0) {
      o.overlap_efficiency = std::clamp((o.lane_busy_sum_us - o.wall_us) / room, 0.0, 1.0);
    }
    out.push_back(o);
  }
  return out;
}

std::string summary(const std::vector<OpEvent>& events) {
  std::string text;
  char line[256];
  // Launches, library calls and allocations per call of the op, summed over its calls / count.
  std::snprintf(line, sizeof line, "%-28s %8s %12s %10s %10s %10s %8s %8s %8s\n", "op", "count",
                "total us", "mean us", "min us", "max us", "kern/op", "lib/op", "alloc/op");
  text += line;
  for (const OpStats& s : op_stats(events)) {
    const double calls = static_cast<double>(std::max<std::uint64_t>(s.count, 1));
    std::snprintf(
        line, sizeof line, "%-28.28s %8llu %12.1f %10.2f %10.2f %10.2f %8.2f %8.2f %8.2f\n",
        s.name.c_str(), static_cast<unsigned long long>(s.count), s.total_us, s.mean_us, s.min_us,
        s.max_us, static_cast<double>(s.kernels) / calls,
        static_cast<double>(s.library_calls) / calls, static_cast<double>(s.allocations) / calls);
    text += line;
  }
  text += "\n";
  std::snprintf(line, sizeof line, "%-8s %10s %10s %9s %9s %9s %10s %10s %9s %10s\n", "device",
                "wall us", "compute", "h2d", "d2h", "other", "comp&h2d", "comp&d2h", "h2d&d2h",
                "overlap");
  text += line;
  for (const DeviceOverlap& o : overlap(events)) {
    std::snprintf(
        line, sizeof line, "%-8s %10.1f %10.1f %9.1f %9.1f %9.1f %10.1f %10.1f %9.1f %10.3f\n",
        to_string(o.device).c_str(), o.wall_us, o.compute_us, o.h2d_us, o.d2h_us, o.other_us,
        o.compute_h2d_us, o.compute_d2h_us, o.h2d_d2h_us, o.overlap_efficiency);
    text += line;
  }
  text += "overlap = (sum of lane busy - wall) / (sum of lane busy - max lane busy)\n";
  return text;
}

std::string summary() {
  return summary(events());
}

}  // namespace tandem::profiler
