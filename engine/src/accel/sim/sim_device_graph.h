// SimDeviceGraph: a device graph (tandem/accel/device_graph.h) of a sim stream.
//
// Capture records the host items and copies enqueued on a SimStream into a SimGraphItems list;
// a launch enqueues one stream item that runs them in recording order. The model: a launch is
// held for
//   latency + sum over items of max(flops / compute rate, bytes / bandwidth)
// (each item's modelled work without its own latency), or for as long as the items' bodies
// really take when that is longer: one launch latency per graph instead of one per item, which
// is what a CUDA Graph saves. On a compute stream whose device shares its rate among its
// compute streams (sim_shared_rate.h), each item takes its share of the device in turn, as the
// same item enqueued alone would. Errors follow the stream's rule: an item that throws fails the
// stream's segment and the launch's remaining items are skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "tandem/accel/device_graph.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

struct SimGraphItem {
  std::function<void()> work;  // a host item's body; empty for a copy
  WorkCost cost;
  void* dst = nullptr;  // copy
  const void* src = nullptr;
};
using SimGraphItems = std::vector<SimGraphItem>;

class SimDeviceGraph final : public DeviceGraph {
 public:
  SimDeviceGraph(Device device, std::shared_ptr<const SimGraphItems> items)
      : device_(device), items_(std::move(items)) {}
  Device device() const override { return device_; }
  std::size_t num_items() const override { return items_->size(); }
  void launch(Stream& stream) override;

 private:
  const Device device_;
  const std::shared_ptr<const SimGraphItems> items_;
};

}  // namespace tandem::detail
