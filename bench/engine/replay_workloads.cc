#include "replay_workloads.h"

#include "tandem/graph.h"

namespace tandem::bench {

namespace {

std::size_t whole_windows(std::size_t ops) {
  return (ops + kReplayWindowOps - 1) / kReplayWindowOps;
}

void push_window(Engine& engine, std::span<const Var> vars) {
  for (std::size_t i = 0; i < kReplayWindowOps; ++i) {
    engine.push([] { run_work(Work{}); }, cpu(), {}, {vars[i % vars.size()]}, {.name = "bench_op"});
  }
}

void push_stencil_steps(Engine& engine, std::span<const Var> vars, std::size_t width,
                        std::size_t first_step, std::size_t steps, Work work) {
  for (std::size_t t = first_step; t < first_step + steps; ++t) {
    const auto previous = vars.subspan(((t + 1) % 2) * width, width);
    const auto current = vars.subspan((t % 2) * width, width);
    for (std::size_t x = 0; x < width; ++x) {
      const std::size_t first = x == 0 ? 0 : x - 1;
      const std::size_t last = x + 1 == width ? x : x + 1;
      engine.push([work] { run_work(work); }, cpu(),
                  VarList(previous.subspan(first, last - first + 1)), {current[x]},
                  {.name = "stencil"});
    }
  }
}

}  // namespace

Nanoseconds run_window_pushed(Engine& engine, std::span<const Var> vars, std::size_t ops) {
  const std::size_t windows = whole_windows(ops);
  const auto start = Clock::now();
  for (std::size_t w = 0; w < windows; ++w) push_window(engine, vars);
  engine.wait_all();
  return since(start);
}

Nanoseconds run_window_replayed(Engine& engine, std::span<const Var> vars, std::size_t ops) {
  const std::size_t windows = whole_windows(ops);
  CapturedGraph graph = capture(engine, [&] { push_window(engine, vars); });
  const auto start = Clock::now();
  for (std::size_t w = 0; w < windows; ++w) graph.replay();
  engine.wait_all();
  return since(start);
}

Nanoseconds run_stencil_1d_replayed(Engine& engine, std::span<const Var> vars, std::size_t width,
                                    std::size_t steps, Work work) {
  // The block has an even number of steps, so every replay starts on the same half of vars.
  static_assert(kStencilBlockSteps % 2 == 0);
  CapturedGraph block = capture(
      engine, [&] { push_stencil_steps(engine, vars, width, 0, kStencilBlockSteps, work); });
  const std::size_t blocks = steps / kStencilBlockSteps;
  const auto start = Clock::now();
  for (std::size_t b = 0; b < blocks; ++b) block.replay();
  // The steps short of a whole block are pushed: the run has exactly `steps` steps.
  push_stencil_steps(engine, vars, width, blocks * kStencilBlockSteps,
                     steps - blocks * kStencilBlockSteps, work);
  engine.wait_all();
  return since(start);
}

}  // namespace tandem::bench
