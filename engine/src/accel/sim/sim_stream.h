// SimStream: one stream of a sim(i) device, a CPU thread that works through a FIFO of items.
//
// Items are host work (an op's CPU kernel), copies (memcpy), waits on events and event records.
// A host item or a copy is *held* for its modelled duration
//   latency + max(flops / compute rate, bytes / bandwidth)
// (bandwidth: device memory on compute streams, the bus on copy and comm streams), or for as long
// as its body really takes when that is longer. The compute streams of one device share its rate
// (SimSharedRate): while k items run on them, each gets 1/k of the rate, and the latency, which
// is not shared, follows the shared part. A copy or comm stream has its rate to itself. Holding
// sleeps until 100 us before the end and spins, yielding, for the rest (a sleep alone overshoots by
// 30-80 us on a VM, ten times a short kernel); an idle stream polls for work for 30 us before it
// sleeps, and a wait on an event polls as long before it sleeps. That is at most ~160 us of CPU per
// item, given back through the yields to the CPU work the streams overlap with; long items sleep
// for all but their tail.
//
// Device time. The stream keeps its own clock, `device_clock_`: when its last item ended on the
// modelled device. An item begins at the later of that clock, the moment it was enqueued and (for
// a wait) the device time of the event it waits for, not when the stream thread happens to get a
// core: on a host with fewer cores than sim streams a thread can be descheduled for milliseconds,
// and a 10 us copy must not be recorded, nor passed on downstream, as a 2 ms one. An item ends at
// its begin plus its modelled duration (or its body's real run time, when longer); events are
// stamped with that device time. The thread still holds each item until the real clock reaches
// its modelled end, so the host sees work finish when the device would have finished it; a thread
// that fell behind catches up without sleeping.
//
// Invariants:
// - Only the stream thread runs items, one at a time, in enqueue order.
// - `segment_error_` (stream thread only) is the first failure since the last record: an item
//   that throws, or a waited event that carries an error. While it is set, host items and
//   copies are skipped; the next record completes its event with it and clears it. This is
//   the error rule of tandem/accel/stream.h.
// - The FIFO holds at most `kCapacity` items; enqueuing past it blocks until the thread has
//   caught up (like a full CUDA launch queue). This cannot deadlock: an event is recorded
//   (enqueued) before any wait on it, so every wait names work that is already queued.
// - An idle stream thread polls for work for kIdleSpin, then sleeps on `not_empty_` (0% CPU).
// - `device_clock_` (stream thread only) never runs ahead of the real clock between items, and
//   only moves forward: an event's device time is never later than the moment it completed, and
//   never earlier than the device time of the work before it on its stream.
// - While a device-graph capture is open (`capture_`), host items and copies go into it instead
//   of the FIFO; a launch of the graph is one item (sim_device_graph.cc).
#pragma once

#include <atomic>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "sim_device_graph.h"
#include "sim_event.h"
#include "sim_shared_rate.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

// The cost model of one stream, in SI units.
struct SimStreamModel {
  double flops_per_s = 1e12;
  double bytes_per_s = 1e10;
  std::chrono::nanoseconds latency{5000};
  // The device's compute capacity, shared with its other compute streams; null on copy and comm
  // streams, which have their rate to themselves.
  std::shared_ptr<SimSharedRate> shared_rate;
  // How long an item with `cost` takes at the full rate, without the latency.
  std::chrono::nanoseconds work(const WorkCost& cost) const;
  // How long an item with `cost` is held when it has the rate to itself: latency + work.
  std::chrono::nanoseconds duration(const WorkCost& cost) const;
};

// Sleeps until shortly before `deadline`, then spins (yielding) up to it: how a stream holds
// an item for its modelled duration without the coarseness of a sleep.
void wait_until_precisely(std::chrono::steady_clock::time_point deadline);

class SimStream final : public Stream {
 public:
  static constexpr std::size_t kCapacity = 4096;

  // `name`: the profiler's lane name (StreamSet::name).
  SimStream(Device device, Queue queue, int index, std::string name, SimStreamModel model);
  // Finishes every item already enqueued, then joins the thread.
  ~SimStream() override;
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  Device device() const override { return device_; }
  Queue queue() const override { return queue_; }
  int index() const override { return index_; }
  const char* name() const override { return name_.c_str(); }

