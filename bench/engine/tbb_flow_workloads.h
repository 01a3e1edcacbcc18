// The engine workloads expressed the way a oneTBB flow graph user writes them: one
// continue_node per task, an edge from each task it depends on, then a message to every task
// without predecessors and `wait_for_all`.
//
// Building the graph is timed: tandem discovers the same dependencies on the fly as ops are
// pushed, so the comparable cost for flow graph is construction plus execution. The graph is
// built completely before any task starts, because a continue_node counts its predecessors at
// make_edge time: an edge added after its predecessor ran would never fire. Destroying the
// nodes happens after the clock stops.
#pragma once

#include <cstddef>

#include "busy_work.h"
#include "task_bench_pattern.h"
#include "timing.h"

namespace tandem::bench {

// The graph of run_writes_round_robin: task i depends on task i - num_vars (the previous
// writer of its var); with num_vars >= ops no task has a predecessor.
Nanoseconds tbb_flow_writes_round_robin(std::size_t ops, std::size_t num_vars);

// The graph of run_fan_out: each write precedes its round's reads, and all of them precede
// the next round's write.
Nanoseconds tbb_flow_fan_out(std::size_t rounds, std::size_t reads_per_write);

// The submission cost per independent task: constructing its node and putting the message
// that starts it (execution overlaps and is not timed).
Nanoseconds tbb_flow_push_cost(std::size_t ops);

// The graph of run_task_bench: task (t, x) depends on the tasks of step t-1 that `pattern`
// names; with no dependencies every task gets its own start message.
Nanoseconds tbb_flow_task_bench(const TaskBenchPattern& pattern, std::size_t width,
                                std::size_t steps, Work work);

// The graph of run_chain_plus_independent: copy i after compute i-2, compute i after copy i
// and compute i-1. Flow graph has no queues: any worker runs any task.
Nanoseconds tbb_flow_chain_plus_independent(std::size_t batches, Work compute, Work copy);

}  // namespace tandem::bench
