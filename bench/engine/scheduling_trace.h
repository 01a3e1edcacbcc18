// How tandem's CPU workers ran in each timed run: the difference of the engine's scheduling
// counters (EngineStats::worker_wakes and the rest) over the run, per op pushed. A run whose
// workers stay awake shows almost no wakes or parks per op; one whose workers park between ops
// and are woken again shows about one of each per op, and costs a wake-up (a oneTBB enqueue and
// a futex) per op. The process's context switches over the run say whether its threads took
// turns on the cores (involuntary: more runnable threads than cores). bench_engine prints one
// line per run and keeps them in the records, so that a slow round says which mode it ran in.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "side_by_side.h"
#include "tandem/engine.h"

namespace tandem::bench {

// The runs of one workload's tandem entrants, in the order they ran (warm-up first).
using SchedulingRounds = std::shared_ptr<std::vector<nlohmann::json>>;

// `entrant`, a system running on `engine`, which now also prints and appends to `rounds` what
// the engine's workers did in each of its runs.
Entrant traced(Entrant entrant, Engine& engine, SchedulingRounds rounds);

}  // namespace tandem::bench