  void wait(const EventRef& event) override;
  void wait_for_order(const EventRef& event) override;
  EventRef record(bool timing = false) override;
  void enqueue_host(std::function<void()> work, WorkCost cost) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  // Waits for everything enqueued so far, then throws the first failure since the last
  // synchronize (a failed item, or a failed event this stream waited on), if any.
  void synchronize() override;

  bool supports_graph_capture() const override { return true; }
  void begin_graph_capture() override;
  std::unique_ptr<DeviceGraph> end_graph_capture() override;
  void abort_graph_capture() noexcept override;
  // Enqueues one launch of a captured graph (SimDeviceGraph::launch).
  void launch_graph(std::shared_ptr<const SimGraphItems> graph);

  const SimStreamModel& model() const { return model_; }
  // The modelled clock: the sum of the modelled durations of the items this stream has held
  // (host items, copies, graph launches; waits and records cost nothing), and how many launch
  // latencies they paid (one per host item or copy, one per graph launch). Counted as each
  // item ends; skipped items count as well, as a device would still launch them.
  std::int64_t modelled_busy_ns() const {
    return modelled_busy_ns_.load(std::memory_order_acquire);
  }
  std::uint64_t launches() const { return launches_.load(std::memory_order_acquire); }

 private:
  enum class Kind : std::uint8_t { host, copy, wait, record, graph };
  struct Item {
    Kind kind = Kind::host;
    std::function<void()> work;                      // host
    WorkCost cost;                                   // host, copy
    void* dst = nullptr;                             // copy
    const void* src = nullptr;                       // copy
    std::shared_ptr<SimEvent> event;                 // wait, record
    bool inherit_error = true;                       // wait: a failed event fails this segment
    std::shared_ptr<const SimGraphItems> graph;      // graph
    std::chrono::steady_clock::time_point enqueued;  // the earliest it can begin on the device
  };

  void push(Item item);
  // push() while a capture is open (mutex_ held): a host item or copy joins the capture;
  // anything else throws tandem::Error.
  void record_in_capture(Item& item);
  void push_wait(const EventRef& event, bool inherit_error);
  void run();
  void process(Item& item);
  using TimePoint = std::chrono::steady_clock::time_point;
  // Runs `body` unless the segment has failed, then holds until the modelled end: `begin +
  // duration`, or on a shared rate, the end of its share plus the latency (or `begin` + the
  // body's run time, when longer). Returns that end (device time); a skipped item ends at `begin`.
  template <class Body>
  TimePoint hold(TimePoint begin, const WorkCost& cost, Body&& body);
  // On a shared rate: sleeps until the share of `ticket` has ended, then `after` more; returns
  // the time it slept until.
  TimePoint wait_for_share(SimSharedRate& shared, std::uint64_t ticket,
                           std::chrono::nanoseconds after);
  void fail(std::exception_ptr error);
  // Test-only fault injection of a launch (tandem/detail/fault_injection.h).
  void inject_launch_fault(const char* what) const;
  // A graph launch begun at `begin`: its items in order, one latency for all, each item taking
  // its share of a shared rate like a kernel would (sim_device_graph.cc). Returns its end.
  TimePoint run_graph(TimePoint begin, const SimGraphItems& graph);
  void count_modelled(std::chrono::nanoseconds duration) noexcept;

  const Device device_;
  const Queue queue_;
  const int index_;
  const std::string name_;
  const SimStreamModel model_;

  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<Item> items_;  // guarded by mutex_
  // items_.size(), readable without the lock: what an idle stream thread polls before it sleeps.
  std::atomic<std::size_t> queued_{0};
  // How long an idle stream thread polls for work before it sleeps on not_empty_.
  static constexpr std::chrono::microseconds kIdleSpin{30};
  bool stopping_ = false;                   // guarded by mutex_
  std::exception_ptr unreported_;           // guarded by mutex_: first failure since synchronize()
  std::shared_ptr<SimGraphItems> capture_;  // guarded by mutex_: the open capture, if any
  std::atomic<std::int64_t> modelled_busy_ns_{0};
  std::atomic<std::uint64_t> launches_{0};

  std::exception_ptr segment_error_;  // stream thread only
  TimePoint device_clock_{};          // stream thread only: device time the last item ended
  std::thread thread_;
};

}  // namespace tandem::detail
