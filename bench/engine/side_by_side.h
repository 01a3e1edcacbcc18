// Runs several systems on one workload, interleaved, and keeps the median of each.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core_to_core.h"
#include "timing.h"

namespace tandem::bench {

// One system's way to run one repetition of a workload; returns what it timed.
struct Entrant {
  Entrant(std::string system, std::function<Nanoseconds()> run_once,
          std::function<void(const std::optional<CoreToCore>&)> after_probe = {})
      : system(std::move(system)),
        run_once(std::move(run_once)),
        after_probe(std::move(after_probe)) {}

  std::string system;
  std::function<Nanoseconds()> run_once;
  // Optional: called after each run (the warm-up included) with the core-to-core probe taken
  // right after it, before the next entrant runs (scheduling_trace.h prints its line here).
  std::function<void(const std::optional<CoreToCore>&)> after_probe;
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
// each run the core-to-core latency is measured (~0.1-0.5 ms, between runs): the timed runs'
// go into Timing::core_to_core_ns, and every run's to the entrant's after_probe.
// `workload` names the runs for the watchdog (watchdog.h).
std::vector<Timing> run_side_by_side(const std::string& workload,
                                     const std::vector<Entrant>& entrants, int repetitions);

}  // namespace tandem::bench
