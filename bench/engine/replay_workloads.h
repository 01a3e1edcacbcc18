// The capture-and-replay workloads (tandem/graph.h), for tandem alone: the same ops pushed one
// by one and replayed from a captured graph, side by side on the same engine.
// - `replay_ns_per_op`: empty ops, op i of a window writes var i % kReplayVars; the window
//   (kReplayWindowOps ops) is pushed, or captured once (untimed) and replayed, until `ops` ops
//   have run. Wall time per op, from the first push or replay to the end of wait_all.
// - the METG workloads (system tandem_replay): the Task Bench pattern of workloads.h, its steps
//   replayed from a captured block of kBlockSteps steps (captured untimed), the steps short of
//   a whole block pushed.
// - chains_1000 and fan_out (system tandem_replay): the ops of workloads.h, a block of them
//   (one op per var, or one round) captured untimed and replayed until the run has as many ops
//   as the pushed run; what an application that captures its repeated step gets.
#pragma once

#include <cstddef>
#include <span>

#include "busy_work.h"
#include "tandem/engine.h"
#include "task_bench_pattern.h"
#include "timing.h"

namespace tandem::bench {

inline constexpr std::size_t kReplayWindowOps = 1000;
inline constexpr std::size_t kReplayVars = 100;
inline constexpr std::size_t kBlockSteps = 16;

// `ops` is rounded up to whole windows; returns the wall time of those.
Nanoseconds run_window_pushed(Engine& engine, std::span<const Var> vars, std::size_t ops);
Nanoseconds run_window_replayed(Engine& engine, std::span<const Var> vars, std::size_t ops);
// The window pushed one by one inside a tandem::AutoCapture scope (tandem/auto_capture.h).
Nanoseconds run_window_autocaptured(Engine& engine, std::span<const Var> vars, std::size_t ops);

// run_writes_round_robin's ops, replayed from a captured block of vars.size() ops (op i writes
// vars[i]); `ops` is rounded down to whole blocks (at least one).
Nanoseconds run_writes_round_robin_replayed(Engine& engine, std::span<const Var> vars,
                                            std::size_t ops);
// run_fan_out's rounds (one write of vars[0], then `reads_per_write` reads of it), each replayed
// from one captured round.
Nanoseconds run_fan_out_replayed(Engine& engine, std::span<const Var> vars, std::size_t rounds,
                                 std::size_t reads_per_write);

// `vars` holds 2 * width vars, as for run_task_bench.
Nanoseconds run_task_bench_replayed(Engine& engine, std::span<const Var> vars,
                                    const TaskBenchPattern& pattern, std::size_t width,
                                    std::size_t steps, Work work);

}  // namespace tandem::bench
