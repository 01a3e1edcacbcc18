// What an application embedding the engine relies on: how many CPU workers run (and the range of
// RunContext::worker() they report), and that an engine configured from code reads no
// environment variable.
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineConfig;
using tandem::EngineKind;
using tandem::RunContext;
using tandem::Var;
using tandem_test::Rendezvous;
using tandem_test::ScopedEnv;

// Pushes one op per entry of `workers` on its own var, each recording RunContext::worker();
// with `meet`, the ops wait for each other, which only succeeds if they all run at once.
void record_workers(tandem::Engine& engine, std::vector<int>& workers, int priority,
                    Rendezvous* meet, std::atomic<int>& met) {
  std::vector<Var> vars;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    Var v = engine.new_var();
    vars.push_back(v);
    engine.push(
        [&workers, i, meet, &met](RunContext& ctx) {
          workers[i] = ctx.worker();
          if (meet != nullptr && meet->arrive()) met.fetch_add(1);
        },
        cpu(), {}, {v}, {.name = "record worker", .priority = priority});
  }
  engine.wait_all();
  for (Var v : vars) engine.delete_var(v);
  engine.wait_all();
}

}  // namespace

TEST_CASE("cpu_workers() is the pool the config asked for, and its ops all run at once") {
  auto engine = tandem::Engine::create({.cpu_workers = 3, .priority_workers = 1});
  CHECK(engine->cpu_workers() == 3);
  CHECK(engine->priority_workers() == 1);
  CHECK(engine->worker_lanes() == 4);

  std::vector<int> workers(3, -2);
  Rendezvous meet(3);
  std::atomic<int> met{0};
  record_workers(*engine, workers, /*priority=*/0, &meet, met);
  CHECK(met.load() == 3);  // three ops met: three workers really run
  const std::set<int> distinct(workers.begin(), workers.end());
  CHECK(distinct.size() == 3);
  for (int w : workers) {
    CAPTURE(w);
    CHECK(w >= 0);
    CHECK(w < engine->cpu_workers());  // no oneTBB cap here: the pool's slots all run
  }
}

TEST_CASE("cpu_workers = 0 runs one pool worker per hardware thread") {
  auto engine = tandem::Engine::create({.cpu_workers = 0});
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CHECK(engine->cpu_workers() == hardware);
  CHECK(engine->config().cpu_workers == 0);  // the config keeps what was asked for
}

TEST_CASE("urgent ops report a lane below worker_lanes() = cpu_workers() + priority_workers()") {
  auto engine = tandem::Engine::create({.cpu_workers = 2, .priority_workers = 2});
  REQUIRE(engine->priority_workers() == 2);
  REQUIRE(engine->worker_lanes() == 4);
  std::vector<int> workers(64, -2);
  std::atomic<int> met{0};
  record_workers(*engine, workers, /*priority=*/1, nullptr, met);
  for (int w : workers) {
    CAPTURE(w);
    CHECK(w >= 0);
    CHECK(w < engine->worker_lanes());
  }
}

TEST_CASE("the naive engine has no worker threads and runs ops with worker() == -1") {
  auto engine = tandem::Engine::create({.kind = EngineKind::naive, .cpu_workers = 4});
  CHECK(engine->cpu_workers() == 0);
  CHECK(engine->priority_workers() == 0);
  CHECK(engine->worker_lanes() == 0);
  std::vector<int> workers(4, -2);
  std::atomic<int> met{0};
  record_workers(*engine, workers, /*priority=*/0, nullptr, met);
  for (int w : workers) CHECK(w == -1);
}

TEST_CASE("a process-wide oneTBB cap lowers cpu_workers() to the workers that can run") {
  // max_allowed_parallelism counts one thread that is not a worker, and the smallest live
  // control wins: with a cap of 2 the 3-worker arena gets 1 worker, which may sit in any of the
  // arena's 3 slots, so worker_lanes() still counts them all.
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, 2);
  auto engine = tandem::Engine::create({.cpu_workers = 3, .priority_workers = 1});
  CHECK(engine->config().cpu_workers == 3);
  CHECK(engine->cpu_workers() == 1);
  CHECK(engine->worker_lanes() == 4);
  std::vector<int> workers(8, -2);
  std::atomic<int> met{0};
  record_workers(*engine, workers, /*priority=*/0, nullptr, met);
  for (int w : workers) {
    CAPTURE(w);
    CHECK(w >= 0);
    CHECK(w < engine->worker_lanes());
  }
}

// A woken drainer counts as active from its enqueue; when no thread can run it (here a cap
// leaves oneTBB one worker, busy with the first drainer) it starts only once that worker is
// free, and EngineStats::worker_late_starts counts it.
TEST_CASE("a drainer that waits for a thread long after its wake-up counts as a late start") {
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, 2);
  auto engine = tandem::Engine::create({.cpu_workers = 2});
  const std::uint64_t before = engine->stats().worker_late_starts;
  std::vector<Var> vars;
  for (int i = 0; i < 2; ++i) vars.push_back(engine->new_var());
  // Two independent ops of 20 ms: the second wakes a second drainer while the first runs.
  for (const Var& v : vars) {
    engine->push([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, cpu(), {}, {v},
                 {.name = "slow"});
  }
  engine->wait_all();
  // The late drainer starts after the single worker's drainer parks, which may be after
  // wait_all returned: give it a moment.
  for (int i = 0; i < 200 && engine->stats().worker_late_starts == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(engine->stats().worker_late_starts > before);
  for (const Var& v : vars) engine->delete_var(v);
  engine->wait_all();
}

TEST_CASE("Engine::create and set_default with a config read no environment variable") {
  // Values from_env would reject: an engine made from code must not even look at them.
  ScopedEnv kind("TANDEM_ENGINE", "no-such-engine");
  ScopedEnv workers("TANDEM_CPU_WORKERS", "not a number");
  ScopedEnv level("TANDEM_LOG_LEVEL", "no-such-level");

  auto engine = tandem::Engine::create({.cpu_workers = 2});
  CHECK(engine->kind() == EngineKind::threaded);
  CHECK(engine->cpu_workers() == 2);

  EngineConfig config;
  config.cpu_workers = 2;
  config.priority_workers = 0;
  tandem::Engine::set_default(config);
  CHECK(tandem::Engine::get().cpu_workers() == 2);
  CHECK(tandem::Engine::get().priority_workers() == 0);
  std::atomic<int> ran{0};
  Var v = tandem::Engine::get().new_var();
  tandem::Engine::get().push([&ran] { ran.fetch_add(1); }, cpu(), {}, {v});
  tandem::Engine::get().wait_for_var(v);
  CHECK(ran.load() == 1);
  tandem::Engine::get().delete_var(v);
  tandem::Engine::set_default(EngineConfig{});
}
