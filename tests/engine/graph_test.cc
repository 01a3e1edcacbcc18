// Capture and replay (tandem/graph.h): a replayed graph behaves as its ops pushed one by one.
#include <tandem/accel/accelerator.h>
#include <tandem/accel/stream.h>
#include <tandem/graph.h>
#include <tandem/profiler.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture_program.h"
#include "test_support.h"

using namespace tandem;
using tandem_test::each_engine_kind;
using tandem_test::error_of;
using tandem_test::errors_of_wait_all;
using tandem_test::OpSpec;
using tandem_test::Outcome;
using tandem_test::outcome_of;
using tandem_test::ProgramState;
using tandem_test::push_op;
using tandem_test::random_program;
using tandem_test::test_scale;

namespace {

// Random programs on 6 vars, their ops named op0..op15 in turn.
constexpr tandem_test::ProgramShape kProgramShape{};

std::unique_ptr<Engine> make_engine(EngineKind kind) {
  return Engine::create(tandem_test::test_config(kind));
}

// Runs `program` `rounds` times on a fresh engine of `kind`: pushed one op at a time, or
// captured once and replayed.
Outcome run_program(EngineKind kind, const std::vector<OpSpec>& program, int rounds,
                    bool replayed) {
  auto engine = make_engine(kind);
  ProgramState state(*engine, kProgramShape.vars);
  Outcome outcome;
  {
    CapturedGraph graph;
    if (replayed) {
      graph = capture(*engine, [&] {
        for (std::size_t i = 0; i < program.size(); ++i)
          push_op(*engine, state, program[i], static_cast<int>(i));
      });
      CHECK(graph.num_ops() == program.size());
    }
    for (int round = 0; round < rounds; ++round) {
      if (replayed) {
        graph.replay();
      } else {
        for (std::size_t i = 0; i < program.size(); ++i)
          push_op(*engine, state, program[i], static_cast<int>(i));
      }
    }
    outcome = outcome_of(*engine, state);
  }
  state.release(*engine);
  return outcome;
}

}  // namespace

TEST_CASE("a capture records pushes without running them; each replay runs them once") {
  auto engine = make_engine(each_engine_kind());
  Var x = engine->new_var();
  std::int64_t value = 1;
  int runs = 0;
  CapturedGraph graph = capture(*engine, [&] {
    engine->push([&] { value *= 2; }, cpu(), {}, {x}, {.name = "double"});
    engine->push([&] { value += 1; }, cpu(), {}, {x}, {.name = "increment"});
    engine->push([&] { ++runs; }, cpu(), {x}, {}, {.name = "count"});
  });
  engine->wait_all();
  CHECK(value == 1);
  CHECK(graph.num_ops() == 3);
  CHECK(graph.num_external_writes() == 1);
  for (int i = 0; i < 3; ++i) graph.replay();
  engine->wait_for_var(x);
  CHECK(value == 15);  // ((1*2+1)*2+1)*2+1
  engine->wait_all();
  CHECK(runs == 3);
  graph = CapturedGraph();
  engine->delete_var(x);
}

TEST_CASE("replays interleaved with eager pushes on the same vars keep push order") {
  auto engine = make_engine(each_engine_kind());
  Var x = engine->new_var();
  std::vector<int> order;
  CapturedGraph graph = capture(*engine, [&] {
    engine->push([&] { order.push_back(1); }, cpu(), {}, {x}, {.name = "graph a"});
    engine->push([&] { order.push_back(2); }, cpu(), {x}, {x}, {.name = "graph b"});
  });
  for (int round = 0; round < 50; ++round) {
    engine->push([&] { order.push_back(0); }, cpu(), {x}, {x}, {.name = "eager"});
    graph.replay();
    graph.replay();  // the second replay follows the first on x
  }
  engine->wait_for_var(x);
  REQUIRE(order.size() == 250);
  for (std::size_t i = 0; i < order.size(); i += 5) {
    CHECK(order[i] == 0);
    CHECK(order[i + 1] == 1);
    CHECK(order[i + 2] == 2);
    CHECK(order[i + 3] == 1);
    CHECK(order[i + 4] == 2);
  }
  graph = CapturedGraph();
  engine->delete_var(x);
}

