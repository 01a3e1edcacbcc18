// Windows that fail as one unit (tandem/graph.h, CaptureOptions::fail_as_one_unit;
// engine/src/capture/device_graph_run.h, RunRule::whole_run) on sim: consecutive accelerator
// ops that do not form a chain join one device graph only when the window opts in, and then a
// failure or a poisoned input anywhere in the run poisons every var the run writes that is
// visible outside it, and nothing else; a window without the option keeps the errors of
// separate pushes; replays after a failure give the values again.
#include <tandem/accel/accelerator.h>
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

std::uint64_t sim_launches() {
  Accelerator& device = accelerator(sim(0));
  std::uint64_t launches = 0;
  for (int i = 0; i < device.compute_streams(); ++i) {
    launches += dynamic_cast<detail::SimStream&>(device.stream(Queue::compute, i)).launches();
  }
  return launches;
}

// What wait_for_var(var) throws, reduced to the test's own message ("" if nothing).
std::string error_of(Engine& engine, Var var) {
  const std::string what = tandem_test::error_of(engine, var);
  for (const char* known :
       {"boom A", "boom B", "boom C", "launch A", "launch B", "launch C", "bad input", "bad e"}) {
    if (what.find(known) != std::string::npos) return known;
  }
  return what;
}

// The window, on sim(0), in capture order:
//   A: b = a + 1        B: d = e * 100 + round        C: c = b * 3
// B reads none of A's outputs and C none of B's: no chain. Under the chain rule every op stays
// pushed; in a window that fails as one unit the three are one device graph whose unit reads
// a and e and writes b, c and d.
struct Program {
  Var a, b, c, d, e, untouched;
  std::int64_t va = 0, vb = 0, vc = 0, vd = 0, ve = 7, round = 0;
  std::string fail_device;  // "A", "B", "C": that op's device work throws
  std::string fail_launch;  // that op's launch function throws
  bool fail_input = false;  // the CPU op writing `a` throws
  bool fail_e = false;      // the CPU op writing `e` throws

  void push_inputs(Engine& engine) {
    engine.push(
        [this] {
          if (fail_input) throw std::runtime_error("bad input");
          va = round * 10;
        },
        cpu(), {}, {a}, {.name = "input"});
    engine.push(
        [this] {
          if (fail_e) throw std::runtime_error("bad e");
        },
        cpu(), {}, {e}, {.name = "e"});
  }
  void push_op(Engine& engine, const char* name, std::vector<Var> reads, Var write,
               void (*body)(Program&)) {
    engine.push(
        [this, name, body](RunContext& ctx) {
          if (fail_launch == name) throw std::runtime_error(std::string("launch ") + name);
          ctx.stream()->enqueue_host(
              [this, name, body] {
                if (fail_device == name) throw std::runtime_error(std::string("boom ") + name);
                body(*this);
              },
              {});
        },
        sim(0), std::move(reads), {write}, {.name = name});
  }
  void push_window(Engine& engine) {
    push_op(engine, "A", {a}, b, [](Program& p) { p.vb = p.va + 1; });
    push_op(engine, "B", {e}, d, [](Program& p) { p.vd = p.ve * 100 + p.round; });
    push_op(engine, "C", {b}, c, [](Program& p) { p.vc = p.vb * 3; });
  }
};

struct Failure {
  std::string device{};  // that op's device work throws in round 2
  std::string launch{};  // that op's launch function throws in round 1 (the graph's recording)
  bool input = false;    // the CPU op writing `a` throws in round 2
  bool e = false;        // the CPU op writing `e` throws in round 2
};

