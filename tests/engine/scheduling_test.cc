// Scheduling: priorities among ready ops, the priority lane, worker counts, and an idle engine
// that does not burn CPU.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineKind;
using tandem::RunContext;
using tandem::Var;
using namespace tandem_test;

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The threaded engine of test_config with these worker counts.
tandem::EngineConfig threaded_config(int cpu_workers, int priority_workers) {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.cpu_workers = cpu_workers;
  config.priority_workers = priority_workers;
  return config;
}

}  // namespace

TEST_CASE("ready ops run highest priority first, in push order among equals") {
  TestEngine engine(threaded_config(1, 0));

  // The only worker is held by a first op while the others become ready.
  BlockingOp blocker(*engine, "blocker");

  struct Pushed {
    int priority;
    int id;
  };
  const std::vector<Pushed> pushed = {{0, 0},  {2, 1}, {-1, 2}, {1, 3}, {2, 4},   {0, 5},
                                      {-1, 6}, {1, 7}, {5, 8},  {0, 9}, {-3, 10}, {2, 11}};
  std::mutex mutex;
  std::vector<int> ran;
  for (const Pushed& op : pushed) {
    engine->push(
        [&, id = op.id] {
          std::lock_guard lock(mutex);
          ran.push_back(id);
        },
        cpu(), {}, {}, {.name = "ranked", .priority = op.priority});
  }
  blocker.release();
  engine->wait_all();
  // Priority 5, then 2s, 1s, 0s, -1s, -3, each group in push order.
  CHECK(ran == std::vector<int>{8, 1, 4, 11, 3, 7, 0, 5, 9, 2, 6, 10});
}

// A completion that readies an op may hand it straight to the worker that finished
// (CpuExecutor::run_next_here), but never ahead of ops that were ready before it: FIFO among
// equals, and urgent ops first, still hold.
TEST_CASE("an op readied by a completion runs after ops that were ready before it") {
  TestEngine engine(threaded_config(1, 0));
  Var gate = engine.var();
  std::mutex mutex;
  std::vector<std::string> ran;
  auto record = [&](std::string name) {
    return [&, name] {
      std::lock_guard lock(mutex);
      ran.push_back(name);
    };
  };
  BlockingOp blocker(*engine, "blocker", {}, {gate});
  engine->push(record("follower"), cpu(), {gate}, {}, {.name = "follower"});
  engine->push(record("ready 1"), cpu(), {}, {}, {.name = "ready 1"});
  engine->push(record("ready 2"), cpu(), {}, {}, {.name = "ready 2"});
  engine->push(record("urgent"), cpu(), {}, {}, {.name = "urgent", .priority = 3});
  blocker.release();
  engine->wait_all();
  CHECK(ran == std::vector<std::string>{"urgent", "ready 1", "ready 2", "follower"});
}

TEST_CASE("an urgent op does not wait behind long compute ops") {
  TestEngine engine(threaded_config(1, 1));
  BlockingOp long_compute(*engine, "long compute");
  Flag urgent_ran, copy_ran;
  engine->push([&] { urgent_ran.raise(); }, cpu(), {}, {}, {.name = "urgent", .priority = 1});
  engine->push([&] { copy_ran.raise(); }, cpu(), {}, {},
               {.name = "copy", .queue = tandem::Queue::copy_h2d});
  CHECK(urgent_ran.wait());
  CHECK(copy_ran.wait());
  long_compute.release();
  engine->wait_all();
}

