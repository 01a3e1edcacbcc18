// The time a cache line takes to travel between two cores of this process, measured by two
// threads pinned to two different cores bouncing one atomic. On a virtual machine this moves
// with where the hypervisor runs the two vCPUs at the moment (the same physical core's two
// hardware threads, two cores, two core complexes): bench_engine records it beside every timed
// round, because every op handed from the pushing thread to a worker on another core moves a
// few such lines, so a round's ns per op follows it (docs/benchmarks.md, "Two modes of a run").
#pragma once

#include <optional>

namespace tandem::bench {

struct CoreToCore {
  double median_ns = 0;  // one way, the median over batches of 16 round trips
  double mean_ns = 0;    // the same over all batches: also counts the times a vCPU stalled
};

// The one-way latency over `round_trips` bounces between the first two cores the process may
// run on, or nothing when it may run on only one, or when BENCH_CORE_TO_CORE=0 (what
// bench/engine_cost_breakdown.sh sets: under callgrind the probe's spinning would only add
// instructions; an environment variable, so that older bench_engine binaries still run there).
std::optional<CoreToCore> core_to_core(int round_trips = 2000);

}  // namespace tandem::bench