// Per round: what b, c, d hold or the error they carry, then whether a, e and `untouched`
// carry an error ("a!", "e!", "u!").
std::string run_rounds(EngineKind kind, bool replay, bool one_unit, const Failure& failure) {
  auto engine = Engine::create(tandem_test::test_config(kind));
  Program p;
  for (Var* var : {&p.a, &p.b, &p.c, &p.d, &p.e, &p.untouched}) *var = engine->new_var();
  CapturedGraph window;
  if (replay) {
    window = capture(*engine, {.fail_as_one_unit = one_unit}, [&] { p.push_window(*engine); });
    CHECK(window.num_device_graphs() == (one_unit ? 1 : 0));
    CHECK(window.num_device_graph_ops() == (one_unit ? 3 : 0));
    CHECK(window.num_pushed_ops() == (one_unit ? 0 : 3));
  }
  std::string seen;
  for (int round = 1; round <= 3; ++round) {
    p.round = round;
    p.fail_device = round == 2 ? failure.device : "";
    p.fail_launch = round == 1 ? failure.launch : "";
    p.fail_input = round == 2 && failure.input;
    p.fail_e = round == 2 && failure.e;
    p.push_inputs(*engine);
    if (replay) {
      window.replay();
    } else {
      p.push_window(*engine);
    }
    const Var outputs[] = {p.b, p.c, p.d};
    std::string errors[3];
    for (int i = 0; i < 3; ++i) errors[i] = error_of(*engine, outputs[i]);
    const std::int64_t values[] = {p.vb, p.vc, p.vd};  // read after the waits
    for (int i = 0; i < 3; ++i) {
      seen += (errors[i].empty() ? std::to_string(values[i]) : errors[i]) + " ";
    }
    for (const auto& [var, mark] : {std::pair{p.a, "a!"}, {p.e, "e!"}, {p.untouched, "u!"}}) {
      if (!error_of(*engine, var).empty()) seen += std::string(mark) + " ";
    }
    seen += "| ";
    (void)tandem_test::errors_of_wait_all(*engine);
  }
  window = CapturedGraph();
  for (Var var : {p.a, p.b, p.c, p.d, p.e, p.untouched}) engine->delete_var(var);
  engine->wait_all();
  return seen;
}

using Rounds = std::vector<std::string>;
// The values of one round with no failure: b = 10r + 1, c = 3b, d = 700 + r.
Rounds round_values(int round) {
  return {std::to_string(round * 10 + 1), std::to_string((round * 10 + 1) * 3),
          std::to_string(700 + round)};
}
// The three rounds as one line, so that a failed CHECK shows them.
std::string rounds(const Rounds& r1, const Rounds& r2, const Rounds& r3) {
  std::string all;
  for (const Rounds* round : {&r1, &r2, &r3}) {
    for (const std::string& item : *round) all += item + " ";
    all += "| ";
  }
  return all;
}

}  // namespace

TEST_CASE("independent sim ops join one device graph only in a window that fails as one unit") {
  const EngineKind kind = each_engine_kind();
  auto engine = Engine::create(tandem_test::test_config(kind));
  Var x = engine->new_var(), y = engine->new_var(), z = engine->new_var();
  std::int64_t vx = 0, vy = 0, vz = 0;
  auto push_all = [&] {
    engine->push([&](RunContext& ctx) { ctx.stream()->enqueue_host([&] { ++vx; }, {}); }, sim(0),
                 {}, {x}, {.name = "x"});
    engine->push([&](RunContext& ctx) { ctx.stream()->enqueue_host([&] { vy += 2; }, {}); }, sim(0),
                 {}, {y}, {.name = "y"});
    engine->push([&](RunContext& ctx) { ctx.stream()->enqueue_host([&] { vz += vx; }, {}); },
                 sim(0), {x}, {z}, {.name = "z from x"});
  };
  CapturedGraph chains = capture(*engine, push_all);
  CapturedGraph one_unit = capture(*engine, {.fail_as_one_unit = true}, push_all);
  CHECK(chains.num_device_graphs() == 0);
  CHECK(chains.num_pushed_ops() == 3);
  CHECK(one_unit.num_device_graphs() == 1);
  CHECK(one_unit.num_device_graph_ops() == 3);
  CHECK(one_unit.num_pushed_ops() == 0);
  one_unit.replay();  // records the device graph
  engine->wait_all();
  constexpr int kReplays = 4;
  const std::uint64_t before = sim_launches();
  for (int i = 0; i < kReplays; ++i) one_unit.replay();
  engine->wait_all();
  CHECK(sim_launches() - before == kReplays);  // one launch per replay for the three ops
  for (int i = 0; i < kReplays; ++i) chains.replay();
  engine->wait_all();
  CHECK(vx == 2 * kReplays + 1);
  CHECK(vy == 2 * (2 * kReplays + 1));
  CHECK(vz == (2 * kReplays + 1) * (2 * kReplays + 2) / 2);  // 1 + 2 + ... + 9
  chains = one_unit = CapturedGraph();
  for (Var var : {x, y, z}) engine->delete_var(var);
  engine->wait_all();
}

