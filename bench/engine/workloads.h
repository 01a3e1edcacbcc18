// The engine workloads, written once for every PushSystem (tandem, tandem_naive, StarPU, the
// plain queue). Each function runs one repetition and returns its wall time, from just before
// the first push to the moment every op has finished (push_cost: to the last push's return).
// Vars are created by the caller before timing starts, as an application creates its arrays
// before it computes on them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "busy_work.h"
#include "push_system.h"
#include "task_bench_pattern.h"
#include "timing.h"

namespace tandem::bench {

// Op i writes vars[i % vars.size()]. The var count sets the dependency structure:
// - `independent`: one var per op, so no two ops share a var and any order is valid. (Reusing
//   a small pool round-robin would let a fast pusher catch up with a var still in use and
//   turn part of the workload into chains.)
// - `chains_1000`: 1000 vars, i.e. 1000 chains pushed round-robin; a chain's next op waits
//   for its previous one, ops of different chains are free to overlap.
// - `one_chain`: one var, so every op waits for the one before it.
template <PushSystem S>
Nanoseconds run_writes_round_robin(S& system, std::span<const typename S::Var> vars,
                                   std::size_t ops) {
  const std::span<const typename S::Var> no_reads;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i)
    system.push(Work{}, no_reads, vars.subspan(i % vars.size(), 1));
  system.wait_all();
  return since(start);
}

// `fan_out`: a round is one write of vars[0] followed by `reads_per_write` ops that read it.
// The reads of a round may all run together; the next round's write waits for all of them.
template <PushSystem S>
Nanoseconds run_fan_out(S& system, std::span<const typename S::Var> vars, std::size_t rounds,
                        std::size_t reads_per_write) {
  const std::span<const typename S::Var> none;
  const auto var = vars.first(1);
  const auto start = Clock::now();
  for (std::size_t round = 0; round < rounds; ++round) {
    system.push(Work{}, none, var);
    for (std::size_t i = 0; i < reads_per_write; ++i) system.push(Work{}, var, none);
  }
  system.wait_all();
  return since(start);
}

// `push_cost`: the pushing thread's time per push of independent ops (one var per op), i.e.
// what the front end pays before it can go on. Execution overlaps and is not timed; the ops are
// waited for after the clock stops.
template <PushSystem S>
Nanoseconds run_push_cost(S& system, std::span<const typename S::Var> vars, std::size_t ops) {
  const std::span<const typename S::Var> no_reads;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i)
    system.push(Work{}, no_reads, vars.subspan(i % vars.size(), 1));
  const Nanoseconds elapsed = since(start);
  system.wait_all();
  return elapsed;
}

// The METG workloads (Task Bench, task_bench_pattern.h): `width` columns advance `steps` time
// steps; task (t, x) reads the columns of step t-1 that `pattern` names and writes column x of
// step t, then keeps a core busy for `work`. Each column has two vars, one per step parity
// (vars holds 2 * width: even steps write the first half), so a step reads one half and writes
// the other; writing a var again two steps later waits for the reads in between, which is
// exactly the dependency Task Bench draws. `trivial` tasks touch no var at all.
template <PushSystem S>
Nanoseconds run_task_bench(S& system, std::span<const typename S::Var> vars,
                           const TaskBenchPattern& pattern, std::size_t width, std::size_t steps,
                           Work work) {
  const std::span<const typename S::Var> none;
  const auto start = Clock::now();
  for (std::size_t t = 0; t < steps; ++t) {
    const auto previous = vars.subspan(((t + 1) % 2) * width, width);
    const auto current = vars.subspan((t % 2) * width, width);
    for (std::size_t x = 0; x < width; ++x) {
      if (!pattern.has_dependencies()) {
        system.push(work, none, none);
        continue;
      }
      const std::size_t first = pattern.first(x);
      const std::size_t last = pattern.last(x, width);
      system.push(work, previous.subspan(first, last - first + 1), current.subspan(x, 1));
    }
  }
  system.wait_all();
  return since(start);
}

// `chain_plus_independent`: the double-buffered loop of examples/engine_demo (part 2) at a fine
// grain. Batch i is a copy that writes buffer i % 2 (vars[i % 2]) on a copy queue, then a
// compute op that reads that buffer and writes the model (vars[2]). Compute i waits for compute
// i-1 and copy i; copy i waits for compute i-2, which read its buffer. So the end of compute i
// makes ready both the chain's next op and copy i+2, which does not depend on it. Ideal time,
// with the copies beside the chain on a second core: copy + batches x compute (copy <= compute).
template <class S>
requires requires(S& system, Work work, std::span<const typename S::Var> vars) {
  system.push_copy(work, vars, vars);
}
Nanoseconds run_chain_plus_independent(S& system, std::span<const typename S::Var> vars,
                                       std::size_t batches, Work compute, Work copy) {
  const std::span<const typename S::Var> none;
  const auto model = vars.subspan(2, 1);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < batches; ++i) {
    const auto buffer = vars.subspan(i % 2, 1);
    system.push_copy(copy, none, buffer);
    system.push(compute, buffer, model);
  }
  system.wait_all();
  return since(start);
}

}  // namespace tandem::bench
