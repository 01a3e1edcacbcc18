// Clocks for the tests that judge how a thread waits for device work: the CPU time the calling
// thread has used (a sleeping wait adds almost none, a spinning one all of its wall time), and a
// steady timestamp that orders what ops on different threads did.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace tandem_test {

inline double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

inline std::int64_t now_ns() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

}  // namespace tandem_test
