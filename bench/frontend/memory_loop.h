// memory_loop: peak RSS and time of the seeds' training-like loop (examples/async_memory), each
// configuration in a fresh child process: "synced" reads the loss every batch, "unbounded" never
// syncs and has no backpressure (max_ops_in_flight 0), "backpressure" never syncs under the
// engine's bound. Must run before the benchmark starts any thread (it forks).
#pragma once

#include <cstddef>

#include "records.h"

namespace tandem::bench {

void run_memory_loop(bool quick, std::size_t backpressure_bound, Records& records);

}  // namespace tandem::bench
