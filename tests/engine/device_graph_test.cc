// Device graphs of captured windows (tandem/graph.h, engine/src/capture/device_graph_run.h) on
// sim: a chain of accelerator ops replays as one launch, with the results and errors of pushing
// the ops one by one, and the sim's modelled clock pays one launch latency per replay.
#include <tandem/accel/accelerator.h>
#include <tandem/accel/device_graph.h>
#include <tandem/accel/stream.h>
#include <tandem/graph.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "accel/sim/sim_stream.h"
#include "test_support.h"

using namespace tandem;
using tandem_test::each_engine_kind;

namespace {

std::unique_ptr<Engine> make_engine(EngineKind kind, bool device_graphs) {
  EngineConfig config = tandem_test::test_config(kind);
  config.device_graphs = device_graphs;
  return Engine::create(config);
}

// What wait_for_var(var) throws, reduced to the test's own message ("" if nothing): the
// engine's wrapping names the op, which for a device graph is the graph's unit.
std::string error_of(Engine& engine, Var var) {
  const std::string what = tandem_test::error_of(engine, var);
  for (const char* known :
       {"boom A", "boom B", "boom C", "launch A", "launch B", "launch C", "bad input"}) {
    if (what.find(known) != std::string::npos) return known;
  }
  return what;
}

// The modelled clock of sim(0)'s compute streams: busy ns and launch latencies paid.
struct SimClock {
  std::int64_t busy_ns = 0;
  std::uint64_t launches = 0;
};
SimClock sim_clock() {
  Accelerator& device = accelerator(sim(0));
  SimClock clock;
  for (int i = 0; i < device.compute_streams(); ++i) {
    auto& stream = dynamic_cast<detail::SimStream&>(device.stream(Queue::compute, i));
    clock.busy_ns += stream.modelled_busy_ns();
    clock.launches += stream.launches();
  }
  return clock;
}

// The window of the parity tests, on sim(0):
//   A: b = a + 1      B: c = b * 3      C: c = c + 5
// B and C form a device graph; A stays a pushed op (the var b it writes is seen outside the
// window and C does not write it: see the rule in device_graph_run.h).
struct Program {
  Var a, b, c;
  std::int64_t va = 0, vb = 0, vc = 0;
  std::string fail_device;  // "A", "B", "C": that op's device work throws
  std::string fail_launch;  // that op's launch function throws
  bool fail_input = false;  // the CPU op writing `a` throws

  void push_input(Engine& engine, std::int64_t value) {
    engine.push(
        [this, value] {
          if (fail_input) throw std::runtime_error("bad input");
          va = value;
        },
        cpu(), {}, {a}, {.name = "input"});
  }
  void push_op(Engine& engine, const std::string& name, Var read, Var write,
               std::int64_t (*body)(Program&)) {
    engine.push(
        [this, name, body](RunContext& ctx) {
          if (fail_launch == name) throw std::runtime_error("launch " + name);
          ctx.stream()->enqueue_host(
              [this, name, body] {
                if (fail_device == name) throw std::runtime_error("boom " + name);
                (void)body(*this);
              },
              {});
        },
        sim(0), {read}, {write},
        {.name = name == "A"   ? "A"
                 : name == "B" ? "B"
                               : "C"});
  }
  void push_window(Engine& engine) {
    push_op(engine, "A", a, b, [](Program& p) { return p.vb = p.va + 1; });
    push_op(engine, "B", b, c, [](Program& p) { return p.vc = p.vb * 3; });
    push_op(engine, "C", c, c, [](Program& p) { return p.vc = p.vc + 5; });
  }
};

enum class Mode { eager, replay, replay_without_device_graphs };

// Three rounds of input + window; a device or input failure in round 2, a launch function's
// failure in round 1 (a device graph's launch functions run only at its first replay, when it
// is recorded). Returns, per round, what b and c hold or the error they carry.
std::vector<std::string> run_rounds(EngineKind kind, Mode mode, const std::string& fail_device,
                                    const std::string& fail_launch, bool fail_input) {
  auto engine = make_engine(kind, mode != Mode::replay_without_device_graphs);
  Program program;
  program.a = engine->new_var();
  program.b = engine->new_var();
  program.c = engine->new_var();
  CapturedGraph window;
  if (mode != Mode::eager) {
    window = capture(*engine, [&] { program.push_window(*engine); });
    CHECK(window.num_device_graphs() == (mode == Mode::replay ? 1 : 0));
    CHECK(window.num_device_graph_ops() == (mode == Mode::replay ? 2 : 0));
  }
  std::vector<std::string> seen;
  for (int round = 1; round <= 3; ++round) {
    program.fail_device = round == 2 ? fail_device : "";
    program.fail_launch = round == 1 ? fail_launch : "";
    program.fail_input = round == 2 && fail_input;
    program.push_input(*engine, round * 10);
    if (mode == Mode::eager) {
      program.push_window(*engine);
    } else {
      window.replay();
    }
    for (Var var : {program.b, program.c}) {
      const std::string error = error_of(*engine, var);
      seen.push_back(!error.empty()                     ? error
                     : var.state() == program.b.state() ? std::to_string(program.vb)
                                                        : std::to_string(program.vc));
    }
    (void)tandem_test::errors_of_wait_all(*engine);
  }
  window = CapturedGraph();
  for (Var var : {program.a, program.b, program.c}) engine->delete_var(var);
  engine->wait_all();
  return seen;
}

}  // namespace

