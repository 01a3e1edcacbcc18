// async_memory: the seeds' "asynchronous computation and memory" (d2l 8.2.4) with tandem.
//
//   build/examples/async_memory/async_memory [--quick] [--max-in-flight N]
//
// A training-like loop (mlp_training.h) runs three ways, each in a fresh child process:
// - synced: the loss of every batch is read back (a sync point per batch, like asscalar in the
//   seeds): the front end is never more than one batch ahead of the workers;
// - unbounded: no sync and no backpressure (max_ops_in_flight = 0): the front end queues every
//   batch at once; each batch's random data is drawn as soon as its op is reached, long before
//   the training steps that use it, so memory grows with the number of batches;
// - backpressure: no sync, but the engine blocks push while N ops are in flight (default 64), so
//   the front end stays a bounded distance ahead: memory like synced, speed like unbounded.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "memory_probe.h"
#include "mlp_training.h"

namespace nd = tandem::nd;
using tandem::examples::MemoryRun;

namespace {

MemoryRun measure(tandem::examples::MlpConfig config, std::size_t max_in_flight) {
  return tandem::examples::run_in_child(
      [&] {
        tandem::EngineConfig engine = tandem::EngineConfig::from_env();
        engine.max_ops_in_flight = max_in_flight;
        nd::set_default_engine(engine);
        // Warm up (OpenBLAS buffers, worker threads, memory pool), as the seeds do before
        // measuring.
        tandem::examples::MlpConfig warm = config;
        warm.batches = 2;
        tandem::examples::train_mlp(warm);
      },
      [&] { tandem::examples::train_mlp(config); });
}

}  // namespace

int main(int argc, char** argv) {
  tandem::examples::MlpConfig config;
  std::size_t bound = 64;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      config.batches = 20;
      config.hidden = 256;
    } else if (std::strcmp(argv[i], "--max-in-flight") == 0 && i + 1 < argc) {
      bound = static_cast<std::size_t>(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: async_memory [--quick] [--max-in-flight N]\n");
      return 2;
    }
  }
  std::printf("%d batches of %lldx%lld through a %lld-%lld-1 perceptron\n\n", config.batches,
              static_cast<long long>(config.batch_size), static_cast<long long>(config.inputs),
              static_cast<long long>(config.inputs), static_cast<long long>(config.hidden));
  std::printf("%-34s %10s %14s %16s\n", "loop", "time", "peak RSS", "increased memory");
  struct Row {
    const char* name;
    bool sync;
    std::size_t bound;
  };
  const Row rows[] = {{"synced (loss read every batch)", true, 16384},
                      {"unbounded (no sync, no bound)", false, 0},
                      {"backpressure (no sync, bounded)", false, bound}};
  int status = 0;
  for (const Row& row : rows) {
    tandem::examples::MlpConfig run_config = config;
    run_config.sync_each_batch = row.sync;
    const MemoryRun run = measure(run_config, row.bound);
    if (!run.ok) {
      std::printf("%-34s failed: %s\n", row.name, run.error);
      status = 1;
      continue;
    }
    std::printf("%-34s %8.3f s %11.1f MB %13.1f MB\n", row.name, run.seconds, run.peak_rss_mb,
                run.peak_rss_mb - run.rss_before_mb);
  }
  std::printf(
      "\nbackpressure: max_ops_in_flight = %zu (TANDEM_MAX_OPS_IN_FLIGHT sets the engine's "
      "default)\n",
      bound);
  return status;
}
