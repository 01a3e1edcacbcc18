// Wall-clock helpers shared by every workload.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace tandem::bench {

using Clock = std::chrono::steady_clock;
using Nanoseconds = std::chrono::duration<double, std::nano>;

inline Nanoseconds since(Clock::time_point start) {
  return Clock::now() - start;
}

// The median of `samples` (the mean of the middle two for an even count). The median, not the
// mean, because on a shared machine one repetition can be hit by another process's burst.
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  if (samples.size() % 2 == 1) return samples[mid];
  return (samples[mid - 1] + samples[mid]) / 2.0;
}

}  // namespace tandem::bench
