// Automatic capture (tandem/auto_capture.h): a loop of pushes inside an AutoCapture scope
// behaves as the same pushes made eagerly, while its repetitions are entered from a plan.
#include <tandem/auto_capture.h>
#include <tandem/graph.h>

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "capture_program.h"
#include "test_support.h"

using namespace tandem;
using tandem_test::OpSpec;
using tandem_test::Outcome;
using tandem_test::test_scale;

namespace {

std::unique_ptr<Engine> make_engine(EngineKind kind) {
  return Engine::create(tandem_test::test_config(kind));
}

// Loop bodies on 5 vars, their ops named op0..op3 in turn; a throwing op throws in some rounds
// only (every 1 to 7 rounds).
constexpr tandem_test::ProgramShape kBodyShape{.vars = 5,
                                               .distinct_names = 4,
                                               .access_odds = 8,
                                               .kind_odds = 24,
                                               .no_skip_odds = 10,
                                               .throws_some_rounds = true};

// How a run disturbs the loop: an odd op every `odd_every` rounds (a mismatch), a wait every
// `wait_every` rounds (a flush); 0: never.
struct Disturbance {
  int odd_every = 0;
  int wait_every = 0;
};

Outcome run_loop(EngineKind kind, bool auto_capture, const std::vector<OpSpec>& body, int rounds,
                 Disturbance disturbance, AutoCaptureStats* stats = nullptr) {
  auto engine = make_engine(kind);
  tandem_test::ProgramState state(*engine, kBodyShape.vars);
  {
    std::unique_ptr<AutoCapture> scope;
    if (auto_capture) scope = std::make_unique<AutoCapture>(*engine, AutoCaptureOptions{16, 256});
    for (int round = 0; round < rounds; ++round) {
      for (std::size_t i = 0; i < body.size(); ++i)
        tandem_test::push_op(*engine, state, body[i], static_cast<int>(i), round);
      if (disturbance.odd_every > 0 && round % disturbance.odd_every == disturbance.odd_every - 1) {
        engine->push([&state, round] { state.values[0] += static_cast<unsigned>(round); }, cpu(),
                     {}, {state.vars[0]}, {.name = "odd"});
      }
      if (disturbance.wait_every > 0 && round % disturbance.wait_every == 0)
        (void)tandem_test::error_of(*engine,
                                    state.vars[static_cast<std::size_t>(round % kBodyShape.vars)]);
    }
    if (scope && stats != nullptr) *stats = scope->stats();
  }
  const Outcome outcome = tandem_test::outcome_of(*engine, state);
  state.release(*engine);
  return outcome;
}

}  // namespace

TEST_CASE("a repeated loop is entered from a plan and gives the eager results") {
  std::mt19937 random(7);
  std::vector<OpSpec> body;
  for (int i = 0; i < 12; ++i) {
    OpSpec op;
    op.reads = {i % kBodyShape.vars};
    op.writes = {(i + 1) % kBodyShape.vars};
    op.name = tandem_test::op_name(i, kBodyShape.distinct_names);
    body.push_back(op);
  }
  AutoCaptureStats stats;
  const Outcome automatic = run_loop(EngineKind::threaded, true, body, 50, {}, &stats);
  const Outcome eager = run_loop(EngineKind::naive, false, body, 50, {});
  CHECK(automatic == eager);
  CHECK(stats.pushes_seen == 600);
  CHECK(stats.windows_entered >= 20);
  CHECK(stats.fallbacks == 0);
  MESSAGE("windows " << stats.windows_entered << ", ops in windows " << stats.ops_in_windows
                     << ", flushes " << stats.flushes);
}

TEST_CASE("random loops under automatic capture match the naive engine, errors included") {
  const int programs = std::max(4, static_cast<int>(60 * test_scale()));
  for (int p = 0; p < programs; ++p) {
    std::mt19937 random(static_cast<unsigned>(1000 + p));
    const std::vector<OpSpec> body =
        tandem_test::random_program(random, 1 + static_cast<int>(random() % 20), kBodyShape);
    const Disturbance disturbance{static_cast<int>(random() % 3) * 5,
                                  static_cast<int>(random() % 3) * 7};
    const int rounds = 20 + static_cast<int>(random() % 30);
    CAPTURE(p);
    AutoCaptureStats stats;
    const Outcome automatic =
        run_loop(EngineKind::threaded, true, body, rounds, disturbance, &stats);
    const Outcome eager = run_loop(EngineKind::naive, false, body, rounds, disturbance);
    CHECK(automatic == eager);
    if (disturbance.odd_every == 0 && disturbance.wait_every == 0) CHECK(stats.windows_entered > 0);
  }
}

