// How much of the gradient exchange ran while some device was computing: the figure
// train_multi_device prints and bench_multi_device records as "exchange_hidden".
//
//   profiler::start();  ... one epoch ...;  Engine::get().wait_all();  profiler::stop();
//   const double hidden = exchange_hidden_fraction(profiler::events());
//
// The exchange is every op named "allreduce" (nd::allreduce names its copies so; its adds run
// on the receiving devices' compute lanes under the elementwise op's name and count as
// compute). Compute is every op on an accelerator's compute lanes. The figure is the length of
// (union of the exchange intervals) intersected with (union of the compute intervals), over the
// length of the exchange's union: 1 when every moment of the exchange had some device
// computing, 0 when the exchange ran alone.
#pragma once

#include <tandem/profiler.h>

#include <string>
#include <utility>
#include <vector>

#include "busy_intervals.h"

namespace tandem::examples {

struct ExchangeOverlap {
  double exchange_ms = 0;  // the exchange's busy time (union over its lanes)
  double hidden_ms = 0;    // of it, while some device computed
  double hidden_fraction() const { return exchange_ms > 0 ? hidden_ms / exchange_ms : 0.0; }
};

inline ExchangeOverlap exchange_overlap(const std::vector<profiler::OpEvent>& events) {
  std::vector<Interval> exchange, compute;
  for (const profiler::OpEvent& event : events) {
    if (event.skipped || event.end_ns <= event.start_ns) continue;
    if (event.name == "allreduce") {
      exchange.emplace_back(event.start_ns, event.end_ns);
    } else if (event.device.is_accelerator() && event.queue == Queue::compute) {
      compute.emplace_back(event.start_ns, event.end_ns);
    }
  }
  const std::vector<Interval> exchange_union = interval_union(std::move(exchange));
  const std::vector<Interval> compute_union = interval_union(std::move(compute));
  return {static_cast<double>(total_length(exchange_union)) / 1e6,
          static_cast<double>(overlap_length(exchange_union, compute_union)) / 1e6};
}

}  // namespace tandem::examples
