// How much of the exchange across processes ran while this rank computed its backward: the
// figure train_distributed --profile prints and bench/run.sh distributed records as
// "exchange_hidden" (the cross-process counterpart of train_multi_device's exchange_overlap).
//
//   BackwardWindows windows;                      // train_multi_device/exchange_overlap.h
//   profiler::start(); windows.start();
//   ... per step: forward; windows.begin(); loss.backward(); windows.end(); step ...
//   Engine::get().wait_all(); profiler::stop();
//   const ExchangeOverlap o = cross_process_overlap(profiler::events(), windows);
//
// The exchange is every collective op ("dist.allreduce") pushed inside a backward window: from
// the moment the engine hands it to the comm thread to its completion, i.e. the header check,
// the wait for the other ranks and the transfer. Backward compute is every cpu compute op pushed
// inside a window, less the exchange's own ops (the buckets' pack and unpack, the collectives'
// probes) and the ops that read what the exchange wrote. The figure is the length of (union of
// the exchange intervals) intersected with (union of the backward compute intervals), over the
// length of the exchange's union: 1 when some backward op ran at every moment of the exchange.
#pragma once

#include <tandem/profiler.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "busy_intervals.h"
#include "exchange_overlap.h"

namespace tandem::examples {

inline bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

inline ExchangeOverlap cross_process_overlap(const std::vector<profiler::OpEvent>& events,
                                             const BackwardWindows& backward) {
  std::vector<Interval> exchange, compute;
  std::unordered_set<std::uint64_t> exchange_ops;  // ids, for the ops that read their outputs
  for (const profiler::OpEvent& event : events) {
    const int window = backward.window_of(event.push_ns);
    if (window < 0) continue;
    bool of_exchange =
        starts_with(event.name, "dist.") || starts_with(event.name, "cross_process_bucket");
    for (const std::uint64_t producer : event.depends_on)
      of_exchange = of_exchange || exchange_ops.count(producer) != 0;
    if (of_exchange) exchange_ops.insert(event.id);
    if (event.skipped || event.end_ns <= event.start_ns) continue;
    if (event.name == "dist.allreduce") {
      exchange.emplace_back(event.start_ns, event.end_ns);
    } else if (!of_exchange && event.device == cpu() && event.queue == Queue::compute) {
      compute.emplace_back(event.start_ns, event.end_ns);
    }
  }
  const std::vector<Interval> exchange_union = interval_union(std::move(exchange));
  const std::vector<Interval> compute_union = interval_union(std::move(compute));
  return {static_cast<double>(total_length(exchange_union)) / 1e6,
          static_cast<double>(overlap_length(exchange_union, compute_union)) / 1e6};
}

}  // namespace tandem::examples
