// One error model for every device: the engine contract's error rules (the oldest error wins,
// skipped ops pass on their input's error and never their own, every failure is reported once)
// hold for accelerator ops whose failures are only known after their launch, on the threaded
// engine exactly as on the naive one, where every op has ended before the next one starts.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim_test_support.h"

using namespace tandem;
using namespace tandem_test;

namespace {

const EngineKind kKinds[] = {EngineKind::threaded, EngineKind::naive};

// Every error wait_all throws, in order, until it returns.
std::vector<std::string> wait_all_errors(Engine& engine) {
  std::vector<std::string> errors;
  for (int i = 0; i < 100000; ++i) {
    try {
      engine.wait_all();
      break;
    } catch (const std::exception& e) {
      errors.emplace_back(e.what());
    }
  }
  return errors;
}

bool names(const std::string& error, const std::string& op) {
  return error.find("'" + op + "'") != std::string::npos;
}

}  // namespace

TEST_CASE("a device failure older than a CPU poison is the error a sim op passes on") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var device_input = engine.var(), cpu_input = engine.var(), out = engine.var();
    std::atomic<bool> ran{false};
    // Pushed first, fails on the device 20 ms later; the CPU op fails at once.
    push_sim(*engine, sim(0), {}, {device_input}, "device fails", 20,
             [] { throw std::runtime_error("device failure"); });
    engine->push([] { throw std::runtime_error("cpu failure"); }, cpu(), {}, {cpu_input},
                 {.name = "cpu fails"});
    push_sim(*engine, sim(0), {device_input, cpu_input}, {out}, "reads both", 1,
             [&ran] { ran = true; });
    const std::string error = error_of(*engine, out);
    CHECK(names(error, "device fails"));
    CHECK_FALSE(ran.load());
    CHECK(names(error_of(*engine, cpu_input), "cpu fails"));
  }
}

TEST_CASE("of two device failures a sim op reads, the older one wins whatever the var order") {
  for (EngineKind kind : kKinds) {
    for (bool first_var_older : {true, false}) {
      CAPTURE(engine_kind_name(kind));
      CAPTURE(first_var_older);
      SimTestEngine engine(sim_engine_config(kind));
      // Vars come from a pool: which of the two sits at the lower address is the point here,
      // so the older failure goes once to each.
      Var a = engine.var(), b = engine.var(), out = engine.var();
      const bool a_first = (a.state() < b.state()) == first_var_older;
      Var older_var = a_first ? a : b, newer_var = a_first ? b : a;
      // The older failure ends last on the device: completion order must not decide.
      push_sim(*engine, sim(0), {}, {older_var}, "older failure", 20,
               [] { throw std::runtime_error("older"); });
      push_sim(*engine, sim(1), {}, {newer_var}, "newer failure", 1,
               [] { throw std::runtime_error("newer"); });
      push_sim(*engine, sim(0), {a, b}, {out}, "reads both", 1, [] {});
      CHECK(names(error_of(*engine, out), "older failure"));
      const std::vector<std::string> errors = wait_all_errors(*engine);
      REQUIRE(errors.size() == 1);  // the older one was thrown by wait_for_var
      CHECK(names(errors[0], "newer failure"));
    }
  }
}

TEST_CASE("a sim op downstream of a failed device input passes that error on, not its own") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var input = engine.var(), out = engine.var();
    std::atomic<bool> device_work_ran{false};
    push_sim(*engine, sim(0), {}, {input}, "upstream fails", 20,
             [] { throw std::runtime_error("upstream"); });
    // Its launch function enqueues work and then throws, while the upstream work still runs.
    engine->push(
        [&device_work_ran](RunContext& ctx) {
          ctx.stream()->enqueue_host([&device_work_ran] { device_work_ran = true; }, cost_ms(1));
          throw std::runtime_error("downstream launch");
        },
        sim(1), {input}, {out}, {.name = "downstream"});
    const std::string error = error_of(*engine, out);
    CHECK(names(error, "upstream fails"));
    CHECK_FALSE(device_work_ran.load());
    const std::vector<std::string> errors = wait_all_errors(*engine);
    CHECK(errors.empty());  // one failure, thrown once; the skipped op's own error is not one
    CHECK(engine->stats().ops_failed == 1);
  }
}

TEST_CASE("a launch function that throws with no failed input fails its op under its name") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var input = engine.var(), out = engine.var();
    push_sim(*engine, sim(0), {}, {input}, "upstream works", 10, [] {});
    engine->push([](RunContext&) { throw std::runtime_error("own failure"); }, sim(1), {input},
                 {out}, {.name = "downstream throws"});
    const std::string error = error_of(*engine, out);
    CHECK(names(error, "downstream throws"));
    CHECK(error.find("own failure") != std::string::npos);
  }
}

