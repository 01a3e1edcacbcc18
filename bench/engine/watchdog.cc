#include "watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mutex;
  std::string running;  // empty: nothing
  Clock::time_point since;
};

State& state() {
  static State* s = new State();  // leaked: the watchdog thread may outlive main's statics
  return *s;
}

}  // namespace

void start_watchdog(std::chrono::seconds limit) {
  std::thread([limit] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::lock_guard lock(state().mutex);
      if (state().running.empty() || Clock::now() - state().since < limit) continue;
      std::fprintf(stderr,
                   "bench_engine: '%s' made no progress for %lld s; the system under test "
                   "looks hung (lost wake-up or op?). Aborting.\n",
                   state().running.c_str(), static_cast<long long>(limit.count()));
      std::fflush(stdout);
      std::_Exit(3);
    }
  }).detach();
}

void watchdog_mark(const std::string& what) {
  std::lock_guard lock(state().mutex);
  state().running = what;
  state().since = Clock::now();
}

void watchdog_clear() {
  std::lock_guard lock(state().mutex);
  state().running.clear();
}

}  // namespace tandem::bench