// The pattern of a double-buffered training loop (examples/engine_demo, part 2): when compute
// op i of a chain finishes it makes ready both the chain's next op and an independent op that
// waited for op i to release a var (the copy into the buffer op i read). The chain's next op is
// handed straight to the worker that finished op i (CpuExecutor::run_next_here), where no other
// thread can take it; so whatever else that worker runs first, the chain waits for. Here the
// two ops must meet at a rendezvous: they pass only if they run at the same time, i.e. neither
// waits behind the other while a worker or a priority lane is free.
bool chain_step_meets_independent_op(const tandem::EngineConfig& config,
                                     const tandem::OpProps& independent) {
  TestEngine engine(config);
  Var shared = engine.var(), chain = engine.var();
  // Both followers are pushed while the first op runs, so its completion makes them ready.
  BlockingOp first(*engine, "chain op 0", {shared}, {chain});
  Rendezvous both(2);
  std::atomic<int> met{0};
  auto meet = [&] { met.fetch_add(both.arrive(5s) ? 1 : 0); };
  engine->push(meet, cpu(), {}, {shared}, independent);
  engine->push(meet, cpu(), {}, {chain}, {.name = "chain op 1"});
  first.release();
  engine->wait_all();
  return met.load() == 2;
}

TEST_CASE("a copy readied beside a chain's next op runs on the priority lane, beside it") {
  // One worker: the copy may not take the worker that the chain's next op was handed to.
  const tandem::EngineConfig config = threaded_config(1, 1);
  for (auto queue : {tandem::Queue::copy_h2d, tandem::Queue::copy_d2h, tandem::Queue::comm}) {
    CAPTURE(static_cast<int>(queue));
    CHECK(chain_step_meets_independent_op(config, {.name = "copy", .queue = queue}));
  }
}

TEST_CASE("a copy readied beside a chain's next op runs on another worker when there is no lane") {
  const tandem::EngineConfig config = threaded_config(2, 0);
  CHECK(
      chain_step_meets_independent_op(config, {.name = "copy", .queue = tandem::Queue::copy_h2d}));
}

TEST_CASE("an urgent op readied beside a chain's next op goes first, and the chain moves on") {
  // The urgent op takes the worker that finished, and the chain's next op goes back to the
  // shared queue, where the idle second worker takes it.
  const tandem::EngineConfig config = threaded_config(2, 0);
  CHECK(chain_step_meets_independent_op(config, {.name = "urgent", .priority = 2}));
}

TEST_CASE("a chain whose every step readies a copy overlaps the copies with the chain") {
  // The whole double-buffered loop: copy i+2 and compute i+1 are made ready together by
  // compute i, for several batches in a row; each such pair must run at once.
  TestEngine engine(threaded_config(2, 1));
  constexpr int kBatches = 8;
  Var buffers[2] = {engine.var(), engine.var()};
  Var model = engine.var();
  std::vector<std::unique_ptr<Rendezvous>> pairs;
  for (int i = 0; i < kBatches; ++i) pairs.push_back(std::make_unique<Rendezvous>(2));
  std::atomic<int> met{0};
  // Copy i meets compute i - 1 (pair i - 1): both are made ready by compute i - 2. Pairs
  // outside 1 .. kBatches - 2 have only one member and meet nobody.
  auto meet = [&](int pair) {
    return [&, pair] {
      if (pair > 0 && pair < kBatches - 1) met.fetch_add(pairs[pair]->arrive(5s) ? 1 : 0);
    };
  };
  Flag release_start;
  engine->push([&] { release_start.wait(); }, cpu(), {}, {model}, {.name = "start"});
  for (int batch = 0; batch < kBatches; ++batch) {
    const Var buffer = buffers[batch % 2];
    engine->push(meet(batch - 1), cpu(), {}, {buffer},
                 {.name = "copy", .queue = tandem::Queue::copy_h2d});
    engine->push(meet(batch), cpu(), {buffer}, {model}, {.name = "compute"});
  }
  release_start.raise();
  engine->wait_all();
  // Pairs 1 .. kBatches - 2 each met (compute 0 and the last compute have no partner).
  CHECK(met.load() == 2 * (kBatches - 2));
}

// Pushes `workers` ops that each wait for all the others: true if they all met, i.e. ran at once.
bool all_ran_at_once(tandem::Engine& engine, int workers) {
  Rendezvous all(workers);
  std::atomic<int> met{0};
  for (int i = 0; i < workers; ++i) {
    engine.push([&] { met.fetch_add(all.arrive(3s) ? 1 : 0); }, cpu(), {}, {});
  }
  engine.wait_all();
  return met.load() == workers;
}

