#include "add_scalar_loop.h"

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;

constexpr int kIterations = 1000;

double add_loop(const nd::NDArray& x, bool wait_each) {
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray y;
  for (int i = 0; i < kIterations; ++i) {
    y = x + 1;
    if (wait_each) y.wait_to_read();
  }
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Size {
  std::int64_t rows, cols;
};

}  // namespace

void run_add_scalar_loop(bool quick, Records& records) {
  auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
  const Size sizes[] = {{1, 2}, {10, 100}, {100, 100}, {300, 300}, {1000, 1000}, {2000, 2000}};
  std::printf("add_scalar_loop: %d x (y = x + 1), seconds (best of the rounds)\n", kIterations);
  std::printf("  %-10s %10s %10s %10s %12s %12s\n", "size", "sync", "async", "naive", "async/sync",
              "async/naive");
  double tiny_ratio = 0, worst_large = 0, largest_ratio = 0, worst_naive = 0;
  for (const Size& size : sizes) {
    const std::int64_t elements = size.rows * size.cols;
    const int rounds = quick ? 3 : 5;
    const nd::NDArray x = nd::random::uniform({size.rows, size.cols});
    nd::NDArray x_naive;
    {
      nd::EngineScope scope(*naive);
      x_naive = nd::random::uniform({size.rows, size.cols});
    }
    add_loop(x, true);  // warm up: workers awake, the memory pool holds a block of this size
    double sync = 1e30, async = 1e30, baseline = 1e30;
    // Rounds interleave the systems, so a disturbance of the shared machine hits all of them.
    for (int round = 0; round < rounds; ++round) {
      sync = std::min(sync, add_loop(x, true));
      async = std::min(async, add_loop(x, false));
      nd::EngineScope scope(*naive);
      baseline = std::min(baseline, add_loop(x_naive, false));
    }
    {
      nd::EngineScope scope(*naive);
      x_naive = nd::NDArray();
    }
    const std::string shape = std::to_string(size.rows) + "x" + std::to_string(size.cols);
    const std::pair<const char*, double> results[] = {
        {"sync", sync}, {"async", async}, {"naive", baseline}};
    for (const auto& [system, seconds] : results) {
      records.push_back({{"workload", "add_scalar_loop"},
                         {"system", system},
                         {"array_size", elements},
                         {"seconds", seconds},
                         {"iterations", kIterations},
                         {"shape", shape}});
    }
    std::printf("  %-10s %10.4f %10.4f %10.4f %12.3f %12.3f\n", shape.c_str(), sync, async,
                baseline, async / sync, async / baseline);
    if (elements == 2) tiny_ratio = sync / async;
    if (elements >= 1000000) worst_large = std::max(worst_large, async / sync);
    if (elements == 4000000) largest_ratio = async / sync;
    worst_naive = std::max(worst_naive, async / baseline);
  }
  records.push_back(target_record("tiny ops (1x2): async speedup over sync-after-every-op",
                                  ">= 10x", tiny_ratio, 10.0, false));
  records.push_back(target_record("large ops (>= 1000x1000): async time / sync time, worst",
                                  "<= 1.05", worst_large, 1.05, true));
  records.push_back(target_record("4e6 elements (2000x2000): async time / sync time", "<= 0.9",
                                  largest_ratio, 0.9, true));
  records.push_back(target_record("every size: async time / naive engine time, worst", "<= 1",
                                  worst_naive, 1.0, true));
}

}  // namespace tandem::bench