TEST_CASE("random programs replayed give the results and errors of eager pushes") {
  const int programs = std::max(4, static_cast<int>(60 * test_scale()));
  std::mt19937 random(2024);
  for (int p = 0; p < programs; ++p) {
    CAPTURE(p);
    const auto program = random_program(random, 1 + static_cast<int>(random() % 30), kProgramShape);
    const int rounds = 1 + static_cast<int>(random() % 4);
    const Outcome reference = run_program(EngineKind::naive, program, rounds, false);
    CHECK(run_program(EngineKind::threaded, program, rounds, false) == reference);
    CHECK(run_program(EngineKind::naive, program, rounds, true) == reference);
    CHECK(run_program(EngineKind::threaded, program, rounds, true) == reference);
  }
}

TEST_CASE("an error inside a replay poisons its writes, skips its readers and is thrown once") {
  auto engine = make_engine(each_engine_kind());
  Var a = engine->new_var(), b = engine->new_var(), c = engine->new_var(), d = engine->new_var();
  bool reader_ran = false;
  CapturedGraph graph = capture(*engine, [&] {
    engine->push([] { throw std::runtime_error("first"); }, cpu(), {}, {a}, {.name = "fail a"});
    engine->push([] { throw std::runtime_error("second"); }, cpu(), {}, {b}, {.name = "fail b"});
    engine->push([&] { reader_ran = true; }, cpu(), {b, a}, {c}, {.name = "read both"});
    engine->push([] {}, cpu(), {}, {d}, {.name = "independent"});
  });
  graph.replay();
  // The oldest error wins, as for pushes: "fail a" came first.
  CHECK(error_of(*engine, c).find("first") != std::string::npos);
  CHECK(error_of(*engine, b).find("second") != std::string::npos);
  CHECK(error_of(*engine, d).empty());
  CHECK_FALSE(reader_ran);
  CHECK(errors_of_wait_all(*engine).empty());  // both were thrown by wait_for_var already
  graph.replay();
  const auto errors = errors_of_wait_all(*engine);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].find("first") != std::string::npos);
  CHECK(errors[1].find("second") != std::string::npos);
  // A later eager write clears the poison.
  engine->push([] {}, cpu(), {}, {c}, {.name = "rewrite"});
  CHECK(error_of(*engine, c).empty());
  graph = CapturedGraph();
  for (Var v : {a, b, c, d}) engine->delete_var(v);
  engine->wait_all();
}

TEST_CASE("capture misuse is a tandem::Error, never a hang") {
  auto engine = make_engine(each_engine_kind());
  Var x = engine->new_var();
  SUBCASE("a wait inside a capture") {
    CHECK_THROWS_WITH_AS(capture(*engine, [&] { engine->wait_for_var(x); }),
                         doctest::Contains("inside a capture"), Error);
    CHECK_THROWS_AS(capture(*engine, [&] { engine->wait_all(); }), Error);
  }
  SUBCASE("a nested capture") {
    CHECK_THROWS_WITH_AS(capture(*engine, [&] { capture(*engine, [] {}); }),
                         doctest::Contains("do not nest"), Error);
  }
  SUBCASE("a replay inside a capture") {
    CapturedGraph graph = capture(*engine, [&] { engine->push([] {}, cpu(), {}, {x}); });
    CHECK_THROWS_AS(capture(*engine, [&] { graph.replay(); }), Error);
  }
  SUBCASE("deleting a var created before the capture") {
    CHECK_THROWS_WITH_AS(capture(*engine, [&] { engine->delete_var(x); }),
                         doctest::Contains("created before it"), Error);
  }
  SUBCASE("a bad var in a recorded push") {
    CHECK_THROWS_AS(capture(*engine, [&] { engine->push([] {}, cpu(), {}, {Var()}); }), Error);
  }
  SUBCASE("an exception out of the capture discards what it recorded") {
    int runs = 0;
    CHECK_THROWS_AS(capture(*engine,
                            [&] {
                              engine->push([&] { ++runs; }, cpu(), {}, {x});
                              throw std::runtime_error("stop");
                            }),
                    std::runtime_error);
    engine->wait_all();
    CHECK(runs == 0);
  }
  SUBCASE("a var deleted after the capture") {
    Var y = engine->new_var();
    CapturedGraph graph = capture(*engine, [&] { engine->push([] {}, cpu(), {y}, {x}); });
    engine->delete_var(y);
    CHECK_THROWS_WITH_AS(graph.replay(), doctest::Contains("was deleted"), Error);
  }
  // The engine works on after each of them, and captures again.
  int runs = 0;
  CapturedGraph graph = capture(*engine, [&] { engine->push([&] { ++runs; }, cpu(), {}, {x}); });
  graph.replay();
  engine->wait_for_var(x);
  CHECK(runs == 1);
  graph = CapturedGraph();
  engine->delete_var(x);
  engine->wait_all();
}