TEST_CASE("a dependency chain released at once runs on one worker") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.priority_workers = 0;
  config.cpu_workers = 2;
  // Idle workers keep polling the ready queue for the whole test, so a link that went through
  // the queue could be taken by either of them.
  config.spin_before_park = std::chrono::milliseconds(300);
  TestEngine engine(config);
  Var link = engine.var();
  all_ran_at_once(*engine, 2);  // both workers are now started, and polling
  Flag release_gate;
  engine->push([&] { release_gate.wait(); }, cpu(), {}, {link}, {.name = "gate"});
  constexpr int kChain = 200;
  std::vector<int> workers(kChain, -1);
  for (int i = 0; i < kChain; ++i) {
    engine->push([&workers, i](RunContext& ctx) { workers[i] = ctx.worker(); }, cpu(), {}, {link},
                 {.name = "link"});
  }
  release_gate.raise();
  engine->wait_all();
  // Each link is made ready by the one before it finishing, so each runs next on that worker:
  // none goes through the shared queue where another worker could take it.
  for (int i = 1; i < kChain; ++i) {
    CAPTURE(i);
    REQUIRE(workers[i] == workers[0]);
  }
}

TEST_CASE("the engine runs as many independent ops at once as it has CPU workers") {
  for (int workers : {1, 2}) {
    CAPTURE(workers);
    tandem::EngineConfig config = test_config(EngineKind::threaded);
    config.cpu_workers = workers;
    TestEngine engine(config);
    CHECK(all_ran_at_once(*engine, workers));
  }
}

// Regression test: each engine once raised oneTBB's max_allowed_parallelism with a
// tbb::global_control of its own, only when the current value was too low. oneTBB applies the
// *smallest* value of all live controls and falls back to cores - 1 workers once the engine that
// made one is gone, so an engine alive beside another got fewer workers than its cpu_workers,
// and ops that must run at once (readers that meet) hung.
TEST_CASE("two threaded engines alive at once each get their CPU workers") {
  const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  // The process-wide engine, if an earlier test made one, holds a control of its own.
  tandem::Engine::set_default(EngineKind::naive);
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.cpu_workers = cores;
  SUBCASE("the second keeps its workers when the first goes away") {
    TestEngine first(config);
    TestEngine second(config);
    first.reset();
    CHECK(all_ran_at_once(*second, cores));
  }
  SUBCASE("the second gets more workers than the first when it asks for more") {
    TestEngine first(config);
    config.cpu_workers = cores + 1;
    TestEngine second(config);
    CHECK(all_ran_at_once(*second, cores + 1));
    CHECK(all_ran_at_once(*first, cores));
  }
}

// Runs rounds until one strands an op, for at most `iterations` rounds and ~1.5 s (a loaded
// machine slows the busy-waiting rounds down a lot). Each round calls `push_round(i)`, which
// pushes ops whose last one adds 1 to `done`, then busy-waits until `done` is i + 1: with a
// timeout, where wait_for_var would hang, and without yielding, which keeps all cores busy so
// that threads are preempted at arbitrary points. Returns the stranded round (or -1) and the
// rounds run; afterwards a later push frees a stranded op, so the engine can finish.
struct StrandingRun {
  int stranded_at = -1;
  int rounds = 0;
};
template <class PushRound>
StrandingRun run_until_stranded(tandem::Engine& engine, int iterations,
                                const std::atomic<int>& done, PushRound push_round) {
  StrandingRun run;
  const auto time_budget = std::chrono::steady_clock::now() + 1500ms;
  for (int i = 0; i < iterations && run.stranded_at < 0; ++i, ++run.rounds) {
    if ((i & 255) == 0 && std::chrono::steady_clock::now() > time_budget) break;
    push_round(i);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (done.load() != i + 1) {
      if (std::chrono::steady_clock::now() > deadline) {
        run.stranded_at = i;
        break;
      }
    }
  }
  engine.push([] {}, cpu(), {}, {});
  engine.wait_all();
  return run;
}

