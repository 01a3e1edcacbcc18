// The fuzzers' watchdog: a thread that, every 100 ms until the run is done, checks whether the
// input under way has run past its time limit (a hang the engine must never have) and, if so,
// calls the fuzzer's handler, which reports the input and aborts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace tandem::fuzz {

inline std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `started_ms`: when the input under way started (now_ms()), 0 while none is. `expired` is
// called with `limit_ms` and must not return.
template <class Expired>
void watch_inputs(std::int64_t limit_ms, const std::atomic<std::int64_t>& started_ms,
                  const std::atomic<bool>& done, Expired expired) {
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::int64_t started = started_ms.load();
    if (started != 0 && now_ms() - started > limit_ms) expired(limit_ms);
  }
}

}  // namespace tandem::fuzz
