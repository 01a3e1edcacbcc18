// Host waits for device work: they sleep rather than spin, and a CPU op whose input is still
// being computed on a device does not hold a CPU worker while it waits (FenceWaiter), so CPU
// work that does not need the device result runs meanwhile.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sim_test_support.h"
#include "thread_clock.h"

using namespace tandem;
using namespace tandem_test;
using namespace std::chrono_literals;

TEST_CASE("a host thread waiting for a sim event sleeps instead of spinning") {
  use_sim_test_config();
  Stream& stream = accelerator(sim(0)).stream(Queue::compute, 1);
  stream.enqueue_host([] {}, cost_ms(200));
  EventRef done = stream.record();
  const auto start = std::chrono::steady_clock::now();
  const double cpu_before = thread_cpu_ms();
  done->synchronize();
  const double cpu_ms = thread_cpu_ms() - cpu_before;
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(cpu_ms);
  CAPTURE(wall_ms);
  CHECK(wall_ms > 100);
  CHECK(cpu_ms < 0.2 * wall_ms);
}

TEST_CASE("a CPU op waiting for a sim result does not hold the only CPU worker") {
  EngineConfig config = sim_engine_config(EngineKind::threaded);
  config.cpu_workers = 1;
  SimTestEngine engine(config);
  Var x = engine.var(), y = engine.var(), z = engine.var();
  std::atomic<std::int64_t> reader_ran_at{0}, other_ran_at{0};
  std::int64_t value = 0, seen = 0;
  engine->push(
      [&value](RunContext& ctx) {
        ctx.stream()->enqueue_host([&value] { value = 7; }, cost_ms(400));
      },
      sim(0), {}, {x}, {.name = "slow device write"});
  engine->push(
      [&] {
        seen = value;
        reader_ran_at = now_ns();
      },
      cpu(), {x}, {y}, {.name = "reads the device result"});
  // By now the reader is granted (the device op completed at launch) and waits for the fence.
  std::this_thread::sleep_for(50ms);
  engine->push([&] { other_ran_at = now_ns(); }, cpu(), {}, {z}, {.name = "independent"});
  engine->wait_for_var(z);
  engine->wait_for_var(y);
  CHECK(seen == 7);
  // The independent op ran while the reader waited for the device, not after it.
  CHECK(other_ran_at.load() < reader_ran_at.load());
  engine->wait_all();
}

TEST_CASE("wait_for_var on running device work times out, and a long wait sleeps, not spins") {
  // The front end's waits on device work poll with a deadline (the caller's, or the watchdog's
  // two minutes): first by looking for spin_before_park, then by sleeping. The look must not
  // outlast a short timeout, and a long wait must leave the core to others.
  SimTestEngine engine(sim_engine_config(EngineKind::threaded));
  Var x = engine.var();
  std::int64_t value = 0;
  engine->push(
      [&value](RunContext& ctx) {
        ctx.stream()->enqueue_host([&value] { value = 7; }, cost_ms(300));
      },
      sim(0), {}, {x}, {.name = "slow device write"});
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(engine->wait_for_var(x, 20ms), TimeoutError);
  const double cpu_before = thread_cpu_ms();
  engine->wait_for_var(x);
  const double cpu_ms = thread_cpu_ms() - cpu_before;
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(cpu_ms);
  CAPTURE(wall_ms);
  CHECK(value == 7);
  CHECK(wall_ms > 150);
  CHECK(cpu_ms < 0.2 * wall_ms);
  engine->wait_all();
}