// Regression test: ReadyFifo (ready_fifo.h) once said "empty" when its tail was the stub, but a
// producer linking behind the stub while a consumer re-inserted it could leave an op queued
// ahead of the stub: the op stayed stranded until some later push, and a program waiting for it
// hung. A pusher that waits for an op made ready by a worker makes "no later push" common.
TEST_CASE("a ready op runs without a later push to wake it") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.priority_workers = 0;
  TestEngine engine(config);
  Var first = engine.var(), second = engine.var();
  std::atomic<int> followers_ran{0};
  std::uint32_t lcg = 1;
  // Up to 200,000 rounds (the old bug showed within ~30,000).
  const StrandingRun run =
      run_until_stranded(*engine, static_cast<int>(200000 * test_scale()), followers_ran, [&](int) {
        // The worker that finishes `first` queues the follower while the other worker may be
        // taking the independent op, the last one queued. The first op's length varies so
        // that the two meet at every possible moment.
        lcg = lcg * 1103515245u + 12345u;
        const int spins = static_cast<int>((lcg >> 8) % 200);
        engine->push([spins] { spin_for(spins); }, cpu(), {}, {first});
        engine->push([&followers_ran] { followers_ran.fetch_add(1); }, cpu(), {first}, {second});
        engine->push([] {}, cpu(), {}, {});
      });
  CAPTURE(run.rounds);
  CHECK(run.stranded_at == -1);
}

// The hand-off between a push and a drainer that is going idle (CpuExecutor::wake_drainer and
// the re-check in drain): the push publishes the op, then looks for an active drainer; the
// drainer drops its count, then looks for ops. If both missed each other the op would wait for
// a later push. With no spinning before parking, drainers go idle after every op, and pushes
// spaced by a varying busy wait land at every moment of that transition.
TEST_CASE("an op pushed while the drainers go idle still runs") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.priority_workers = 0;
  config.spin_before_park = std::chrono::microseconds(0);
  TestEngine engine(config);
  Var var = engine.var();
  std::atomic<int> ran{0};
  std::uint32_t lcg = 7;
  const StrandingRun run =
      run_until_stranded(*engine, static_cast<int>(100000 * test_scale()), ran, [&](int i) {
        lcg = lcg * 1103515245u + 12345u;
        spin_for(static_cast<int>((lcg >> 8) % 400));
        // Alternately an ordinary op (the lock-free FIFO) and a low-priority one (a priority
        // queue): the two publish differently.
        const int priority = (i & 1) ? -1 : 0;
        engine->push([&ran] { ran.fetch_add(1); }, cpu(), {}, {var}, {.priority = priority});
      });
  CAPTURE(run.rounds);
  CHECK(run.stranded_at == -1);
}

// A push wakes no drainer while one is idle (CpuExecutor::submit): the idle one would take the
// op within a poll. Two ops pushed back to back may then both find that one drainer; when it
// takes the first and leaves the second behind, it wakes another drainer for it, so the two
// run together. Here each op waits for the other: run one
// after the other, the first would give up waiting. Some pairs follow a burst of small ops,
// after busy pauses of varying length, so they find the drainers busy, spinning, yielding or
// parked.
TEST_CASE("two ops pushed together while a drainer is idle run at the same time") {
  TestEngine engine(threaded_config(2, 0));
  const int rounds = std::max(8, static_cast<int>(48 * test_scale()));
  int met_late = 0;
  for (int round = 0; round < rounds; ++round) {
    engine->wait_all();
    if (round % 2 == 1) {
      for (int i = 0; i < 300; ++i) engine->push([] {}, cpu(), {}, {});
    }
    const auto pause_end =
        std::chrono::steady_clock::now() + std::chrono::microseconds((round / 2 % 6) * 8);
    while (std::chrono::steady_clock::now() < pause_end) {
    }
    Rendezvous pair(2);
    std::atomic<int> met{0};
    for (int op = 0; op < 2; ++op) {
      engine->push([&] { met.fetch_add(pair.arrive(2s) ? 1 : 0); }, cpu(), {}, {});
    }
    engine->wait_all();
    if (met.load() != 2) ++met_late;
  }
  CHECK(met_late == 0);
}