TEST_CASE("a replayed device graph gives the values and errors of pushing its ops one by one") {
  const EngineKind kind = each_engine_kind();
  struct Failure {
    const char* device;
    const char* launch;
    bool input;
  };
  for (const Failure& failure :
       {Failure{"", "", false}, Failure{"A", "", false}, Failure{"B", "", false},
        Failure{"C", "", false}, Failure{"", "B", false}, Failure{"", "C", false},
        Failure{"", "", true}}) {
    CAPTURE(failure.device);
    CAPTURE(failure.launch);
    CAPTURE(failure.input);
    const auto eager = run_rounds(kind, Mode::eager, failure.device, failure.launch, failure.input);
    CHECK(run_rounds(kind, Mode::replay, failure.device, failure.launch, failure.input) == eager);
    CHECK(run_rounds(kind, Mode::replay_without_device_graphs, failure.device, failure.launch,
                     failure.input) == eager);
  }
}

TEST_CASE("a replay of N tiny sim ops pays one launch latency instead of N") {
  const EngineKind kind = each_engine_kind();
  constexpr int kOps = 16;
  constexpr int kReplays = 4;
  const auto latency =
      dynamic_cast<detail::SimStream&>(accelerator(sim(0)).stream(Queue::compute, 0))
          .model()
          .latency.count();
  auto measure = [&](bool device_graphs, std::int64_t& value) {
    auto engine = make_engine(kind, device_graphs);
    Var x = engine->new_var();
    value = 0;
    CapturedGraph chain = capture(*engine, [&] {
      for (int i = 0; i < kOps; ++i) {
        engine->push(
            [&value](RunContext& ctx) {
              ctx.stream()->enqueue_host([&value] { value = (value * 3 + 1) % 1000003; }, {});
            },
            sim(0), {x}, {x}, {.name = "tiny"});
      }
    });
    CHECK(chain.num_device_graphs() == (device_graphs ? 1 : 0));
    chain.replay();  // records the device graph
    engine->wait_for_var(x);
    const SimClock before = sim_clock();
    for (int i = 0; i < kReplays; ++i) chain.replay();
    engine->wait_for_var(x);
    const SimClock after = sim_clock();
    chain = CapturedGraph();
    engine->delete_var(x);
    engine->wait_all();
    return SimClock{after.busy_ns - before.busy_ns, after.launches - before.launches};
  };
  std::int64_t with_graph = 0, without_graph = 0;
  const SimClock graphed = measure(true, with_graph);
  const SimClock pushed = measure(false, without_graph);
  CHECK(with_graph == without_graph);
  CHECK(graphed.launches == kReplays);
  CHECK(pushed.launches == kReplays * kOps);
  CHECK(pushed.busy_ns - graphed.busy_ns == std::int64_t{kReplays} * (kOps - 1) * latency);
}

TEST_CASE("device graph replays interleave with eager pushes on the same var in push order") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind, true);
  Var x = engine->new_var();
  std::int64_t value = 1;
  auto push_scale = [&](std::int64_t factor, std::int64_t add) {
    engine->push(
        [&value, factor, add](RunContext& ctx) {
          ctx.stream()->enqueue_host([&value, factor, add] { value = value * factor + add; }, {});
        },
        sim(0), {x}, {x}, {.name = "scale"});
  };
  CapturedGraph chain = capture(*engine, [&] {
    push_scale(2, 0);
    push_scale(1, 1);
    push_scale(3, 0);
  });
  CHECK(chain.num_device_graphs() == 1);
  CHECK(chain.num_pushed_ops() == 0);
  std::int64_t expected = 1;
  for (int i = 0; i < 5; ++i) {
    chain.replay();
    expected = (expected * 2 + 1) * 3;
    push_scale(1, -7);  // eager, between replays
    expected -= 7;
    engine->push([&value] { value += 1; }, cpu(), {x}, {x}, {.name = "cpu add"});
    expected += 1;
  }
  engine->wait_for_var(x);
  CHECK(value == expected);
  chain = CapturedGraph();
  engine->delete_var(x);
}

