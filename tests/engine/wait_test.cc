// Sync points: wait_for_var, wait_to_write and wait_all block the caller only, for exactly what
// they promise, and refuse to run from inside an op.
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;

}  // namespace

TEST_CASE("wait_for_var returns once every earlier write of the var has finished") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::atomic<int> value{0};
  engine->push(
      [&value] {
        std::this_thread::sleep_for(20ms);
        value.store(1);
      },
      cpu(), {}, {v});
  engine->push(
      [&value] {
        std::this_thread::sleep_for(20ms);
        value.store(2);
      },
      cpu(), {v}, {v});
  engine->wait_for_var(v);
  CHECK(value.load() == 2);
  engine->wait_all();
}

TEST_CASE("wait_for_var does not wait for earlier reads") {
  auto engine = make_engine(EngineKind::threaded);
  Var v = engine.var();
  engine->push([] {}, cpu(), {}, {v});
  Flag read_started, release_read;
  engine->push(
      [&] {
        read_started.raise();
        release_read.wait();
      },
      cpu(), {v}, {});
  REQUIRE(read_started.wait());
  auto waited = std::async(std::launch::async, [&] { engine->wait_for_var(v); });
  const bool returned_while_read_runs = waited.wait_for(kPatience) == std::future_status::ready;
  release_read.raise();
  waited.get();
  CHECK(returned_while_read_runs);
  engine->wait_all();
}

TEST_CASE("wait_to_write also waits for earlier reads") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::atomic<int> reads_done{0};
  for (int i = 0; i < 2; ++i) {
    engine->push(
        [&reads_done] {
          std::this_thread::sleep_for(20ms);
          reads_done.fetch_add(1);
        },
        cpu(), {v}, {});
  }
  engine->wait_to_write(v);
  CHECK(reads_done.load() == 2);
  engine->wait_all();
}

TEST_CASE("wait_to_write waits for the earlier write") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::atomic<bool> written{false};
  engine->push(
      [&written] {
        std::this_thread::sleep_for(20ms);
        written.store(true);
      },
      cpu(), {}, {v});
  engine->wait_to_write(v);
  CHECK(written.load());
}

TEST_CASE("wait_all waits for every op pushed so far") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  std::atomic<int> done{0};
  std::vector<Var> vars;
  for (int i = 0; i < 40; ++i) vars.push_back(engine.var());
  for (int i = 0; i < 40; ++i) {
    engine->push(
        [&done] {
          std::this_thread::sleep_for(1ms);
          done.fetch_add(1);
        },
        cpu(), {}, {vars[static_cast<std::size_t>(i)]});
    engine->push([&done] { done.fetch_add(1); }, cpu(), {}, {});  // ops without vars too
  }
  engine->wait_all();
  CHECK(done.load() == 80);
  const tandem::EngineStats stats = engine->stats();
  CHECK(stats.ops_pushed == 80);
  CHECK(stats.ops_completed == 80);
  CHECK(stats.ops_in_flight == 0);
}

TEST_CASE("a wait blocks only the calling thread") {
  auto engine = make_engine(EngineKind::threaded);
  Var held = engine.var(), other = engine.var();
  Flag release;
  engine->push([&release] { release.wait(); }, cpu(), {}, {held});
  // While this thread waits for `held`, another thread pushes an op that releases it: the
  // engine must keep accepting and running ops meanwhile.
  std::thread helper([&] {
    std::this_thread::sleep_for(20ms);
    engine->push([&release] { release.raise(); }, cpu(), {}, {other});
  });
  engine->wait_for_var(held);
  CHECK(release.raised());
  helper.join();
  engine->wait_all();
}

TEST_CASE("waits on a var with nothing pending return at once") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var fresh = engine.var();
  engine->wait_for_var(fresh);
  engine->wait_to_write(fresh);
  engine->wait_all();
  CHECK(engine->stats().ops_pushed == 0);
}

