// Lifetimes and bounds: delete_var, destroying an engine with work pending, and backpressure.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::Completion;
using tandem::cpu;
using tandem::EngineKind;
using tandem::RunContext;
using tandem::Var;
using namespace tandem_test;

// Completions of async ops that the test holds, to keep those ops in flight.
class HeldOps {
 public:
  // Pushes an async op that hands its completion to this holder.
  void push(tandem::Engine& engine) {
    engine.push(
        [this](RunContext& ctx) {
          std::lock_guard lock(mutex_);
          held_.push_back(ctx.take_completion());
        },
        cpu(), {}, {}, {.name = "held", .async_completion = true});
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  // Waits until `n` ops have handed over their completions.
  bool wait_for_count(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (count() < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }
  void complete_one() {
    Completion done;
    {
      std::lock_guard lock(mutex_);
      REQUIRE(!held_.empty());
      done = std::move(held_.back());
      held_.pop_back();
    }
    done();
  }
  void complete_all() {
    while (count() > 0) complete_one();
  }

 private:
  std::mutex mutex_;
  std::vector<Completion> held_;
};

// Polls `condition` until it holds or the patience runs out.
template <class Condition>
bool eventually(Condition&& condition) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The threaded engine of test_config, with push blocking past `max_ops_in_flight` ops.
tandem::EngineConfig bounded_config(std::size_t max_ops_in_flight) {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.max_ops_in_flight = max_ops_in_flight;
  return config;
}

// Pushes 50 ops that write `v`, each adding one to `ran`. Pushed while an op holds v, none of
// them can finish before that op does, so a push that waited for room would wait forever.
void push_writers_of(tandem::Engine& engine, Var v, std::atomic<int>& ran) {
  for (int i = 0; i < 50; ++i) {
    engine.push([&ran] { ran.fetch_add(1); }, cpu(), {}, {v}, {.name = "inner"});
  }
}

}  // namespace

TEST_CASE("delete_var runs the deleter after every earlier op on the var") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine->new_var();  // deleted by the test
  std::atomic<int> ops_done{0};
  engine->push(
      [&ops_done] {
        std::this_thread::sleep_for(10ms);
        ops_done.fetch_add(1);
      },
      cpu(), {}, {v});
  for (int i = 0; i < 3; ++i) {
    engine->push(
        [&ops_done] {
          std::this_thread::sleep_for(10ms);
          ops_done.fetch_add(1);
        },
        cpu(), {v}, {});
  }
  std::atomic<int> seen_by_deleter{-1};
  engine->delete_var(v, [&] { seen_by_deleter.store(ops_done.load()); });
  engine->wait_all();
  CHECK(seen_by_deleter.load() == 4);
}

// A deletion is cheap: on an idle var the threaded engine runs the deleter at once on the
// calling thread, as the naive engine does; on a var with queued ops it runs on a worker after
// the last of them, and the call returns without waiting.
TEST_CASE("delete_var of an idle var runs the deleter at once on the calling thread") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.cpu_workers = 1;
  TestEngine engine(config);
  const std::thread::id caller = std::this_thread::get_id();

  Var idle = engine->new_var();  // deleted by the test
  engine->push([] {}, cpu(), {}, {idle});
  engine->wait_all();
  std::thread::id idle_deleter_ran_on;
  engine->delete_var(idle, [&] { idle_deleter_ran_on = std::this_thread::get_id(); });
  CHECK(idle_deleter_ran_on == caller);  // already ran: nothing to wait for
  CHECK(engine->stats().ops_in_flight == 0);

  Var busy = engine->new_var();  // deleted by the test
  BlockingOp slow_reader(*engine, "slow reader", {busy});
  std::atomic<bool> busy_deleted{false};
  std::thread::id busy_deleter_ran_on;
  engine->delete_var(busy, [&] {
    busy_deleter_ran_on = std::this_thread::get_id();
    busy_deleted = true;
  });
  CHECK_FALSE(busy_deleted.load());  // queued behind the reader
  slow_reader.release();
  engine->wait_all();
  CHECK(busy_deleted.load());
  CHECK(busy_deleter_ran_on != caller);
  CHECK(engine->stats().vars_alive == 0);
}

