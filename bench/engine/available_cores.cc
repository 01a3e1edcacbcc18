#include "available_cores.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "busy_work.h"

namespace tandem::bench {

namespace {

// A preempted thread delays the end by at most one chunk; taking a chunk (one atomic
// increment) stays noise against its work. Short probes use smaller chunks, down to 2 us, so
// that every thread gets a few.
constexpr double kLargestChunkNs = 50'000.0;
constexpr double kSmallestChunkNs = 2'000.0;
constexpr double kChunksPerThread = 16.0;

}  // namespace

Nanoseconds run_peak_probe(int threads, double total_ns) {
  const double wanted_chunk_ns =
      std::clamp(total_ns / (threads * kChunksPerThread), kSmallestChunkNs, kLargestChunkNs);
  const auto chunks = static_cast<long>(std::max(1.0, std::round(total_ns / wanted_chunk_ns)));
  // The chunk absorbs the rounding of the count, so the work done is `total_ns`.
  const Work chunk = busy_work_for(total_ns / static_cast<double>(chunks));
  std::atomic<long> next_chunk{0};
  std::atomic<int> started{0};
  std::atomic<Clock::rep> start_ticks{0};
  std::vector<Clock::time_point> finished(static_cast<std::size_t>(threads));
  {
    std::vector<std::jthread> spinners;
    for (int i = 0; i < threads; ++i) {
      spinners.emplace_back([&, i] {
        if (started.fetch_add(1) + 1 == threads) {
          start_ticks.store(Clock::now().time_since_epoch().count());
        }
        while (start_ticks.load() == 0) std::this_thread::yield();
        while (next_chunk.fetch_add(1, std::memory_order_relaxed) < chunks) run_work(chunk);
        finished[static_cast<std::size_t>(i)] = Clock::now();
      });
    }
  }  // joins
  const Clock::time_point start{Clock::duration{start_ticks.load()}};
  return *std::max_element(finished.begin(), finished.end()) - start;
}

}  // namespace tandem::bench