TEST_CASE("RunContext names the op, its device and its worker") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  std::string name;
  tandem::Device device = tandem::sim(3);
  int worker = -2;
  engine->push(
      [&](RunContext& ctx) {
        name = ctx.op_name();
        device = ctx.device();
        worker = ctx.worker();
      },
      cpu(), {}, {}, {.name = "introspective"});
  engine->wait_all();
  CHECK(name == "introspective");
  CHECK(device == cpu());
  if (kind == EngineKind::naive) {
    CHECK(worker == -1);  // inline in the pushing thread
  } else {
    CHECK(worker >= 0);
  }
}

TEST_CASE("an idle engine uses almost no CPU") {
  TestEngine engine(tandem::EngineConfig{});  // default workers and spin
  Var v = engine.var();
  for (int i = 0; i < 1000; ++i) engine->push([] {}, cpu(), {v}, {});
  for (int i = 0; i < 10; ++i) engine->push([] {}, cpu(), {}, {}, {.priority = 1});
  engine->wait_all();
  std::this_thread::sleep_for(100ms);  // let workers finish spinning and park
  const double cpu_before = process_cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(300ms);
  const double cpu_used = process_cpu_seconds() - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  const double share_of_one_core = cpu_used / wall;
  CAPTURE(share_of_one_core);
  CHECK(share_of_one_core < 0.20);
}

// An async_completion op may ask for inline_when_ready too (tandem::dist's collectives): its body
// runs on the pushing thread, and the op still completes only when its Completion fires.
TEST_CASE(
    "an async op ready at push runs its body on the pushing thread and ends at its completion") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.cpu_workers = 1;
  TestEngine engine(config);
  const Var output = engine->new_var();
  const std::thread::id pusher = std::this_thread::get_id();
  std::thread::id ran_on;
  tandem::Completion completion;
  engine->push(
      [&](tandem::RunContext& context) {
        ran_on = std::this_thread::get_id();
        completion = context.take_completion();
      },
      cpu(), {}, {output},
      {.name = "hands off", .async_completion = true, .inline_when_ready = true});
  CHECK(ran_on == pusher);
  std::atomic<bool> read{false};
  engine->push([&] { read = true; }, cpu(), {output}, {}, {.name = "reads"});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(read.load());  // the write is held until the completion fires
  std::thread completer([&] { completion(); });
  completer.join();
  engine->wait_for_var(output);
  engine->wait_all();
  CHECK(read.load());
  engine->delete_var(output);
}

// OpProps::inline_when_ready: a cheap op whose vars are free at push runs on the pushing thread;
// one that must wait for a var is queued and runs on a worker once the var is free, so it still
// overlaps with the pushing thread.
TEST_CASE("a cheap op runs on the pushing thread when its vars are free, else on a worker") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.cpu_workers = 1;
  TestEngine engine(config);
  const Var input = engine->new_var(), output = engine->new_var();
  const std::thread::id pusher = std::this_thread::get_id();
  std::thread::id ran_on;
  engine->push([&] { ran_on = std::this_thread::get_id(); }, cpu(), {input}, {output},
               {.name = "cheap", .inline_when_ready = true});
  CHECK(ran_on == pusher);  // already ran: no wait needed

  BlockingOp slow_writer(*engine, "slow writer", {}, {input});
  std::atomic<bool> ran{false};
  std::thread::id queued_ran_on;
  engine->push(
      [&] {
        queued_ran_on = std::this_thread::get_id();
        ran = true;
      },
      cpu(), {input}, {output}, {.name = "cheap, waits", .inline_when_ready = true});
  CHECK_FALSE(ran.load());  // the push returned without running it
  slow_writer.release();
  engine->wait_all();
  CHECK(ran.load());
  CHECK(queued_ran_on != pusher);
  engine->delete_var(input);
  engine->delete_var(output);
}