TEST_CASE("an exception from a deleter is reported once by wait_all, inline or queued") {
  const EngineKind kind = each_engine_kind();
  for (const bool var_idle : {true, false}) {
    CAPTURE(var_idle);
    auto engine = make_engine(kind);
    Var v = engine->new_var();  // deleted by the test
    engine->push([] {}, cpu(), {}, {v});
    // An idle var's deleter runs inline in delete_var (on the threaded engine too); otherwise
    // it is queued behind the op.
    if (var_idle) engine->wait_all();
    engine->delete_var(v, [] { throw std::runtime_error("could not close file"); });
    try {
      engine->wait_all();
      FAIL("wait_all should report the deleter's exception");
    } catch (const tandem::OpError& error) {
      CHECK(nested_message(error) == "could not close file");
    }
    CHECK_NOTHROW(engine->wait_all());
    CHECK(engine->stats().ops_failed == 1);
    CHECK(engine->stats().ops_completed == engine->stats().ops_pushed);
  }
}

TEST_CASE("a deleter runs even when its var is poisoned") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine->new_var();  // deleted by the test
  engine->push([] { throw std::runtime_error("bad"); }, cpu(), {}, {v}, {.name = "bad"});
  std::atomic<bool> deleted{false};
  engine->delete_var(v, [&deleted] { deleted.store(true); });
  CHECK_THROWS_AS(engine->wait_all(), tandem::OpError);  // the op's error, not the deleter's
  CHECK(deleted.load());
  CHECK_NOTHROW(engine->wait_all());
}

TEST_CASE("deleted vars are recycled without mixing up their state") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  // A poisoned var is deleted; the vars created after it must start clean.
  for (int i = 0; i < 300; ++i) {
    Var v = engine->new_var();  // deleted by the test
    engine->push([] { throw std::runtime_error("bad"); }, cpu(), {}, {v});
    engine->delete_var(v);
  }
  while (true) {
    try {
      engine->wait_all();
      break;
    } catch (const tandem::OpError&) {
    }
  }
  for (int i = 0; i < 300; ++i) {
    Var v = engine->new_var();  // deleted by the test
    CHECK_NOTHROW(engine->wait_for_var(v));
    bool ran = false;
    engine->push([&ran] { ran = true; }, cpu(), {v}, {});
    engine->wait_to_write(v);
    CHECK(ran);
    engine->delete_var(v);
  }
  engine->wait_all();
}

TEST_CASE("destroying an engine finishes its pending ops") {
  const EngineKind kind = each_engine_kind();
  std::atomic<int> done{0};
  std::vector<std::thread> completers;
  std::mutex completers_mutex;
  {
    // A plain engine: the test's helper would wait for the ops before destroying it.
    auto engine = tandem::Engine::create(test_config(kind));
    Var v = engine->new_var();
    for (int i = 0; i < 100; ++i) {
      engine->push(
          [&done] {
            std::this_thread::sleep_for(100us);
            done.fetch_add(1);
          },
          cpu(), {}, {v});
    }
    engine->push(
        [&](RunContext& ctx) {
          std::lock_guard lock(completers_mutex);
          completers.emplace_back([&done, finish = ctx.take_completion()]() mutable {
            std::this_thread::sleep_for(20ms);
            done.fetch_add(1);
            finish();
          });
        },
        cpu(), {v}, {}, {.async_completion = true});
    engine->delete_var(v);
  }  // the destructor waits
  CHECK(done.load() == 101);
  for (auto& thread : completers) thread.join();
}

// The last op of an engine may end on a thread the engine does not own (an async op's
// Completion). Destroying the engine must wait until that thread no longer touches it: a
// sanitizer build reports it if it does not.
TEST_CASE("an engine can be destroyed while a Completion on another thread ends its last op") {
  const EngineKind kind = each_engine_kind();
  const int rounds = std::max(50, static_cast<int>(300 * test_scale()));
  int finished = 0;
  for (int round = 0; round < rounds; ++round) {
    std::thread completer;
    std::atomic<bool> ran{false};
    // The completer's delay sweeps the moment the op ends across the destructor's wait.
    const int delay = (round * 37) % 2000;
    {
      auto engine = tandem::Engine::create(test_config(kind));
      Flag handed_over;
      engine->push(
          [&](RunContext& ctx) {
            completer = std::thread([&ran, delay, done = ctx.take_completion()]() mutable {
              spin_for(delay);
              ran.store(true);
              done();
            });
            handed_over.raise();
          },
          cpu(), {}, {}, {.async_completion = true});
      REQUIRE(handed_over.wait());
    }  // destroyed while the completer may still be inside done()
    completer.join();
    if (ran.load()) ++finished;
  }
  CHECK(finished == rounds);
}

