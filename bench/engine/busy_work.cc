#include "busy_work.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "timing.h"

namespace tandem::bench {

namespace {

// Written after each spin so the arithmetic chain has an observable result.
std::atomic<std::uint64_t> spin_sink{0};
double ns_per_iteration = 0.0;

}  // namespace

void spin(std::uint64_t iterations) noexcept {
  // A linear congruential step: each iteration depends on the previous one (a multiply and an
  // add, a few cycles of latency), so the loop can neither be vectorised nor folded away.
  std::uint64_t x = iterations;
  for (std::uint64_t i = 0; i < iterations; ++i)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  spin_sink.store(x, std::memory_order_relaxed);
}

void calibrate_busy_work() {
  // The fastest of several tries: noise from other processes only ever makes a try slower.
  constexpr std::uint64_t kIterations = 2'000'000;
  double best = 1e300;
  for (int attempt = 0; attempt < 7; ++attempt) {
    const auto start = Clock::now();
    spin(kIterations);
    best = std::min(best, since(start).count());
  }
  ns_per_iteration = best / static_cast<double>(kIterations);
}

double nanoseconds_per_spin_iteration() {
  if (ns_per_iteration <= 0.0) throw std::logic_error("calibrate_busy_work() was not called");
  return ns_per_iteration;
}

Work busy_work_for(double nanoseconds) {
  const double iterations = std::round(nanoseconds / nanoseconds_per_spin_iteration());
  return Work{static_cast<std::uint64_t>(std::max(1.0, iterations))};
}

}  // namespace tandem::bench
