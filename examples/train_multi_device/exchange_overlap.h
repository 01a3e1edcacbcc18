// How much of the gradient exchange ran while some device was computing the backward: the figure
// train_multi_device prints and bench_multi_device records as "exchange_hidden".
//
//   BackwardWindows windows;
//   profiler::start();
//   windows.start();                              // right after profiler::start()
//   ... per step: forward; windows.begin(); every backward(); windows.end(); step ...
//   Engine::get().wait_all();  profiler::stop();
//   const double hidden = exchange_overlap(profiler::events(), windows).hidden_fraction();
//
// The exchange is every op named "allreduce" (nd::allreduce and nn::GradientExchange's buckets
// name their copies so). Backward compute is every op on an accelerator's compute lanes that was
// pushed by a backward call (its push time inside one of the windows) and is not part of the
// exchange: ops whose name starts with "allreduce" (a bucket's pack and sum) and ops that
// read what the exchange wrote (its adds, directly or through another add) are left out. So
// neither the exchange's own adds, nor the updates, nor the next step's forward count as
// hiding it. The figure is the length of (union of the exchange intervals) intersected with
// (union of the backward compute intervals), over the length of the exchange's union: 1 when
// every moment of the exchange had some device computing its backward, 0 when the exchange ran
// alone.
#pragma once

#include <tandem/profiler.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "busy_intervals.h"

namespace tandem::examples {

// The host-time windows in which a profiled run pushed its backward passes, on the profiler's
// clock (steady clock, from profiler::start()).
class BackwardWindows {
 public:
  // Call right after profiler::start(): the profiler's clock starts at that call, to well under
  // a microsecond, which is far less than the time between a forward's last push and the
  // backward's first.
  void start() { origin_ = std::chrono::steady_clock::now(); }
  void begin() { open_ = since_origin(); }
  void end() { windows_.emplace_back(open_, since_origin()); }
  // The index of the window that holds `push_ns`, or -1.
  int window_of(std::int64_t push_ns) const {
    for (std::size_t i = 0; i < windows_.size(); ++i) {
      if (windows_[i].first <= push_ns && push_ns <= windows_[i].second) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

 private:
  std::int64_t since_origin() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                origin_)
        .count();
  }

  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::int64_t open_ = 0;
  std::vector<Interval> windows_;
};

struct ExchangeOverlap {
  double exchange_ms = 0;  // the exchange's busy time (union over its lanes)
  double hidden_ms = 0;    // of it, while some device computed its backward
  double hidden_fraction() const { return exchange_ms > 0 ? hidden_ms / exchange_ms : 0.0; }
};

inline ExchangeOverlap exchange_overlap(const std::vector<profiler::OpEvent>& events,
                                        const BackwardWindows& backward) {
  std::vector<Interval> exchange, compute;
  // The exchange's ops pushed inside a window, with that window; events come sorted by id (push
  // order), so an op's producers are classified before it.
  std::unordered_map<std::uint64_t, int> exchange_ops;
  for (const profiler::OpEvent& event : events) {
    const int window = backward.window_of(event.push_ns);
    bool of_exchange = event.name.rfind("allreduce", 0) == 0;
    // Reading what the exchange wrote in the same backward (an add of the sum). A producer from
    // an earlier step's exchange does not count: the next backward overwrites the gradient
    // that the exchange wrote, which is backward work.
    for (const std::uint64_t producer : event.depends_on) {
      const auto found = exchange_ops.find(producer);
      of_exchange = of_exchange || (found != exchange_ops.end() && found->second == window);
    }
    if (of_exchange && window >= 0) exchange_ops.emplace(event.id, window);
    if (event.skipped || event.end_ns <= event.start_ns) continue;
    if (event.name == "allreduce") {
      exchange.emplace_back(event.start_ns, event.end_ns);
    } else if (!of_exchange && window >= 0 && event.device.is_accelerator() &&
               event.queue == Queue::compute) {
      compute.emplace_back(event.start_ns, event.end_ns);
    }
  }
  const std::vector<Interval> exchange_union = interval_union(std::move(exchange));
  const std::vector<Interval> compute_union = interval_union(std::move(compute));
  return {static_cast<double>(total_length(exchange_union)) / 1e6,
          static_cast<double>(overlap_length(exchange_union, compute_union)) / 1e6};
}

}  // namespace tandem::examples