TEST_CASE("push blocks past max_ops_in_flight and resumes once ops finish") {
  TestEngine engine(bounded_config(4));
  HeldOps held;
  for (int i = 0; i < 4; ++i) held.push(*engine);
  REQUIRE(held.wait_for_count(4));
  CHECK(engine->stats().pushes_blocked == 0);

  Flag pushed;
  std::thread pusher([&] {
    engine->push([] {}, cpu(), {}, {});
    pushed.raise();
  });
  // The pusher must be blocked in push: the engine says so, and push has not returned.
  CHECK(eventually([&] { return engine->stats().pushes_blocked == 1; }));
  std::this_thread::sleep_for(30ms);  // a chance for a wrong push to return
  CHECK_FALSE(pushed.raised());
  CHECK(engine->stats().ops_in_flight == 4);

  held.complete_one();
  CHECK(pushed.wait());
  pusher.join();
  held.complete_all();
  engine->wait_all();
  CHECK(engine->stats().ops_pushed == 5);
  CHECK(engine->stats().pushes_blocked == 1);
}

TEST_CASE("a push from inside an op never blocks on backpressure") {
  TestEngine engine(bounded_config(2));
  Watchdog watchdog("pushes from inside an op past max_ops_in_flight");
  Var v = engine.var();
  tandem::Engine& e = *engine;
  std::atomic<int> inner_ran{0};
  std::uint64_t in_flight_inside = 0;
  engine->push(
      [&] {
        push_writers_of(e, v, inner_ran);  // they write the var this op holds
        in_flight_inside = e.stats().ops_in_flight;
      },
      cpu(), {}, {v}, {.name = "outer"});
  engine->wait_all();
  CHECK(inner_ran.load() == 50);
  CHECK(in_flight_inside == 51);
  CHECK(engine->stats().pushes_blocked == 0);
}

TEST_CASE("what an op's captures push when they are destroyed never blocks on backpressure") {
  // An op's callable is destroyed by the worker after its body ran, before the op completes.
  // A capture's destructor that pushes (an NDArray's deletion op, say) must not wait for room:
  // the ops it would wait for may need this op to complete first.
  TestEngine engine(bounded_config(2));
  Watchdog watchdog("pushes from an op's captures' destructors past max_ops_in_flight");
  Var v = engine.var();
  tandem::Engine& e = *engine;
  std::atomic<int> inner_ran{0};
  for (const bool poisoned : {false, true}) {
    CAPTURE(poisoned);
    Var input = engine.var();
    if (poisoned) {
      e.push([] { throw std::runtime_error("upstream failure"); }, cpu(), {}, {input},
             {.name = "fail"});
    }
    // They write the var the op holds.
    std::shared_ptr<void> pushes_when_destroyed(nullptr,
                                                [&](void*) { push_writers_of(e, v, inner_ran); });
    e.push([hold = std::move(pushes_when_destroyed)] {}, cpu(), {input}, {v}, {.name = "outer"});
    if (poisoned) {
      CHECK_THROWS(engine->wait_all());
    } else {
      engine->wait_all();
    }
  }
  CHECK(inner_ran.load() == 100);
  CHECK(engine->stats().pushes_blocked == 0);
}

TEST_CASE("max_ops_in_flight = 0 never blocks a push") {
  TestEngine engine(bounded_config(0));
  HeldOps held;
  for (int i = 0; i < 300; ++i) held.push(*engine);
  REQUIRE(held.wait_for_count(300));
  CHECK(engine->stats().ops_in_flight == 300);
  CHECK(engine->stats().pushes_blocked == 0);
  held.complete_all();
  engine->wait_all();
}