TEST_CASE("a temporary created and deleted inside the window lives as long as the graph") {
  auto engine = make_engine(each_engine_kind());
  Var in = engine->new_var(), out = engine->new_var();
  std::int64_t source = 3, result = 0;
  auto scratch = std::make_shared<std::int64_t>(0);
  std::atomic<int> deleted{0};
  {
    CapturedGraph graph = capture(*engine, [&] {
      Var temp = engine->new_var();
      engine->push([&, scratch] { *scratch = source * 10; }, cpu(), {in}, {temp});
      engine->push([&, scratch] { result = *scratch + 1; }, cpu(), {temp}, {out});
      engine->delete_var(temp, [&] { ++deleted; });
    });
    CHECK(graph.num_temporaries() == 1);
    for (int i = 0; i < 3; ++i) {
      source = i;
      graph.replay();
      engine->wait_for_var(out);
      CHECK(result == i * 10 + 1);
    }
    CHECK(deleted.load() == 0);
  }
  engine->wait_all();
  CHECK(deleted.load() == 1);
  engine->delete_var(in);
  engine->delete_var(out);
}

TEST_CASE("a wide graph of longer ops runs on several workers with the same results") {
  auto engine = make_engine(EngineKind::threaded);
  constexpr int kWidth = 8, kSteps = 20;
  std::vector<Var> vars;
  for (int i = 0; i < 2 * kWidth; ++i) vars.push_back(engine->new_var());
  std::vector<std::int64_t> values(2 * kWidth, 1);
  auto push_step = [&](int t) {
    const int from = (t % 2) * kWidth, to = ((t + 1) % 2) * kWidth;
    for (int x = 0; x < kWidth; ++x) {
      const int left = x == 0 ? 0 : x - 1, right = x == kWidth - 1 ? x : x + 1;
      engine->push(
          [&values, from, to, x, left, right] {
            tandem_test::spin_for(2000);
            values[to + x] = (values[from + left] + values[from + x] + values[from + right]) % 1000;
          },
          cpu(), {vars[from + left], vars[from + x], vars[from + right]}, {vars[to + x]});
    }
  };
  CapturedGraph graph = capture(*engine, [&] {
    for (int t = 0; t < kSteps; ++t) push_step(t);
  });
  for (int i = 0; i < 5; ++i) graph.replay();
  engine->wait_all();
  const std::vector<std::int64_t> replayed = values;
  std::fill(values.begin(), values.end(), 1);
  for (int i = 0; i < 5 * kSteps; ++i) push_step(i % kSteps);
  engine->wait_all();
  CHECK(values == replayed);
  graph = CapturedGraph();
  for (Var v : vars) engine->delete_var(v);
}

