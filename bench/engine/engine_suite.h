// EngineSuite: every engine workload on every system, side by side in one process.
//
// Systems: tandem (threaded engine, default config), tandem_profiled (the same engine with the
// profiler on), tandem_naive (runs ops inline in push),
// starpu (StarPU 1.3), tbb_flow (oneTBB flow graph), taskflow (Taskflow, when built with it:
// taskflow_workloads.h), plain_queue (mutex + condvar queue, no
// dependencies: the floor, run only where ops are independent), tandem_replay (the threaded
// engine replaying a captured graph: replay_workloads.h). Every threaded system gets one
// worker per core.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "metg.h"
#include "plain_queue.h"
#include "records.h"
#include "scheduling_trace.h"
#include "side_by_side.h"
#include "starpu_system.h"
#include "tandem_system.h"
#include "task_bench_pattern.h"

namespace tandem::bench {

struct SuiteOptions {
  bool quick = false;
  int repetitions = 0;              // 0: 3 quick, 5 full
  std::set<std::string> workloads;  // empty: all
  std::set<std::string> systems;    // empty: all
};

// The workloads in the order they run. idle_cpu goes first, while no other system has threads
// that could show up in the process's CPU time.
inline const std::vector<std::string>& all_workloads() {
  static const std::vector<std::string> names = {
      "idle_cpu",        "independent",  "chains_1000",      "one_chain",
      "fan_out",         "push_cost",    "replay_ns_per_op", "chain_plus_independent",
      "metg_stencil_1d", "metg_nearest", "metg_trivial"};
  return names;
}
inline const std::vector<std::string>& all_systems() {
  static const std::vector<std::string> names = {"tandem",      "tandem_profiled", "tandem_naive",
                                                 "starpu",      "tbb_flow",        "taskflow",
                                                 "plain_queue", "tandem_replay"};
  return names;
}

class EngineSuite {
 public:
  explicit EngineSuite(SuiteOptions options);
  ~EngineSuite();

  // Runs every selected workload, printing each result as it comes.
  void run();
  Records& records() { return records_; }

 private:
  void measure_idle_cpu();
  void measure_writes_round_robin(const std::string& workload, std::size_t num_vars);
  void measure_fan_out();
  void measure_push_cost();
  // replay_suite.cc: capture and replay (replay_workloads.h).
  void measure_replay_ns_per_op();
  void measure_chain_plus_independent();
  // The METG sweep of one Task Bench pattern.
  void measure_metg(const TaskBenchPattern& pattern);
  // One sweep point: every system's efficiency at granularity ~`wanted_ns`.
  std::map<std::string, EfficiencyPoint> measure_metg_point(const MetgPlan& plan,
                                                            const TaskBenchPattern& pattern,
                                                            double wanted_ns);
  void record_metg(const TaskBenchPattern& pattern, const std::string& system,
                   const std::vector<EfficiencyPoint>& curve, std::size_t width);

  bool enabled(const std::string& system) const;
  // enabled("taskflow"), starting its executor on first use.
  bool taskflow_enabled();
  StarpuSystem& starpu();  // started on first use (see all_workloads)
  // An entrant per push system in `systems` that is enabled, each with its own `num_vars`
  // vars, running `run(system, vars)` per repetition.
  template <class Run>
  std::vector<Entrant> push_entrants(const std::vector<std::string>& systems, std::size_t num_vars,
                                     Run run);
  // One record per system; `extra` adds fields to the record of the system it names.
  void record_ns_per_op(const std::string& workload, const std::vector<Timing>& timings,
                        std::size_t ops, const std::string& unit = "ns/op",
                        const std::map<std::string, nlohmann::json>& extra = {});

  SuiteOptions options_;
  int cores_;
  int repetitions_;
  std::size_t ops_;  // ops per run of the ns/op workloads
  TandemSystem tandem_;
  TandemSystem tandem_naive_;
  PlainQueue plain_queue_;
  std::unique_ptr<StarpuSystem> starpu_;
  Records records_;
  // The scheduling counters of the current workload's tandem runs (scheduling_trace.h).
  SchedulingRounds rounds_;
  SchedulingRounds new_rounds();
};

}  // namespace tandem::bench
