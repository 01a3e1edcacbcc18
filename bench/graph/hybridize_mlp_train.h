// hybridize_mlp_train: training steps (forward, backward, SGD step) of hybridize_mlp's network,
// eagerly and hybridized (under autograd::record() the hybridized block replays its recorded
// forward and backward).
#pragma once

#include "records.h"

namespace tandem::bench {

// Appends {"workload": "hybridize_mlp_train", "system": "eager" | "hybridized", "seconds",
// "steps", "model", "device"}.
void run_hybridize_mlp_train(bool quick, Records& records);

}  // namespace tandem::bench
