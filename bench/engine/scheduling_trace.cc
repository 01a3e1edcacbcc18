#include "scheduling_trace.h"

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <utility>

namespace tandem::bench {

Entrant traced(Entrant entrant, Engine& engine, SchedulingRounds rounds) {
  Engine* target = &engine;
  auto run = std::move(entrant.run_once);
  entrant.run_once = [run = std::move(run), target, rounds, system = entrant.system] {
    const EngineStats before = target->stats();
    const Nanoseconds elapsed = run();
    const EngineStats after = target->stats();
    const auto ops =
        static_cast<double>(std::max<std::uint64_t>(1, after.ops_pushed - before.ops_pushed));
    auto per_op = [ops](std::uint64_t later, std::uint64_t earlier) {
      return static_cast<double>(later - earlier) / ops;
    };
    nlohmann::json round = {
        {"ns_per_op", elapsed.count() / ops},
        {"worker_wakes_per_op", per_op(after.worker_wakes, before.worker_wakes)},
        {"worker_parks_per_op", per_op(after.worker_parks, before.worker_parks)},
        {"idle_polls_per_op", per_op(after.worker_idle_polls, before.worker_idle_polls)},
        {"run_next_here_per_op", per_op(after.ops_run_next_here, before.ops_run_next_here)},
        {"run_inline_per_op", per_op(after.ops_run_inline, before.ops_run_inline)},
        {"pushes_blocked", after.pushes_blocked - before.pushes_blocked}};
    std::cout << "    " << system << (rounds->empty() ? " warm-up" : " round ")
              << (rounds->empty() ? std::string() : std::to_string(rounds->size())) << ": "
              << std::fixed << std::setprecision(1) << round["ns_per_op"].get<double>()
              << " ns/op; per op: wakes " << std::setprecision(4)
              << round["worker_wakes_per_op"].get<double>() << ", parks "
              << round["worker_parks_per_op"].get<double>() << ", idle polls "
              << std::setprecision(2) << round["idle_polls_per_op"].get<double>() << ", next-here "
              << round["run_next_here_per_op"].get<double>() << ", inline "
              << round["run_inline_per_op"].get<double>() << "; pushes blocked "
              << round["pushes_blocked"].get<std::uint64_t>() << '\n'
              << std::flush;
    rounds->push_back(std::move(round));
    return elapsed;
  };
  return entrant;
}

}  // namespace tandem::bench