TEST_CASE("thousands of device failures: each skipped op names its failure, none is extra") {
  // More failures than any fixed-size memory of failures could hold.
  constexpr int kFailures = 1100;
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    std::vector<Var> failed, skipped;
    std::vector<std::string> names_of(kFailures);
    for (int i = 0; i < kFailures; ++i) {
      names_of[static_cast<std::size_t>(i)] = "failure " + std::to_string(i);
      failed.push_back(engine.var());
      skipped.push_back(engine.var());
      push_sim(*engine, sim(i % 2), {}, {failed.back()},
               names_of[static_cast<std::size_t>(i)].c_str(), 0.001,
               [] { throw std::runtime_error("fails"); });
      push_sim(*engine, sim((i + 1) % 2), {failed.back()}, {skipped.back()}, "skipped", 0.001,
               [] {});
    }
    const std::vector<std::string> errors = wait_all_errors(*engine);
    REQUIRE(errors.size() == static_cast<std::size_t>(kFailures));
    for (int i = 0; i < kFailures; ++i) {
      CAPTURE(i);
      CHECK(names(errors[static_cast<std::size_t>(i)], names_of[static_cast<std::size_t>(i)]));
      CHECK(names(error_of(*engine, skipped[static_cast<std::size_t>(i)]),
                  names_of[static_cast<std::size_t>(i)]));
    }
    CHECK(engine->stats().ops_failed == static_cast<std::uint64_t>(kFailures));
  }
}

TEST_CASE("wait_all throws the errors of sim and CPU ops in push order") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var a = engine.var(), b = engine.var(), c = engine.var();
    // Completion order is the reverse of push order on the threaded engine.
    push_sim(*engine, sim(0), {}, {a}, "first", 30, [] { throw std::runtime_error("1"); });
    push_sim(*engine, sim(1), {}, {b}, "second", 10, [] { throw std::runtime_error("2"); });
    engine->push([] { throw std::runtime_error("3"); }, cpu(), {}, {c}, {.name = "third"});
    const std::vector<std::string> errors = wait_all_errors(*engine);
    REQUIRE(errors.size() == 3);
    CHECK(names(errors[0], "first"));
    CHECK(names(errors[1], "second"));
    CHECK(names(errors[2], "third"));
  }
}

TEST_CASE("an accelerator op's device work sees what earlier device work wrote, on any stream") {
  // The rule for accelerator ops: the launch function only enqueues; the memory of the op's vars
  // is touched by its stream work, which the engine orders after the work it depends on. Here
  // host items on two streams of one device and a CPU op in between hand a value along.
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var device_side = engine.var(), host_side = engine.var(), back = engine.var(),
        result = engine.var();
    std::int64_t on_device = 0, on_host = 0, returned = 0, seen = 0;
    push_sim(*engine, sim(0), {}, {device_side}, "produce", 10, [&] { on_device = 21; });
    push_sim(
        *engine, sim(0), {device_side}, {host_side}, "d2h", 10, [&] { on_host = on_device; },
        Queue::copy_d2h);
    push_sim(
        *engine, sim(0), {host_side}, {back}, "h2d", 1, [&] { returned = on_host * 2; },
        Queue::copy_h2d);
    engine->push([&] { seen = returned; }, cpu(), {back}, {result}, {.name = "read"});
    engine->wait_for_var(result);
    CHECK(seen == 42);
  }
}

// Streams are process-wide: two engines running ops on one device enqueue on the same streams,
// each from its own launcher thread. A failure reaches the next event recorded on the stream,
// so without a turn per launch another engine's event could fall between a failing op's work
// and its own event: that engine's op would fail with an error not its own, or its work would
// be skipped while its event reported success (found by fuzz_ops).
TEST_CASE("engines sharing a sim device keep their failures and their work apart") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    constexpr int kOps = 300;
    SimTestEngine failing(sim_engine_config(kind));
    SimTestEngine healthy(sim_engine_config(kind));
    std::vector<Var> failed_vars, written_vars;
    for (int i = 0; i < kOps; ++i) {
      failed_vars.push_back(failing.var());
      written_vars.push_back(healthy.var());
    }
    std::vector<std::string> names_of_failing;
    for (int i = 0; i < kOps; ++i) names_of_failing.push_back("fails " + std::to_string(i));
    std::vector<std::atomic<int>> ran(kOps);
    // Each engine from its own thread, so both launchers enqueue on sim(0) at the same time.
    std::thread pusher([&] {
      for (int i = 0; i < kOps; ++i) {
        push_sim(*failing, sim(0), {}, {failed_vars[i]}, names_of_failing[i].c_str(), 0.001,
                 [i] { throw std::runtime_error("failure " + std::to_string(i)); });
      }
    });
    for (int i = 0; i < kOps; ++i) {
      push_sim(*healthy, sim(0), {}, {written_vars[i]}, "writes", 0.001,
               [&ran, i] { ran[i].fetch_add(1); });
    }
    pusher.join();
    // The healthy engine saw no failure, and all of its work ran, once.
    CHECK(wait_all_errors(*healthy).empty());
    int ran_once = 0;
    for (int i = 0; i < kOps; ++i) ran_once += ran[i].load() == 1 ? 1 : 0;
    CHECK(ran_once == kOps);
    // Each failing op's var carries that op's own failure.
    int own_error = 0;
    for (int i = 0; i < kOps; ++i) {
      const std::string error = error_of(*failing, failed_vars[i]);
      own_error += names(error, names_of_failing[i]) &&
                           error.find("failure " + std::to_string(i)) != std::string::npos
                       ? 1
                       : 0;
    }
    CHECK(own_error == kOps);
  }
}
