#include "core_to_core.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// The probe gives up after this long (a busy core, or valgrind, which runs one thread at a
// time): the samples taken so far are used, or none.
constexpr std::chrono::milliseconds kTimeLimit{20};
constexpr long kStop = -1;

}  // namespace

std::optional<CoreToCore> core_to_core(int round_trips) {
  static const bool disabled = [] {
    const char* setting = std::getenv("BENCH_CORE_TO_CORE");
    return setting != nullptr && std::string_view(setting) == "0";
  }();
  if (disabled) return std::nullopt;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2 || round_trips < 1) return std::nullopt;

  // Odd values are the server's serves, even ones the returner's returns; kStop ends the
  // returner. Batches of 16 round trips are timed one by one, so that a preemption spoils one
  // sample, not the median.
  constexpr int kBatch = 16;
  const int batches = std::max(1, round_trips / kBatch);
  alignas(64) std::atomic<long> ball{0};
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(batches));
  std::atomic<bool> pinned{true};
  std::thread returner([&] {
    if (!pin_to(cpus[1])) pinned.store(false);
    for (long i = 0;; ++i) {
      long seen;
      while ((seen = ball.load(std::memory_order_acquire)) != 2 * i + 1) {
        if (seen == kStop) return;
      }
      ball.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::thread server([&] {
    if (!pin_to(cpus[0])) pinned.store(false);
    const Clock::time_point deadline = Clock::now() + kTimeLimit;
    long i = 0;
    for (int b = 0; b < batches; ++b) {
      const Clock::time_point start = Clock::now();
      if (start > deadline) break;
      bool complete = true;
      for (int k = 0; k < kBatch && complete; ++k, ++i) {
        ball.store(2 * i + 1, std::memory_order_release);
        for (unsigned spins = 1; ball.load(std::memory_order_acquire) != 2 * i + 2; ++spins) {
          if (spins % 1024 == 0 && Clock::now() > deadline) {
            complete = false;
            break;
          }
        }
      }
      if (!complete) break;
      const std::chrono::duration<double, std::nano> took = Clock::now() - start;
      samples.push_back(took.count() / (2.0 * kBatch));
    }
    ball.store(kStop, std::memory_order_release);
  });
  server.join();
  returner.join();
  if (!pinned.load() || samples.empty()) return std::nullopt;
  CoreToCore result;
  for (const double sample : samples) result.mean_ns += sample;
  result.mean_ns /= static_cast<double>(samples.size());
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  result.median_ns = samples[samples.size() / 2];
  return result;
}

}  // namespace tandem::bench
