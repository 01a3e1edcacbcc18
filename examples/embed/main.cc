// Embedding tandem's engine in an application: no tensors, just vars and ops.
//
// The pipeline below has the shape of a tiny data-flow program:
//
//              +--> scale  (x * 2) --+
//   produce ---+                     +--> combine (sum of both) --> total
//              +--> square (x * x) --+
//
// `scale` and `square` only read `input`, so the engine may run them side by side; `combine`
// waits for both. Then an op that throws shows how errors reach the caller: not at push time,
// but at the next wait on a var the failed op writes.
#include <tandem/engine.h>

#include <cstdio>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "embed: FAILED: %s\n", what);
  return 1;
}

int run() {
  tandem::Engine& engine = tandem::Engine::get();  // threaded unless TANDEM_ENGINE=naive
  std::printf("engine: %s\n", tandem::engine_kind_name(engine.kind()));

  // The application owns the data; each var names one buffer for the engine.
  constexpr int n = 1000;
  std::vector<double> input(n), scaled(n), squared(n);
  double total = 0;
  tandem::Var input_var = engine.new_var();
  tandem::Var scaled_var = engine.new_var();
  tandem::Var squared_var = engine.new_var();
  tandem::Var total_var = engine.new_var();

  // Every push returns at once; the engine orders the ops by the vars they read and write.
  engine.push([&] { std::iota(input.begin(), input.end(), 1.0); },  // 1, 2, ..., n
              tandem::cpu(), {}, {input_var}, {.name = "produce"});
  engine.push(
      [&] {
        for (int i = 0; i < n; ++i) scaled[i] = 2 * input[i];
      },
      tandem::cpu(), {input_var}, {scaled_var}, {.name = "scale"});
  engine.push(
      [&] {
        for (int i = 0; i < n; ++i) squared[i] = input[i] * input[i];
      },
      tandem::cpu(), {input_var}, {squared_var}, {.name = "square"});
  engine.push(
      [&] {
        total = std::accumulate(scaled.begin(), scaled.end(), 0.0) +
                std::accumulate(squared.begin(), squared.end(), 0.0);
      },
      tandem::cpu(), {scaled_var, squared_var}, {total_var}, {.name = "combine"});

  engine.wait_for_var(total_var);  // blocks this thread until `combine` has run
  // sum(2i) + sum(i^2) for i = 1..n
  const double expected = double(n) * (n + 1) + double(n) * (n + 1) * (2 * n + 1) / 6;
  std::printf("total = %.0f (expected %.0f)\n", total, expected);
  if (total != expected) return fail("the pipeline computed a wrong total");

  // An op that throws poisons the vars it writes; the error surfaces at the wait, wrapped in a
  // tandem::OpError that names the op and nests the original exception.
  engine.push([] { throw std::runtime_error("disk full"); }, tandem::cpu(), {}, {total_var},
              {.name = "save"});
  try {
    engine.wait_for_var(total_var);
    return fail("wait_for_var did not report the error of op 'save'");
  } catch (const tandem::OpError& error) {
    std::printf("reported at wait_for_var: %s\n", error.what());
    if (error.op_name() != "save") return fail("OpError names the wrong op");
    try {
      std::rethrow_if_nested(error);
      return fail("OpError does not nest the op's exception");
    } catch (const std::runtime_error& cause) {
      std::printf("  nested cause: %s\n", cause.what());
    }
  }

  // A later successful write clears the poison, and the engine carries on.
  engine.push([&] { total = 0; }, tandem::cpu(), {}, {total_var}, {.name = "reset"});
  engine.wait_for_var(total_var);
  engine.wait_all();  // the error above was already reported: nothing left to throw

  for (tandem::Var var : {input_var, scaled_var, squared_var, total_var}) engine.delete_var(var);
  engine.wait_all();
  std::printf("embed: OK\n");
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "embed: unexpected error: %s\n", error.what());
    return 1;
  }
}
