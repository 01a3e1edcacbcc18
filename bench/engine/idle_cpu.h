// How much CPU a system burns once it has nothing to do: its workers should park, not spin.
#pragma once

#include <chrono>

namespace tandem::bench {

// The CPU time (user + system, all threads) the process uses while the calling thread sleeps
// for `window`, as a percentage of one core. Meaningful only while every other system in the
// process is idle too, which is why the idle_cpu workload runs first.
double process_cpu_percent_while_sleeping(std::chrono::milliseconds window);

}  // namespace tandem::bench
