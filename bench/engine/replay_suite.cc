// EngineSuite's capture-and-replay workload (replay_workloads.h).
#include <iostream>
#include <string>

#include "engine_suite.h"
#include "replay_workloads.h"

namespace tandem::bench {

void EngineSuite::measure_replay_ns_per_op() {
  const std::size_t ops = (ops_ + kReplayWindowOps - 1) / kReplayWindowOps * kReplayWindowOps;
  std::cout << "\n== replay_ns_per_op  (" << ops << " empty ops in windows of " << kReplayWindowOps
            << ", op i writes var i % " << kReplayVars
            << "; pushed one by one, or replayed from the window captured once)\n"
            << std::flush;
  // Both on the suite's threaded engine, each with its own vars.
  auto pushed_vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(kReplayVars));
  auto replayed_vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(kReplayVars));
  auto auto_vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(kReplayVars));
  std::vector<Entrant> entrants = {
      {"push", [this, pushed_vars,
                ops] { return run_window_pushed(tandem_.engine(), pushed_vars->handles(), ops); }},
      {"replay",
       [this, replayed_vars, ops] {
         return run_window_replayed(tandem_.engine(), replayed_vars->handles(), ops);
       }},
      {"auto_capture", [this, auto_vars, ops] {
         return run_window_autocaptured(tandem_.engine(), auto_vars->handles(), ops);
       }}};
  const std::vector<Timing> timings = run_side_by_side("replay_ns_per_op", entrants, repetitions_);
  std::map<std::string, nlohmann::json> extra;
  for (const char* system : {"push", "replay", "auto_capture"}) {
    extra[system] = {{"window_ops", kReplayWindowOps}, {"vars", kReplayVars}};
  }
  record_ns_per_op("replay_ns_per_op", timings, ops, "ns/op", extra);
}

}  // namespace tandem::bench