TEST_CASE("a launch function that records an event is not captured and runs at every replay") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind, true);
  Var x = engine->new_var();
  std::int64_t value = 0, launches = 0;
  CapturedGraph chain = capture(*engine, [&] {
    for (int i = 0; i < 2; ++i) {
      engine->push(
          [&](RunContext& ctx) {
            ++launches;
            (void)ctx.stream()->record();  // not capturable: the run goes without a graph
            ctx.stream()->enqueue_host([&value] { ++value; }, {});
          },
          sim(0), {x}, {x}, {.name = "records"});
    }
  });
  CHECK(chain.num_device_graphs() == 1);
  for (int i = 0; i < 3; ++i) chain.replay();
  engine->wait_for_var(x);
  CHECK(value == 6);
  // The first replay's capture called the first launch function once more before giving up.
  CHECK(launches == 7);
  chain = CapturedGraph();
  engine->delete_var(x);
}

TEST_CASE("ops that do not form a chain, or are async or no_skip, stay pushed one by one") {
  auto engine = make_engine(EngineKind::threaded, true);
  Var x = engine->new_var(), y = engine->new_var();
  auto enqueue_nothing = [](RunContext& ctx) { ctx.stream()->enqueue_host([] {}, {}); };
  CapturedGraph independent = capture(*engine, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(0), {}, {y}, {.name = "y"});
  });
  CHECK(independent.num_device_graphs() == 0);
  CHECK(independent.num_pushed_ops() == 2);
  CapturedGraph other_device = capture(*engine, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(1), {x}, {x}, {.name = "x on sim(1)"});
  });
  CHECK(other_device.num_device_graphs() == 0);
  CapturedGraph no_skip = capture(*engine, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(0), {x}, {x}, {.name = "cleanup", .no_skip = true});
  });
  CHECK(no_skip.num_device_graphs() == 0);
  // A host op between two device ops stays an engine op, and ends the run.
  CapturedGraph host_between = capture(*engine, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push([] {}, cpu(), {x}, {x}, {.name = "host"});
    engine->push(enqueue_nothing, sim(0), {x}, {x}, {.name = "x again"});
  });
  CHECK(host_between.num_device_graphs() == 0);
  CHECK(host_between.num_segments() == 1);
  CHECK(host_between.num_pushed_ops() == 2);
  // A temporary of the window written by the first op and read by the last is invisible
  // outside: the chain still forms one device graph.
  CapturedGraph through_temporary = capture(*engine, [&] {
    Var temporary = engine->new_var();
    engine->push(enqueue_nothing, sim(0), {x}, {temporary}, {.name = "to temporary"});
    engine->push(enqueue_nothing, sim(0), {temporary}, {y}, {.name = "from temporary"});
    engine->delete_var(temporary);
  });
  CHECK(through_temporary.num_device_graphs() == 1);
  CHECK(through_temporary.num_device_graph_ops() == 2);
  independent.replay();
  other_device.replay();
  no_skip.replay();
  host_between.replay();
  through_temporary.replay();
  through_temporary.replay();
  engine->wait_all();
  independent = other_device = no_skip = host_between = through_temporary = CapturedGraph();
  engine->delete_var(x);
  engine->delete_var(y);
}

TEST_CASE("TANDEM_DEVICE_GRAPHS turns device graphs off, and a bad value names the variable") {
  auto from = [](const char* value) {
    static const char* current = nullptr;
    current = value;
    return EngineConfig::from_env([](const char* name) -> const char* {
      return std::string(name) == "TANDEM_DEVICE_GRAPHS" ? current : nullptr;
    });
  };
  CHECK(EngineConfig{}.device_graphs);
  CHECK_FALSE(from("0").device_graphs);
  CHECK(from("on").device_graphs);
  try {
    (void)from("maybe");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("TANDEM_DEVICE_GRAPHS") != std::string::npos);
  }
}

TEST_CASE("a sim device graph runs its items in order at each launch, one latency each") {
  Stream& stream = accelerator(sim(0)).stream(Queue::compute, 0);
  REQUIRE(stream.supports_graph_capture());
  // The streams are the process's: failures that earlier tests left unreported go first.
  try {
    accelerator(sim(0)).synchronize();
  } catch (const std::exception&) {
  }
  std::vector<int> order;
  int source = 7, target = 0;
  stream.begin_graph_capture();
  stream.enqueue_host([&] { order.push_back(1); }, {});
  stream.copy(&target, &source, sizeof(int));
  stream.enqueue_host([&] { order.push_back(target); }, {});
  CHECK_THROWS_AS((void)stream.record(), Error);
  std::unique_ptr<DeviceGraph> graph = stream.end_graph_capture();
  CHECK(graph->num_items() == 3);
  CHECK(order.empty());
  graph->launch(stream);
  stream.synchronize();
  source = 8;
  graph->launch(accelerator(sim(0)).stream(Queue::compute, 1));
  accelerator(sim(0)).synchronize();
  CHECK(order == std::vector<int>{1, 7, 1, 8});
  CHECK_THROWS_AS(graph->launch(accelerator(sim(1)).stream(Queue::compute, 0)), Error);
  CHECK_THROWS_AS((void)stream.end_graph_capture(), Error);
}