TEST_CASE("sim device ops and async ops in a graph replay like pushes") {
  static std::once_flag configured;
  std::call_once(configured, [] {
    AcceleratorConfig config;
    config.sim_devices = 1;
    config.sim_latency_us = 1.0;
    configure_accelerators(config);
  });
  auto engine = make_engine(each_engine_kind());
  Var a = engine->new_var(), b = engine->new_var(), c = engine->new_var();
  std::int64_t va = 0, vb = 0, vc = 0;
  bool fail_on_device = false;
  CapturedGraph graph = capture(*engine, [&] {
    engine->push([&] { ++va; }, cpu(), {}, {a}, {.name = "cpu a"});
    engine->push(
        [&](RunContext& ctx) {
          ctx.stream()->enqueue_host(
              [&] {
                if (fail_on_device) throw std::runtime_error("device failed");
                vb = va * 2;
              },
              {.flops = 1000, .bytes = 0});
        },
        sim(0), {a}, {b}, {.name = "sim b"});
    engine->push([&] { vc = vb + 1; }, cpu(), {b}, {c}, {.name = "cpu c"});
  });
  CHECK(graph.num_pushed_ops() == 1);
  CHECK(graph.num_segments() == 2);
  for (int i = 1; i <= 3; ++i) {
    graph.replay();
    engine->wait_for_var(c);
    CHECK(vc == 2 * i + 1);
  }
  // A failure of the device work skips the CPU op after it, as with pushes.
  fail_on_device = true;
  graph.replay();
  CHECK(error_of(*engine, c).find("device failed") != std::string::npos);
  CHECK(vc == 7);
  (void)errors_of_wait_all(*engine);
  graph = CapturedGraph();
  for (Var v : {a, b, c}) engine->delete_var(v);
  engine->wait_all();
}

TEST_CASE("the user guide's capture example replays to 2047") {
  auto engine = make_engine(each_engine_kind());
  Var x = engine->new_var(), y = engine->new_var();
  double vx = 1, vy = 0;
  CapturedGraph step = capture(*engine, [&] {
    engine->push([&] { vy = vx * 2; }, cpu(), {x}, {y}, {.name = "double"});
    engine->push([&] { vx = vy + 1; }, cpu(), {y}, {x}, {.name = "increment"});
  });
  for (int i = 0; i < 10; ++i) step.replay();
  engine->wait_for_var(x);
  CHECK(vx == 2047);
  step = CapturedGraph();
  engine->delete_var(x);
  engine->delete_var(y);
}

TEST_CASE("the profiler records a replayed segment as one op, 'graph replay'") {
  auto engine = make_engine(each_engine_kind());
  Var x = engine->new_var();
  CapturedGraph graph = capture(*engine, [&] {
    for (int i = 0; i < 5; ++i) engine->push([] {}, cpu(), {}, {x}, {.name = "inner"});
  });
  profiler::start();
  graph.replay();
  engine->wait_all();
  profiler::stop();
  int replays = 0, inner = 0;
  for (const profiler::OpEvent& event : profiler::events()) {
    replays += event.name == "graph replay";
    inner += event.name == "inner";
  }
  profiler::clear();
  CHECK(replays == 1);
  CHECK(inner == 0);
  graph = CapturedGraph();
  engine->delete_var(x);
}

TEST_CASE("an async op completed from another thread and an op that pushes replay like pushes") {
  auto engine = make_engine(each_engine_kind());
  Var a = engine->new_var(), b = engine->new_var(), pushed = engine->new_var();
  std::int64_t va = 0, vb = 0, follow_ups = 0;
  std::vector<std::thread> completers;
  std::mutex completers_mutex;
  CapturedGraph graph = capture(*engine, [&] {
    engine->push(
        [&](RunContext& ctx) {
          std::lock_guard lock(completers_mutex);
          completers.emplace_back([&va, done = ctx.take_completion()]() mutable {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            ++va;
            done();
          });
        },
        cpu(), {}, {a}, {.name = "async", .async_completion = true});
    engine->push(
        [&] {
          vb = va * 10;
          engine->push([&] { ++follow_ups; }, cpu(), {}, {pushed}, {.name = "follow-up"});
        },
        cpu(), {a}, {b}, {.name = "reads async"});
  });
  CHECK(graph.num_pushed_ops() == 1);
  for (int i = 1; i <= 3; ++i) {
    graph.replay();
    engine->wait_for_var(b);
    CHECK(vb == 10 * i);
  }
  engine->wait_all();
  CHECK(follow_ups == 3);
  for (std::thread& thread : completers) thread.join();
  graph = CapturedGraph();
  for (Var v : {a, b, pushed}) engine->delete_var(v);
}
