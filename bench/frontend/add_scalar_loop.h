// add_scalar_loop: the seeds' 1000 x `y = x + 1` at array sizes from 1x2 (2 elements) to
// 2000x2000 (4e6), three ways: "sync" waits for every result (wait_to_read), "async" queues all
// 1000 ops and waits once (waitall), "naive" runs the async loop on the naive engine (every op
// inside its call).
#pragma once

#include "records.h"

namespace tandem::bench {

// Appends one record per (size, system) and the add-loop targets: async / sync and async /
// naive are ratios of the best times of interleaved rounds (3 with --quick, else 5).
void run_add_scalar_loop(bool quick, Records& records);

}  // namespace tandem::bench
