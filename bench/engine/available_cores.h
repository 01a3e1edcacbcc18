// How many cores this process can actually get right now.
//
// The machines we benchmark on are shared: while another engineer's build holds a core, no
// system can keep both cores busy and Task Bench's efficiency (work / (wall x cores)) is
// capped near 50% for everyone. Task Bench defines efficiency against the machine's *measured*
// peak, so the METG workload measures that peak in every round, side by side with the systems:
// `cores` plain threads spinning the same calibrated loop with no scheduler in between.
#pragma once

#include "timing.h"

namespace tandem::bench {

// Runs `threads` threads that each spin for `per_thread_ns` of calibrated work; returns the
// wall time until the last one finished.
Nanoseconds run_peak_probe(int threads, double per_thread_ns);

// Cores' worth of compute the probe got: total calibrated work / wall.
inline double available_cores(int threads, double per_thread_ns, double wall_ns) {
  return threads * per_thread_ns / wall_ns;
}

}  // namespace tandem::bench