TEST_CASE("a mismatching push enters the buffered pushes first, in push order") {
  auto engine = make_engine(EngineKind::threaded);
  Var x = engine->new_var();
  std::vector<int> order;
  {
    AutoCapture scope(*engine, {.min_window_ops = 4, .max_window_ops = 64});
    for (int i = 0; i < 40; ++i) {
      engine->push([&order, i] { order.push_back(i); }, cpu(), {}, {x}, {.name = "append"});
    }
    engine->push([&order] { order.push_back(-1); }, cpu(), {x}, {x}, {.name = "other"});
    CHECK(scope.stats().fallbacks == 1);
    CHECK(scope.stats().windows_entered > 0);
  }
  engine->wait_all();
  REQUIRE(order.size() == 41);
  for (int i = 0; i < 40; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  CHECK(order.back() == -1);
  engine->delete_var(x);
}

TEST_CASE("a wait flushes the buffered pushes of this thread") {
  auto engine = make_engine(EngineKind::threaded);
  Var x = engine->new_var();
  std::int64_t value = 0;
  AutoCapture scope(*engine, {.min_window_ops = 8, .max_window_ops = 64});
  for (int i = 1; i <= 100; ++i) {
    engine->push([&value, i] { value += i; }, cpu(), {}, {x}, {.name = "add"});
    if (i % 13 == 0) {
      engine->wait_for_var(x);
      CHECK(value == std::int64_t{i} * (i + 1) / 2);
    }
  }
  engine->wait_for_var(x);
  CHECK(value == 5050);
  engine->delete_var(x);
}

TEST_CASE("a push with a deleted var throws as an eager push would") {
  auto engine = make_engine(EngineKind::threaded);
  Var x = engine->new_var(), y = engine->new_var();
  int runs = 0;
  AutoCapture scope(*engine, {.min_window_ops = 4, .max_window_ops = 64});
  for (int i = 0; i < 30; ++i) engine->push([&runs] { ++runs; }, cpu(), {y}, {x}, {.name = "r"});
  engine->delete_var(y);
  CHECK_THROWS_AS(engine->push([&runs] { ++runs; }, cpu(), {y}, {x}, {.name = "r"}), Error);
  engine->wait_all();
  CHECK(runs == 30);
  engine->delete_var(x);
}

TEST_CASE("automatic capture does nothing on the naive engine") {
  auto engine = make_engine(EngineKind::naive);
  Var x = engine->new_var();
  AutoCapture scope(*engine);
  for (int i = 0; i < 10; ++i) engine->push([] {}, cpu(), {}, {x}, {.name = "nothing"});
  CHECK(scope.stats().pushes_seen == 0);
  engine->delete_var(x);
}

TEST_CASE("automatic capture refuses to nest") {
  auto engine = make_engine(EngineKind::threaded);
  AutoCapture scope(*engine);
  CHECK_THROWS_AS(AutoCapture{*engine}, Error);
}

TEST_CASE("threads with their own automatic capture on one engine keep their results") {
  auto engine = make_engine(EngineKind::threaded);
  constexpr int kThreads = 3;
  const int rounds = std::max(50, static_cast<int>(2000 * test_scale()));
  std::array<Var, kThreads> vars{};
  std::array<std::int64_t, kThreads> values{};
  Var shared = engine->new_var();
  std::int64_t shared_reads = 0;
  for (Var& var : vars) var = engine->new_var();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      AutoCapture scope(*engine, {.min_window_ops = 32, .max_window_ops = 256});
      for (int i = 0; i < rounds; ++i) {
        engine->push([&values, t, i] { values[t] = values[t] * 3 + i; }, cpu(), {},
                     {vars[static_cast<std::size_t>(t)]}, {.name = "step"});
        engine->push([&values, t] { values[t] %= 1000003; }, cpu(), {},
                     {vars[static_cast<std::size_t>(t)]}, {.name = "reduce"});
        if (t == 0) {
          engine->push([&shared_reads] { ++shared_reads; }, cpu(), {vars[0]}, {shared},
                       {.name = "count"});
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  engine->wait_all();
  std::int64_t expected = 0;
  for (int i = 0; i < rounds; ++i) expected = (expected * 3 + i) % 1000003;
  for (int t = 0; t < kThreads; ++t) CHECK(values[static_cast<std::size_t>(t)] == expected);
  CHECK(shared_reads == rounds);
  for (Var var : vars) engine->delete_var(var);
  engine->delete_var(shared);
  engine->wait_all();
}

// Issue 27's outside round: an AutoCapture destroyed after its engine lost the pushes it
// buffered, then crashed; one destroyed on another thread left the opening thread unable ever
// to open another ("another one is open").
TEST_CASE(
    "an AutoCapture that outlives its engine: the engine enters its pushes, nothing crashes") {
  std::int64_t value = 0;
  auto engine = make_engine(EngineKind::threaded);
  auto scope = std::make_unique<AutoCapture>(*engine, AutoCaptureOptions{8, 64});
  Var x = engine->new_var();
  // Past detection: the pushes since the last complete window of 8 are buffered, not entered
  // (no sync point here: a wait or delete_var would enter them).
  for (int i = 1; i <= 45; ++i)
    engine->push([&value, i] { value += i; }, cpu(), {}, {x}, {.name = "add"});
  const AutoCaptureStats stats = scope->stats();
  CHECK(stats.pushes_seen == 45);
  engine.reset();  // the engine ends first: it enters the buffered pushes and runs them
  CHECK(value == 45 * 46 / 2);
  scope.reset();  // does nothing more (it logs the misuse)
  // The thread can open a new automatic capture on a new engine.
  auto other = make_engine(EngineKind::threaded);
  AutoCapture again(*other, {.min_window_ops = 8, .max_window_ops = 64});
}

TEST_CASE("an AutoCapture destroyed on another thread: its pushes entered, the opener reopens") {
  auto engine = make_engine(EngineKind::threaded);
  Var x = engine->new_var();
  std::int64_t value = 0;
  auto scope = std::make_unique<AutoCapture>(*engine, AutoCaptureOptions{8, 64});
  for (int i = 1; i <= 40; ++i)
    engine->push([&value, i] { value += i; }, cpu(), {}, {x}, {.name = "add"});
  std::thread([&scope] { scope.reset(); }).join();
  engine->wait_for_var(x);
  CHECK(value == 40 * 41 / 2);
  // This thread's hook is dropped at its next AutoCapture (before: "another one is open").
  AutoCapture again(*engine, {.min_window_ops = 8, .max_window_ops = 64});
  for (int i = 1; i <= 40; ++i)
    engine->push([&value, i] { value += i; }, cpu(), {}, {x}, {.name = "add"});
  engine->wait_for_var(x);
  CHECK(value == 40 * 41);
  engine->delete_var(x);
}
