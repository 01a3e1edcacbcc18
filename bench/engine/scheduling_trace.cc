#include "scheduling_trace.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

namespace tandem::bench {

namespace {

// The process's context switches so far: voluntary (a thread blocked or yielded) and
// involuntary (the kernel took the core from a runnable thread, e.g. for another thread).
struct Switches {
  long voluntary = 0;
  long involuntary = 0;
};

Switches switches_now() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {usage.ru_nvcsw, usage.ru_nivcsw};
}

}  // namespace

Entrant traced(Entrant entrant, Engine& engine, SchedulingRounds rounds) {
  Engine* target = &engine;
  // The round run_once measured, completed and printed by after_probe once the harness has
  // probed the cores right after it.
  auto pending = std::make_shared<nlohmann::json>();
  auto run = std::move(entrant.run_once);
  entrant.run_once = [run = std::move(run), target, pending] {
    const EngineStats before = target->stats();
    const Switches switches_before = switches_now();
    const Nanoseconds elapsed = run();
    const Switches switches_after = switches_now();
    const EngineStats after = target->stats();
    const auto ops =
        static_cast<double>(std::max<std::uint64_t>(1, after.ops_pushed - before.ops_pushed));
    auto per_op = [ops](std::uint64_t later, std::uint64_t earlier) {
      return static_cast<double>(later - earlier) / ops;
    };
    *pending = {{"ns_per_op", elapsed.count() / ops},
                {"worker_wakes_per_op", per_op(after.worker_wakes, before.worker_wakes)},
                {"worker_parks_per_op", per_op(after.worker_parks, before.worker_parks)},
                {"idle_polls_per_op", per_op(after.worker_idle_polls, before.worker_idle_polls)},
                {"yields_per_op", per_op(after.worker_yields, before.worker_yields)},
                {"run_next_here_per_op", per_op(after.ops_run_next_here, before.ops_run_next_here)},
                {"run_inline_per_op", per_op(after.ops_run_inline, before.ops_run_inline)},
                {"pushes_blocked", after.pushes_blocked - before.pushes_blocked},
                {"late_starts", after.worker_late_starts - before.worker_late_starts},
                {"voluntary_switches", switches_after.voluntary - switches_before.voluntary},
                {"involuntary_switches", switches_after.involuntary - switches_before.involuntary}};
    return elapsed;
  };
  entrant.after_probe = [pending, rounds,
                         system = entrant.system](const std::optional<CoreToCore>& line) {
    nlohmann::json round = std::move(*pending);
    // How far apart the cores were right after the round (see core_to_core.h).
    round["core_to_core_ns"] = line ? nlohmann::json(line->median_ns) : nlohmann::json(nullptr);
    round["core_to_core_mean_ns"] = line ? nlohmann::json(line->mean_ns) : nlohmann::json(nullptr);
    std::cout << "    " << system << (rounds->empty() ? " warm-up" : " round ")
              << (rounds->empty() ? std::string() : std::to_string(rounds->size())) << ": "
              << std::fixed << std::setprecision(1) << round["ns_per_op"].get<double>()
              << " ns/op; per op: wakes " << std::setprecision(4)
              << round["worker_wakes_per_op"].get<double>() << ", parks "
              << round["worker_parks_per_op"].get<double>() << ", idle polls "
              << std::setprecision(2) << round["idle_polls_per_op"].get<double>() << " (yields "
              << round["yields_per_op"].get<double>() << "), next-here "
              << round["run_next_here_per_op"].get<double>() << ", inline "
              << round["run_inline_per_op"].get<double>() << "; pushes blocked "
              << round["pushes_blocked"].get<std::uint64_t>() << "; late starts "
              << round["late_starts"].get<std::uint64_t>() << "; context switches "
              << round["voluntary_switches"].get<long>() << " voluntary, "
              << round["involuntary_switches"].get<long>() << " involuntary; core to core "
              << (line ? std::to_string(static_cast<long>(line->median_ns)) + " ns (mean " +
                             std::to_string(static_cast<long>(line->mean_ns)) + ")"
                       : "n/a")
              << "\n"
              << std::flush;
    rounds->push_back(std::move(round));
  };
  return entrant;
}

}  // namespace tandem::bench
