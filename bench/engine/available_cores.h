// How many cores this process can actually get right now, for a run of a given length.
//
// The machines we benchmark on are shared: while another engineer's build holds a core, no
// system can keep both cores busy and Task Bench's efficiency (work / (wall x cores)) is
// capped near 50% for everyone. Task Bench defines efficiency against the machine's *measured*
// peak, so the METG workload measures that peak in every round, side by side with the systems:
// `cores` plain threads spinning the same calibrated loop with no scheduler in between.
//
// Two properties make the probe comparable with the run it is the reference of (without them,
// systems measured efficiencies up to 1.5 against it, e.g. in bench/results/engine.json of
// 2026-11-26):
// - It does the same total work as the run, started the same way (after the same pause). The
//   kernel's scheduler favours threads that have just woken up for a few milliseconds, so a
//   0.5 ms run after a pause gets more of a loaded machine than a 10 ms probe would.
// - It balances its work dynamically, in small chunks taken from a shared counter, like a
//   scheduler does: with one fixed share per thread, a preempted thread made the probe's wall
//   time a straggler's while a scheduler moved the work to the thread that ran.
// Thread creation is not timed: the clock starts when the last spinner has started.
#pragma once

#include "timing.h"

namespace tandem::bench {

// Runs `threads` threads that together spin `total_ns` of calibrated work in chunks; returns
// the wall time from the moment all of them run to the end of the last chunk.
Nanoseconds run_peak_probe(int threads, double total_ns);

// Cores' worth of compute the probe got: total calibrated work / wall.
inline double available_cores(double total_ns, double wall_ns) {
  return total_ns / wall_ns;
}

}  // namespace tandem::bench
