// async_memory: the seeds' "asynchronous computation and memory" (d2l 8.2.4) with tandem.
//
//   build/examples/async_memory/async_memory [--quick] [--max-in-flight N] [--handwritten]
//
// The seeds' training loop (autograd_training.h: a Sequential of Dense layers, autograd and a
// Trainer; with --handwritten the older loop of mlp_training.h, whose gradients are written
// out) runs three ways, each in a fresh child process:
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

#include "autograd_training.h"
#include "memory_probe.h"
#include "mlp_training.h"

namespace nd = tandem::nd;
using tandem::examples::MemoryRun;

namespace {

MemoryRun measure(tandem::examples::MlpConfig config, std::size_t max_in_flight, bool handwritten) {
  const auto train = [handwritten](const tandem::examples::MlpConfig& c) {
    return handwritten ? tandem::examples::train_mlp(c) : tandem::examples::train_mlp_autograd(c);
  };
  return tandem::examples::run_in_child(
      [&] {
        tandem::EngineConfig engine = tandem::EngineConfig::from_env();
        engine.max_ops_in_flight = max_in_flight;
        nd::set_default_engine(engine);
        // Warm up (OpenBLAS buffers, worker threads, memory pool), as the seeds do before
        // measuring.
        tandem::examples::MlpConfig warm = config;
        warm.batches = 2;
        train(warm);
      },
      [&] { train(config); });
}

}  // namespace

int main(int argc, char** argv) {
  tandem::examples::MlpConfig config;
  std::size_t bound = 64;
  bool handwritten = false;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--handwritten") == 0) {
      handwritten = true;
    } else if (std::strcmp(argv[i], "--max-in-flight") == 0 && i + 1 < argc) {
      bound = static_cast<std::size_t>(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: async_memory [--quick] [--max-in-flight N] [--handwritten]\n");
      return 2;
    }
  }
  // The seeds' network is 512-2048-512-1 (autograd); the hand-written loop has one hidden layer.
  config.hidden = quick ? 256 : handwritten ? 1024 : 2048;
  if (quick) config.batches = 20;
  if (handwritten) {
    std::printf(
        "%d batches of %lldx%lld through a %lld-%lld-1 perceptron, hand-written gradients"
        "\n\n",
        config.batches, static_cast<long long>(config.batch_size),
        static_cast<long long>(config.inputs), static_cast<long long>(config.inputs),
        static_cast<long long>(config.hidden));
  } else {
    std::printf(
        "%d batches of %lldx%lld through Dense(%lld, relu), Dense(%lld, relu), Dense(1); "
        "autograd and a Trainer (SGD)\n\n",
        config.batches, static_cast<long long>(config.batch_size),
        static_cast<long long>(config.inputs), static_cast<long long>(config.hidden),
        static_cast<long long>(config.hidden / 4));
  }
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
    const MemoryRun run = measure(run_config, row.bound, handwritten);
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
