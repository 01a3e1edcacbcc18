// hybridize_mlp: d2l 8.1's experiment on tandem. A small MLP of tiny ops, many forward calls,
// eagerly and hybridized (Block::hybridize).
#pragma once

#include "records.h"

namespace tandem::bench {

// Appends {"workload": "hybridize_mlp", "system": "eager" | "hybridized" | "hybridized_copied" |
// "plain_loops", "seconds", "calls", "model", "device"} and the target record (eager /
// hybridized >= 3). hybridized_copied copies each output (keeping every result); plain_loops is
// the floor: the same layers as plain C++ over OpenBLAS, no engine.
void run_hybridize_mlp(bool quick, Records& records);

}  // namespace tandem::bench
