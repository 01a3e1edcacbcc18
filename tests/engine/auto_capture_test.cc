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

#include "test_support.h"

using namespace tandem;
using tandem_test::test_scale;

namespace {

std::unique_ptr<Engine> make_engine(EngineKind kind) {
  EngineConfig config;
  config.kind = kind;
  config.cpu_workers = 2;
  return Engine::create(config);
}

constexpr int kVars = 5;
constexpr std::array<const char*, 4> kOpNames = {"op0", "op1", "op2", "op3"};

// One op of a random loop body: mixes the round and what it reads into what it writes.
struct OpSpec {
  std::vector<int> reads, writes;
  enum Kind { plain, throws, async_ok, async_fails, pushes } kind = plain;
  bool no_skip = false;
  int throw_every = 0;  // throws: in the rounds that are a multiple of this
};

struct ProgramState {
  std::array<std::uint64_t, kVars> values{};
  std::array<Var, kVars> vars{};
  Var nested;
  std::int64_t nested_count = 0;
};

std::vector<OpSpec> random_body(std::mt19937& random, int ops) {
  auto pick = [&](int max) { return static_cast<int>(random() % static_cast<unsigned>(max)); };
  std::vector<OpSpec> body;
  for (int i = 0; i < ops; ++i) {
    OpSpec op;
    for (int v = 0; v < kVars; ++v) {
      const int roll = pick(8);
      if (roll < 2) op.reads.push_back(v);
      if (roll == 2) op.writes.push_back(v);
      if (roll == 3) {
        op.reads.push_back(v);
        op.writes.push_back(v);
      }
    }
    const int kind = pick(24);
    if (kind == 0) op.kind = OpSpec::throws;
    if (kind == 1) op.kind = OpSpec::async_ok;
    if (kind == 2) op.kind = OpSpec::async_fails;
    if (kind == 3) op.kind = OpSpec::pushes;
    op.throw_every = 1 + pick(7);
    op.no_skip = pick(10) == 0;
    body.push_back(std::move(op));
  }
  return body;
}

// Pushes op `index` of the body for `round`: the closure captures the round, as a loop's
// closures capture what changes per iteration.
void push_op(Engine& engine, ProgramState& state, const OpSpec& spec, int index, int round) {
  std::vector<Var> reads, writes;
  for (int v : spec.reads) reads.push_back(state.vars[v]);
  for (int v : spec.writes) writes.push_back(state.vars[v]);
  const bool async = spec.kind == OpSpec::async_ok || spec.kind == OpSpec::async_fails;
  engine.push(
      [&engine, &state, &spec, index, round](RunContext& ctx) {
        std::uint64_t mix = static_cast<std::uint64_t>(index) * 1000 + static_cast<unsigned>(round);
        for (int v : spec.reads) mix = mix * 31 + state.values[v];
        if (spec.kind == OpSpec::throws && round % spec.throw_every == 0)
          throw std::runtime_error("op " + std::to_string(index) + " threw in round " +
                                   std::to_string(round));
        for (int v : spec.writes) state.values[v] = mix + static_cast<unsigned>(v);
        if (spec.kind == OpSpec::async_ok) ctx.take_completion()();
        if (spec.kind == OpSpec::async_fails) {
          ctx.take_completion().fail(std::make_exception_ptr(std::runtime_error("async failed")));
        }
        if (spec.kind == OpSpec::pushes) {
          engine.push([&state] { ++state.nested_count; }, cpu(), {}, {state.nested},
                      {.name = "nested"});
        }
      },
      cpu(), reads, writes,
      {.name = kOpNames[static_cast<std::size_t>(index) % kOpNames.size()],
       .async_completion = async,
       .no_skip = spec.no_skip});
}

struct Outcome {
  std::vector<std::string> wait_all_errors;
  std::array<std::string, kVars> var_errors;
  std::array<std::uint64_t, kVars> values{};
  std::int64_t nested_count = 0;
  bool operator==(const Outcome&) const = default;
};

std::string error_of(Engine& engine, Var var) {
  try {
    engine.wait_for_var(var, tandem_test::kPatience);
  } catch (const TimeoutError&) {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// How a run disturbs the loop: an odd op every `odd_every` rounds (a mismatch), a wait every
// `wait_every` rounds (a flush); 0: never.
struct Disturbance {
  int odd_every = 0;
  int wait_every = 0;
};

Outcome run_loop(EngineKind kind, bool auto_capture, const std::vector<OpSpec>& body, int rounds,
                 Disturbance disturbance, AutoCaptureStats* stats = nullptr) {
  auto engine = make_engine(kind);
  ProgramState state;
  for (Var& var : state.vars) var = engine->new_var();
  state.nested = engine->new_var();
  Outcome outcome;
  {
    std::unique_ptr<AutoCapture> scope;
    if (auto_capture) scope = std::make_unique<AutoCapture>(*engine, AutoCaptureOptions{16, 256});
    for (int round = 0; round < rounds; ++round) {
      for (std::size_t i = 0; i < body.size(); ++i)
        push_op(*engine, state, body[i], static_cast<int>(i), round);
      if (disturbance.odd_every > 0 && round % disturbance.odd_every == disturbance.odd_every - 1) {
        engine->push([&state, round] { state.values[0] += static_cast<unsigned>(round); }, cpu(),
                     {}, {state.vars[0]}, {.name = "odd"});
      }
      if (disturbance.wait_every > 0 && round % disturbance.wait_every == 0)
        (void)error_of(*engine, state.vars[round % kVars]);
    }
    if (scope && stats != nullptr) *stats = scope->stats();
  }
  for (int i = 0; i < 1000; ++i) {
    try {
      engine->wait_all(tandem_test::kPatience);
      break;
    } catch (const TimeoutError&) {
      throw;
    } catch (const std::exception& e) {
      outcome.wait_all_errors.push_back(e.what());
    }
  }
  for (int v = 0; v < kVars; ++v) outcome.var_errors[v] = error_of(*engine, state.vars[v]);
  (void)error_of(*engine, state.nested);
  outcome.values = state.values;
  outcome.nested_count = state.nested_count;
  for (Var var : state.vars) engine->delete_var(var);
  engine->delete_var(state.nested);
  engine->wait_all();
  return outcome;
}

}  // namespace

TEST_CASE("a repeated loop is entered from a plan and gives the eager results") {
  std::mt19937 random(7);
  std::vector<OpSpec> body;
  for (int i = 0; i < 12; ++i) {
    OpSpec op;
    op.reads = {i % kVars};
    op.writes = {(i + 1) % kVars};
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
    const std::vector<OpSpec> body = random_body(random, 1 + static_cast<int>(random() % 20));
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