TEST_CASE("waiting from inside an op throws DeadlockError instead of hanging") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("a wait from inside an op");
  Var mine = engine.var(), other = engine.var();
  engine->push([] {}, cpu(), {}, {other});
  tandem::Engine& e = *engine;
  struct Outcome {
    bool deadlock_error = false;
    std::string message;
  };
  Outcome for_var, to_write, all, own_var;
  auto attempt = [](Outcome& outcome, auto&& wait) {
    try {
      wait();
    } catch (const tandem::DeadlockError& error) {
      outcome.deadlock_error = true;
      outcome.message = error.what();
    } catch (const std::exception& error) {
      outcome.message = error.what();
    }
  };
  engine->push(
      [&] {
        attempt(for_var, [&] { e.wait_for_var(other); });
        attempt(to_write, [&] { e.wait_to_write(other); });
        attempt(all, [&] { e.wait_all(); });
        attempt(own_var, [&] { e.wait_for_var(mine); });
      },
      cpu(), {}, {mine}, {.name = "impatient"});
  engine->wait_all();
  for (const Outcome* outcome : {&for_var, &to_write, &all, &own_var}) {
    CAPTURE(outcome->message);
    CHECK(outcome->deadlock_error);
    CHECK(outcome->message.find("impatient") != std::string::npos);
  }
  CHECK(for_var.message.find("wait_for_var") != std::string::npos);
  CHECK(all.message.find("wait_all") != std::string::npos);
}

TEST_CASE("waiting from inside an op on the priority lane throws DeadlockError") {
  auto engine = make_engine(EngineKind::threaded);
  Watchdog watchdog("a wait from inside an urgent op");
  Var v = engine.var();
  tandem::Engine& e = *engine;
  std::atomic<bool> threw{false};
  engine->push(
      [&] {
        try {
          e.wait_to_write(v);
        } catch (const tandem::DeadlockError&) {
          threw.store(true);
        }
      },
      cpu(), {}, {v}, {.name = "urgent", .priority = 1});
  engine->wait_all();
  CHECK(threw.load());
}

TEST_CASE("waits on an invalid var throw tandem::Error") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  CHECK_THROWS_AS(engine->wait_for_var(Var{}), tandem::Error);
  CHECK_THROWS_AS(engine->wait_to_write(Var{}), tandem::Error);
  CHECK_THROWS_AS(engine->delete_var(Var{}), tandem::Error);
  engine->wait_all();
}

TEST_CASE("wait_all returns once the ops pushed before it finish while another thread pushes") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var mine = engine.var(), theirs = engine.var();
  std::atomic<bool> stop{false}, gave_up{false};
  std::atomic<std::uint64_t> pushed_by_other{0};
  std::thread other([&] {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!stop.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        gave_up = true;
        break;
      }
      engine->push([] { spin_for(200); }, cpu(), {}, {theirs}, {.name = "other thread"});
      pushed_by_other.fetch_add(1);
    }
  });
  while (pushed_by_other.load() < 1000) std::this_thread::yield();
  std::atomic<bool> mine_ran{false};
  engine->push([&mine_ran] { mine_ran = true; }, cpu(), {}, {mine}, {.name = "mine"});
  engine->wait_all();  // must not wait for the other thread to stop pushing
  CHECK(mine_ran.load());
  stop = true;
  other.join();
  CHECK_FALSE(gave_up.load());
}

TEST_CASE("wait_all also waits for the ops that ops pushed before it push while it waits") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  tandem::Engine& e = *engine;
  std::atomic<int> inner_ran{0};
  engine->push(
      [&] {
        std::this_thread::sleep_for(50ms);  // wait_all has begun by now
        for (int i = 0; i < 20; ++i) {
          e.push(
              [&inner_ran] {
                std::this_thread::sleep_for(1ms);
                inner_ran.fetch_add(1);
              },
              cpu(), {}, {v}, {.name = "inner"});
        }
      },
      cpu(), {}, {}, {.name = "outer"});
  engine->wait_all();
  CHECK(inner_ran.load() == 20);
}
