#include "idle_cpu.h"

#include <sys/resource.h>

#include <thread>

#include "timing.h"

namespace tandem::bench {

namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

double process_cpu_percent_while_sleeping(std::chrono::milliseconds window) {
  const double cpu_before = process_cpu_seconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(window);
  const double wall_seconds = since(start).count() * 1e-9;
  return 100.0 * (process_cpu_seconds() - cpu_before) / wall_seconds;
}

}  // namespace tandem::bench
