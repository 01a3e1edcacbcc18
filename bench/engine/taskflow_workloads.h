// The engine workloads expressed the way a Taskflow user writes them: one task per op in a
// tf::Taskflow, `precede` from each task it depends on, then `Executor::run(...).wait()`. The
// same graphs as tbb_flow_workloads.h, and timed the same way: building the graph counts, since
// tandem discovers the same dependencies as ops are pushed.
//
// Taskflow is header-only and not packaged by Debian: it is an optional peer, built only when
// CMake is given TASKFLOW_DIR, a checkout of github:taskflow/taskflow kept outside the repository
// (bench/run.sh passes the environment variable of that name on). Without it
// taskflow_available() is false and the suite leaves the system out.
#pragma once

#include <cstddef>
#include <string>

#include "busy_work.h"
#include "task_bench_pattern.h"
#include "timing.h"

namespace tandem::bench {

// True when bench_engine was built with Taskflow.
bool taskflow_available();
// The Taskflow version and the checkout's commit (as CMake found it), for the records.
std::string taskflow_version();

// The executor's workers: one per core, like every threaded system of the suite. Created on
// first use and kept for the process, so that thread start-up is not timed.
void taskflow_start(int workers);

// The graph of run_writes_round_robin: task i after task i - num_vars.
Nanoseconds taskflow_writes_round_robin(std::size_t ops, std::size_t num_vars);
// The graph of run_fan_out.
Nanoseconds taskflow_fan_out(std::size_t rounds, std::size_t reads_per_write);
// The submission cost per independent task: Executor::silent_async, Taskflow's cheapest way to
// start one task (execution overlaps and is not timed).
Nanoseconds taskflow_push_cost(std::size_t ops);
// The graph of run_task_bench.
Nanoseconds taskflow_task_bench(const TaskBenchPattern& pattern, std::size_t width,
                                std::size_t steps, Work work);
// The graph of run_chain_plus_independent (Taskflow has no queues: any worker runs any task).
Nanoseconds taskflow_chain_plus_independent(std::size_t batches, Work compute, Work copy);

}  // namespace tandem::bench
