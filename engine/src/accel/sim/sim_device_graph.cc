// Device graphs on sim streams (sim_device_graph.h): capture into an item list, launch as one
// stream item.
#include "sim_device_graph.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "sim_stream.h"
#include "tandem/errors.h"

namespace tandem::detail {

void SimDeviceGraph::launch(Stream& stream) {
  auto* sim_stream = dynamic_cast<SimStream*>(&stream);
  if (sim_stream == nullptr || stream.device() != device_) {
    throw Error("tandem: a device graph of " + to_string(device_) + " cannot be launched on " +
                stream.name() + ": launch it on a stream of the device it was captured on");
  }
  sim_stream->launch_graph(items_);
}

void SimStream::begin_graph_capture() {
  std::lock_guard lock(mutex_);
  if (capture_) {
    throw Error("tandem: " + name_ +
                " is already capturing a device graph: end that capture first");
  }
  capture_ = std::make_shared<SimGraphItems>();
}

std::unique_ptr<DeviceGraph> SimStream::end_graph_capture() {
  std::shared_ptr<SimGraphItems> items;
  {
    std::lock_guard lock(mutex_);
    items = std::exchange(capture_, nullptr);
  }
  if (!items) {
    throw Error("tandem: " + name_ + " has no device-graph capture to end");
  }
  return std::make_unique<SimDeviceGraph>(device_, std::move(items));
}

void SimStream::abort_graph_capture() noexcept {
  std::shared_ptr<SimGraphItems> dropped;
  std::lock_guard lock(mutex_);
  dropped = std::exchange(capture_, nullptr);
}

void SimStream::record_in_capture(Item& item) {
  switch (item.kind) {
    case Kind::host:
      capture_->push_back(SimGraphItem{std::move(item.work), item.cost, nullptr, nullptr});
      return;
    case Kind::copy:
      capture_->push_back(SimGraphItem{nullptr, item.cost, item.dst, item.src});
      return;
    case Kind::wait:
    case Kind::record:
    case Kind::graph:
      break;
  }
  throw Error("tandem: " + name_ +
              " is capturing a device graph: only host items and copies can be captured "
              "(wait, record, synchronize and graph launches cannot)");
}

void SimStream::launch_graph(std::shared_ptr<const SimGraphItems> graph) {
  Item item;
  item.kind = Kind::graph;
  item.graph = std::move(graph);
  push(std::move(item));
}

void SimStream::count_modelled(std::chrono::nanoseconds duration) noexcept {
  modelled_busy_ns_.fetch_add(duration.count(), std::memory_order_acq_rel);
  launches_.fetch_add(1, std::memory_order_acq_rel);
}

SimStream::TimePoint SimStream::run_graph(TimePoint begin, const SimGraphItems& graph) {
  // The modelled duration: one latency, then each item's work.
  std::chrono::nanoseconds modelled = model_.latency;
  for (const SimGraphItem& item : graph) modelled += model_.duration(item.cost) - model_.latency;
  count_modelled(modelled);
  if (segment_error_) return begin;  // behind a failure: the whole launch is skipped
  // Runs one item's body; returns how long it really took.
  const auto run_item = [&](const SimGraphItem& item) {
    const auto start = std::chrono::steady_clock::now();
    if (!segment_error_) {
      try {
        if (item.work) {
          item.work();
        } else {
          const auto bytes = static_cast<std::size_t>(item.cost.bytes);
          if (bytes > 0) std::memmove(item.dst, item.src, bytes);
        }
      } catch (...) {
        fail(std::current_exception());
      }
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start);
  };
  // Device time: after the one latency, each item in turn (see sim_stream.h).
  TimePoint at = begin + model_.latency;
  wait_until_precisely(at);
  SimSharedRate* const shared = model_.shared_rate.get();
  for (const SimGraphItem& item : graph) {
    const std::chrono::nanoseconds work = model_.work(item.cost);
    if (shared != nullptr) {
      // The device's compute is shared with its other compute streams: each item takes its
      // share as a kernel enqueued on its own would (sim_shared_rate.h).
      const auto ticket = shared->start(at, work);
      const auto ran = run_item(item);
      at = std::max(wait_for_share(*shared, ticket, std::chrono::nanoseconds(0)), at + ran);
    } else {
      // An item whose body outlasts its modelled work holds the stream for as long as it took.
      at += std::max(work, run_item(item));
    }
  }
  wait_until_precisely(at);
  return at;
}

}  // namespace tandem::detail
