// A program that uses the process-wide engine from the destructor of a namespace-scope object,
// after main has returned, on cpu(0) and on sim(0), and leaves ops of main unfinished when main
// returns. The process must exit 0 and print the exit-time ops' results. Run by exit_tests
// (exit_test.cc).
#include <tandem/accel/stream.h>
#include <tandem/engine.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

using tandem::Engine;
using tandem::RunContext;
using tandem::Var;

// Pushes an op on cpu(0) and one on sim(0) (its work runs on a sim stream), waits, prints.
void use_engine(const char* when) {
  Engine& engine = Engine::get();
  Var v = engine.new_var();
  int value = 0;
  engine.push([&value] { value = 40; }, tandem::cpu(), {}, {v}, {.name = "exit.cpu"});
  engine.push(
      [&value](RunContext& ctx) {
        ctx.stream()->enqueue_host([&value] { value += 2; }, {.flops = 1e3});
      },
      tandem::sim(0), {v}, {v}, {.name = "exit.sim"});
  engine.wait_for_var(v);
  engine.delete_var(v, [when] { std::printf("%s: deleter ran\n", when); });
  engine.wait_all();
  std::printf("%s: result %d\n", when, value);
}

// Constructed before main without touching the engine, so its destructor runs after
// everything the engine registered at its creation.
struct UsesEngineAtExit {
  const char* label;
  ~UsesEngineAtExit() { use_engine(label); }
};
UsesEngineAtExit namespace_scope{"namespace-scope object"};

// An op still running when main returns: exit must wait for it (or report it).
int late_result = 0;

}  // namespace

int main() {
  use_engine("in main");
  // Created after the engine: destroyed before the engine's exit hook runs.
  static UsesEngineAtExit function_local{"function-local static"};
  Engine& engine = Engine::get();
  Var v = engine.new_var();
  engine.push(
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        late_result = 7;
        std::printf("late op ran\n");
      },
      tandem::cpu(), {}, {v}, {.name = "late"});
  engine.delete_var(v);
  std::printf("main returns\n");
  return 0;
}
