// Host waits for gpu work (skipped, visibly, without a device): a thread waiting on an event
// sleeps (blocking-sync events) instead of spinning a core, and a CPU op whose input is still
// being computed on the gpu does not hold a CPU worker while it waits.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cuda_test_util.h"
#include "tandem/accel/accelerator.h"
#include "tandem/engine.h"
#include "thread_clock.h"

using tandem::Queue;
using tandem::test::have_cuda;
using tandem_test::now_ns;
using tandem_test::thread_cpu_ms;
using namespace std::chrono_literals;

TEST_SUITE("cuda.waits") {
  TEST_CASE("a host thread waiting for a gpu event sleeps instead of spinning a core") {
    if (!have_cuda("blocking event waits")) return;
    tandem::Stream& stream = tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 0);
    // Holds the stream for 300 ms without the waiting thread doing anything.
    stream.enqueue_host([] { std::this_thread::sleep_for(300ms); }, {});
    for (bool timing : {false, true}) {
      CAPTURE(timing);
      tandem::EventRef done = stream.record(timing);
      if (timing) stream.enqueue_host([] { std::this_thread::sleep_for(300ms); }, {});
      tandem::EventRef later = stream.record(timing);
      const auto start = std::chrono::steady_clock::now();
      const double cpu_before = thread_cpu_ms();
      later->synchronize();
      const double cpu_ms = thread_cpu_ms() - cpu_before;
      const double wall_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      CAPTURE(cpu_ms);
      CAPTURE(wall_ms);
      CHECK(wall_ms > 150);
      CHECK(cpu_ms < 0.2 * wall_ms);  // spinning would take about all of it
      CHECK(done->query());
    }
  }

  TEST_CASE("a CPU op waiting for a gpu result does not hold the only CPU worker") {
    if (!have_cuda("fence waits off the workers")) return;
    tandem::EngineConfig config;
    config.kind = tandem::EngineKind::threaded;
    config.cpu_workers = 1;
    auto engine = tandem::Engine::create(config);
    tandem::Var x = engine->new_var(), y = engine->new_var(), z = engine->new_var();
    std::atomic<std::int64_t> reader_ran_at{0}, other_ran_at{0};
    int value = 0, seen = 0;
    engine->push(
        [&value](tandem::RunContext& ctx) {
          ctx.stream()->enqueue_host(
              [&value] {
                std::this_thread::sleep_for(400ms);
                value = 7;
              },
              {});
        },
        tandem::cuda(0), {}, {x}, {.name = "slow gpu write"});
    engine->push(
        [&] {
          seen = value;
          reader_ran_at = now_ns();
        },
        tandem::cpu(), {x}, {y}, {.name = "reads the gpu result"});
    std::this_thread::sleep_for(50ms);
    engine->push([&] { other_ran_at = now_ns(); }, tandem::cpu(), {}, {z}, {.name = "independent"});
    engine->wait_for_var(z);
    engine->wait_for_var(y);
    CHECK(seen == 7);
    CHECK(other_ran_at.load() < reader_ran_at.load());
    for (tandem::Var v : {x, y, z}) engine->delete_var(v);
    engine->wait_all();
  }
}
