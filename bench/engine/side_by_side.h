// Runs several systems on one workload, interleaved, and keeps the median of each.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "timing.h"

namespace tandem::bench {

// One system's way to run one repetition of a workload; returns what it timed.
struct Entrant {
  std::string system;
  std::function<Nanoseconds()> run_once;
};

struct Timing {
  std::string system;
  double median_ns = 0.0;
  std::vector<double> samples_ns;  // in the order they ran
  // Per sample, the core-to-core latency measured right after it (core_to_core.h; NaN where
  // it could not be measured): which state the VM's cores were in (core_state.h).
  std::vector<double> core_to_core_ns;
};

// Runs each entrant once untimed (to fill pools, start threads and fault in memory), then
// `repetitions` rounds in which every entrant runs once. Interleaving the systems, rather than
// running all repetitions of one and then the next, spreads a burst of load from another
// process on this shared machine over all systems instead of penalising one of them. After
// each timed run the core-to-core latency is measured (~0.1-0.5 ms, between runs).
// `workload` names the runs for the watchdog (watchdog.h).
std::vector<Timing> run_side_by_side(const std::string& workload,
                                     const std::vector<Entrant>& entrants, int repetitions);

}  // namespace tandem::bench
