#include "available_cores.h"

#include <thread>
#include <vector>

#include "busy_work.h"

namespace tandem::bench {

Nanoseconds run_peak_probe(int threads, double per_thread_ns) {
  const Work work = busy_work_for(per_thread_ns);
  const auto start = Clock::now();
  std::vector<std::jthread> spinners;
  for (int i = 0; i < threads; ++i) spinners.emplace_back([work] { run_work(work); });
  spinners.clear();  // joins
  return since(start);
}

}  // namespace tandem::bench
