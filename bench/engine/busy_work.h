// Work: what one benchmark op does when it runs. Most workloads time empty ops (Work{} does
// nothing); the METG workload gives each task a granularity, spent in a calibrated busy loop.
//
// A busy loop rather than sleep or a clock-polling loop: Task Bench measures how much *compute*
// a system can keep the cores busy with. A sleeping task frees its core, and a task polling the
// clock would count time it spent preempted (3 threads share 2 cores here) as work done.
#pragma once

#include <cstdint>

namespace tandem::bench {

struct Work {
  std::uint64_t spin_iterations = 0;  // 0: an empty op
};

// Burns `iterations` steps of a dependent arithmetic chain the compiler cannot remove.
void spin(std::uint64_t iterations) noexcept;

inline void run_work(Work work) noexcept {
  if (work.spin_iterations != 0) spin(work.spin_iterations);
}

// Measures how long one spin iteration takes on this machine. Call once at start-up, before any
// engine threads exist, so nothing competes with the measurement.
void calibrate_busy_work();
double nanoseconds_per_spin_iteration();
// The Work that keeps a core busy for about `nanoseconds` (at least one iteration).
Work busy_work_for(double nanoseconds);

}  // namespace tandem::bench
