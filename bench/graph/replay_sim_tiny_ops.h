// replay_sim_tiny_ops: what device graphs save on sim. A chain of tiny accelerator ops (each
// one empty stream item, so its modelled time is the launch latency alone) on sim(0): pushed
// one by one, replayed from a capture without device graphs, and replayed with them.
#pragma once

#include "records.h"

namespace tandem::bench {

// Appends {"workload": "replay_sim_tiny_ops", "system": "push" | "replay" |
// "replay_device_graph", "modelled_us", "seconds", "ops", "latency_us", "device"} per round of
// `ops` ops (modelled_us: sim(0)'s modelled busy time; seconds: wall time of the round, device
// work included, median of the rounds).
void run_replay_sim_tiny_ops(bool quick, Records& records);

}  // namespace tandem::bench
