// Watchdog: turns a hang into a clear failure. A benchmark that waits forever on a lost op
// tells nobody anything, and run.sh would sit there until someone kills it.
#pragma once

#include <chrono>
#include <string>

namespace tandem::bench {

// Starts a thread that ends the process (exit code 3, after naming what was running) when one
// repetition takes longer than `limit`. Every repetition of this suite takes seconds at most.
void start_watchdog(std::chrono::seconds limit);

// Called before each repetition: what is about to run (e.g. "one_chain / tandem").
void watchdog_mark(const std::string& what);
// Called after it: nothing is running.
void watchdog_clear();

}  // namespace tandem::bench
