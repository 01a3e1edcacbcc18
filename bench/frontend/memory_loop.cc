#include "memory_loop.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "memory_probe.h"
#include "mlp_training.h"

namespace tandem::bench {

namespace {

struct Configuration {
  const char* system;
  bool sync_each_batch;
  std::size_t max_ops_in_flight;
};

examples::MemoryRun measure(const examples::MlpConfig& config, std::size_t max_ops_in_flight) {
  return examples::run_in_child(
      [&] {
        EngineConfig engine = EngineConfig::from_env();
        engine.max_ops_in_flight = max_ops_in_flight;
        nd::set_default_engine(engine);
        examples::MlpConfig warm = config;
        warm.batches = 2;
        examples::train_mlp(warm);
      },
      [&] { examples::train_mlp(config); });
}

}  // namespace

void run_memory_loop(bool quick, std::size_t backpressure_bound, Records& records) {
  examples::MlpConfig config;
  config.batches = quick ? 40 : 100;
  config.hidden = quick ? 512 : 1024;
  const Configuration configurations[] = {{"synced", true, 16384},
                                          {"unbounded", false, 0},
                                          {"backpressure", false, backpressure_bound}};
  std::printf(
      "memory_loop: %d batches of %lldx%lld, %lld-%lld-1 perceptron; backpressure bound "
      "%zu ops (each in a fresh process, best time of the rounds, largest peak)\n",
      config.batches, static_cast<long long>(config.batch_size),
      static_cast<long long>(config.inputs), static_cast<long long>(config.inputs),
      static_cast<long long>(config.hidden), backpressure_bound);
  const int rounds = quick ? 2 : 3;
  double peak[3] = {}, seconds[3] = {1e30, 1e30, 1e30};
  bool ok[3] = {true, true, true};
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 3; ++i) {
      config.sync_each_batch = configurations[i].sync_each_batch;
      const examples::MemoryRun run = measure(config, configurations[i].max_ops_in_flight);
      if (!run.ok) {
        std::fprintf(stderr, "memory_loop %s failed: %s\n", configurations[i].system, run.error);
        ok[i] = false;
        continue;
      }
      peak[i] = std::max(peak[i], run.peak_rss_mb);
      seconds[i] = std::min(seconds[i], run.seconds);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (!ok[i]) continue;
    records.push_back({{"workload", "memory_loop"},
                       {"system", configurations[i].system},
                       {"peak_rss_mb", peak[i]},
                       {"seconds", seconds[i]},
                       {"batches", config.batches},
                       {"max_ops_in_flight", configurations[i].max_ops_in_flight}});
    std::printf("  %-13s peak RSS %8.1f MB   %8.3f s\n", configurations[i].system, peak[i],
                seconds[i]);
  }
  const bool measured = ok[0] && ok[1] && ok[2];
  records.push_back(target_record("never-syncing loop with backpressure: peak RSS / synced",
                                  "<= 1.2", measured ? peak[2] / peak[0] : 0, 1.2, true, measured));
  records.push_back(target_record("never-syncing loop with backpressure: speed / unbounded",
                                  ">= 0.95", measured ? seconds[1] / seconds[2] : 0, 0.95, false,
                                  measured));
}

}  // namespace tandem::bench