TEST_CASE("pushes from several threads against a small bound all finish") {
  TestEngine engine(bounded_config(8));
  Watchdog watchdog("four threads pushing against max_ops_in_flight = 8");
  Var shared = engine.var();
  std::atomic<int> ran{0};
  std::vector<std::thread> pushers;
  for (int t = 0; t < 4; ++t) {
    pushers.emplace_back([&] {
      Var own = engine.var();
      for (int i = 0; i < 2000; ++i) {
        engine->push([&ran] { ran.fetch_add(1); }, cpu(), {shared}, {own});
      }
    });
  }
  for (auto& thread : pushers) thread.join();
  engine->wait_all();
  CHECK(ran.load() == 8000);
  CHECK(engine->stats().ops_in_flight == 0);
}

TEST_CASE("the in-flight bound holds for every mix of pushes and delete_var, on every thread") {
  // The bound is checked on every few submissions of each thread; a delete_var is a submission.
  // Each thread may overshoot by at most that interval (32 ops).
  constexpr std::uint64_t kBound = 1024, kSlackPerThread = 32;
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    tandem::EngineConfig config = test_config(EngineKind::threaded);
    config.max_ops_in_flight = kBound;
    TestEngine engine(config);
    Var gate = engine.var();
    std::atomic<bool> open{false};
    // Every op pushed below reads `gate`: none can finish before the gate op does.
    engine->push(
        [&open] {
          while (!open.load()) std::this_thread::sleep_for(1ms);
        },
        cpu(), {}, {gate}, {.name = "gate"});
    std::atomic<int> finished_pushing{0};
    std::vector<std::thread> pushers;
    for (int t = 0; t < threads; ++t) {
      pushers.emplace_back([&] {
        tandem::Engine& e = *engine;
        for (int i = 0; i < 20000; ++i) {
          if (i % 32 == 0) {
            e.delete_var(e.new_var());  // the mix that stepped around the check
          } else {
            e.push([] {}, cpu(), {gate}, {}, {.name = "behind the gate"});
          }
        }
        finished_pushing.fetch_add(1);
      });
    }
    CHECK(eventually([&] {
      return engine->stats().pushes_blocked >= static_cast<std::uint64_t>(threads) ||
             finished_pushing.load() > 0;
    }));
    CHECK(finished_pushing.load() == 0);
    CHECK(engine->stats().ops_in_flight <= kBound + kSlackPerThread * threads);
    open = true;
    for (auto& thread : pushers) thread.join();
    engine->wait_all();
    CHECK(engine->stats().pushes_over_bound == 0);
  }
}

TEST_CASE("an I/O thread may push before it completes an async op, even past a full bound") {
  const EngineKind kind = each_engine_kind();
  tandem::EngineConfig config = test_config(kind);
  config.max_ops_in_flight = 64;
  TestEngine engine(config);
  Watchdog watchdog("a push made before completing an async op, with the bound reached", 60s);
  Var read_data = engine.var(), follow_up = engine.var();
  std::mutex mutex;
  std::condition_variable handed_over;
  Completion pending;
  std::atomic<int> order{0}, read_at{-1}, follow_up_at{-1}, behind_ran{0};
  std::thread io([&] {
    Completion done;
    {
      std::unique_lock lock(mutex);
      handed_over.wait(lock, [&] { return pending.pending(); });
      done = std::move(pending);
    }
    // The threaded engine's main thread fills the bound behind the async op and blocks.
    if (kind == EngineKind::threaded) {
      CHECK(eventually([&] { return engine->stats().pushes_blocked > 0; }));
    }
    engine->push([&] { follow_up_at = order.fetch_add(1); }, cpu(), {read_data}, {follow_up},
                 {.name = "follow-up"});
    read_at = order.fetch_add(1);
    done();
  });
  engine->push(
      [&](RunContext& ctx) {
        std::lock_guard lock(mutex);
        pending = ctx.take_completion();
        handed_over.notify_one();
      },
      cpu(), {}, {read_data}, {.name = "async read", .async_completion = true});
  for (int i = 0; i < 500; ++i) {
    engine->push([&behind_ran] { behind_ran.fetch_add(1); }, cpu(), {read_data}, {},
                 {.name = "behind the read"});
  }
  io.join();
  engine->wait_all();
  CHECK(behind_ran.load() == 500);
  CHECK(read_at.load() == 0);
  CHECK(follow_up_at.load() == 1);  // after the async op it depends on
}
