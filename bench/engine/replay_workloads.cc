#include "replay_workloads.h"

#include <algorithm>

#include "tandem/auto_capture.h"
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

void push_task_bench_steps(Engine& engine, std::span<const Var> vars,
                           const TaskBenchPattern& pattern, std::size_t width,
                           std::size_t first_step, std::size_t steps, Work work) {
  for (std::size_t t = first_step; t < first_step + steps; ++t) {
    const auto previous = vars.subspan(((t + 1) % 2) * width, width);
    const auto current = vars.subspan((t % 2) * width, width);
    for (std::size_t x = 0; x < width; ++x) {
      if (!pattern.has_dependencies()) {
        engine.push([work] { run_work(work); }, cpu(), {}, {}, {.name = "task"});
        continue;
      }
      const std::size_t first = pattern.first(x);
      const std::size_t last = pattern.last(x, width);
      engine.push([work] { run_work(work); }, cpu(),
                  VarList(previous.subspan(first, last - first + 1)), {current[x]},
                  {.name = "task"});
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

Nanoseconds run_window_autocaptured(Engine& engine, std::span<const Var> vars, std::size_t ops) {
  const std::size_t windows = whole_windows(ops);
  const auto start = Clock::now();
  {
    AutoCapture scope(engine);
    for (std::size_t w = 0; w < windows; ++w) push_window(engine, vars);
  }
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

Nanoseconds run_writes_round_robin_replayed(Engine& engine, std::span<const Var> vars,
                                            std::size_t ops) {
  CapturedGraph block = capture(engine, [&] {
    for (const Var var : vars) {
      engine.push([] { run_work(Work{}); }, cpu(), {}, {var}, {.name = "bench_op"});
    }
  });
  const std::size_t blocks = std::max<std::size_t>(1, ops / vars.size());
  const auto start = Clock::now();
  for (std::size_t b = 0; b < blocks; ++b) block.replay();
  engine.wait_all();
  return since(start);
}

Nanoseconds run_fan_out_replayed(Engine& engine, std::span<const Var> vars, std::size_t rounds,
                                 std::size_t reads_per_write) {
  const Var var = vars.front();
  CapturedGraph round = capture(engine, [&] {
    engine.push([] { run_work(Work{}); }, cpu(), {}, {var}, {.name = "bench_write"});
    for (std::size_t i = 0; i < reads_per_write; ++i)
      engine.push([] { run_work(Work{}); }, cpu(), {var}, {}, {.name = "bench_read"});
  });
  const auto start = Clock::now();
  for (std::size_t r = 0; r < rounds; ++r) round.replay();
  engine.wait_all();
  return since(start);
}

Nanoseconds run_task_bench_replayed(Engine& engine, std::span<const Var> vars,
                                    const TaskBenchPattern& pattern, std::size_t width,
                                    std::size_t steps, Work work) {
  // The block has an even number of steps, so every replay starts on the same half of vars.
  static_assert(kBlockSteps % 2 == 0);
  CapturedGraph block = capture(
      engine, [&] { push_task_bench_steps(engine, vars, pattern, width, 0, kBlockSteps, work); });
  const std::size_t blocks = steps / kBlockSteps;
  const auto start = Clock::now();
  for (std::size_t b = 0; b < blocks; ++b) block.replay();
  // The steps short of a whole block are pushed: the run has exactly `steps` steps.
  push_task_bench_steps(engine, vars, pattern, width, blocks * kBlockSteps,
                        steps - blocks * kBlockSteps, work);
  engine.wait_all();
  return since(start);
}

}  // namespace tandem::bench