TEST_CASE("host ops, another device, async and no_skip ops still end a run that fails as one") {
  auto engine = Engine::create(tandem_test::test_config(EngineKind::threaded));
  Var x = engine->new_var(), y = engine->new_var();
  auto enqueue_nothing = [](RunContext& ctx) { ctx.stream()->enqueue_host([] {}, {}); };
  const CaptureOptions one_unit{.fail_as_one_unit = true};
  CapturedGraph host_between = capture(*engine, one_unit, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(0), {}, {y}, {.name = "y"});
    engine->push([] {}, cpu(), {x}, {x}, {.name = "host"});
    engine->push(enqueue_nothing, sim(0), {}, {y}, {.name = "y again"});
  });
  CHECK(host_between.num_device_graphs() == 1);
  CHECK(host_between.num_device_graph_ops() == 2);
  CHECK(host_between.num_segments() == 1);
  CHECK(host_between.num_pushed_ops() == 1);
  CapturedGraph other_device = capture(*engine, one_unit, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(1), {}, {y}, {.name = "y on sim(1)"});
  });
  CHECK(other_device.num_device_graphs() == 0);
  CapturedGraph other_queue = capture(*engine, one_unit, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(0), {}, {y}, {.name = "y", .queue = Queue::copy_d2h});
  });
  CHECK(other_queue.num_device_graphs() == 0);
  CapturedGraph no_skip = capture(*engine, one_unit, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push(enqueue_nothing, sim(0), {}, {y}, {.name = "cleanup", .no_skip = true});
  });
  CHECK(no_skip.num_device_graphs() == 0);
  CapturedGraph async = capture(*engine, one_unit, [&] {
    engine->push(enqueue_nothing, sim(0), {}, {x}, {.name = "x"});
    engine->push([](RunContext& ctx) { ctx.take_completion()(); }, sim(0), {}, {y},
                 {.name = "async", .async_completion = true});
  });
  CHECK(async.num_device_graphs() == 0);
  for (CapturedGraph* graph : {&host_between, &other_device, &other_queue, &no_skip, &async}) {
    graph->replay();
    graph->replay();
  }
  engine->wait_all();
  host_between = other_device = other_queue = no_skip = async = CapturedGraph();
  engine->delete_var(x);
  engine->delete_var(y);
}

TEST_CASE("a failure in a run that fails as one unit poisons every var it writes, and no other") {
  const EngineKind kind = each_engine_kind();
  const std::string ok = rounds(round_values(1), round_values(2), round_values(3));
  // No failure: the eager values, both rules.
  CHECK(run_rounds(kind, false, false, {}) == ok);
  CHECK(run_rounds(kind, true, false, {}) == ok);
  CHECK(run_rounds(kind, true, true, {}) == ok);
  for (const char* op : {"A", "B", "C"}) {
    const std::string name = op;
    CAPTURE(name);
    const std::string boom = std::string("boom ") + op;
    // One unit: the device work of any op poisons b, c and d with its error; a, e and the
    // untouched var stay clean, and the next replay gives the values again.
    CHECK(run_rounds(kind, true, true, {.device = op}) ==
          rounds(round_values(1), {boom, boom, boom}, round_values(3)));
    // A launch function that throws while the graph is recorded: the whole first replay
    // fails; later replays run the ops directly, with the values.
    const std::string launch = std::string("launch ") + op;
    CHECK(run_rounds(kind, true, true, {.launch = op}) ==
          rounds({launch, launch, launch}, round_values(2), round_values(3)));
    // Without the option: the errors of separate pushes (only the failed op's var and what
    // reads it downstream), as eager.
    const std::string eager = run_rounds(kind, false, false, {.device = op});
    CHECK(run_rounds(kind, true, false, {.device = op}) == eager);
  }
  // A poisoned input of one op (a, read by A) poisons every var the unit writes, d included,
  // which B computes from e alone; eagerly only b and c are.
  const std::string poisoned_a = run_rounds(kind, true, true, {.input = true});
  CHECK(poisoned_a ==
        rounds(round_values(1), {"bad input", "bad input", "bad input", "a!"}, round_values(3)));
  CHECK(run_rounds(kind, false, false, {.input = true}) ==
        rounds(round_values(1), {"bad input", "bad input", round_values(2)[2], "a!"},
               round_values(3)));
  CHECK(run_rounds(kind, true, true, {.e = true}) ==
        rounds(round_values(1), {"bad e", "bad e", "bad e", "e!"}, round_values(3)));
}
