// SimEvent: a DeviceEvent of the sim backend, a point in one sim stream's FIFO.
//
// Invariants:
// - `complete` is called exactly once, by the stream thread that reaches the event (or by the
//   stream's destructor while draining), after every item enqueued before it has ended.
// - `error_` and `time_ns_` are written before `done_` is released and never again, so any
//   thread that has seen `done_ == 1` (acquire) may read them without a lock.
// - Waiters block on `done_` (a futex through std::atomic::wait): no mutex per event, no
//   busy waiting.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

#include "tandem/accel/stream.h"

namespace tandem::detail {

class SimEvent final : public DeviceEvent {
 public:
  SimEvent(Device device, bool timing) : device_(device), timing_(timing) {}

  bool query() override { return done_.load(std::memory_order_acquire) != 0; }
  void synchronize() override;
  std::exception_ptr error() override { return query() ? error_ : nullptr; }
  std::int64_t time_ns() override { return timing_ && query() ? time_ns_ : -1; }
  // The device time the event was reached at (steady clock, ns), timing or not; -1 until then.
  std::int64_t reached_ns() const {
    return done_.load(std::memory_order_acquire) != 0 ? time_ns_ : -1;
  }
  Device device() const override { return device_; }

  // Blocks until the event is complete; never throws.
  void wait() const;
  // The stream reached the event at device time `at_ns` (steady clock; the stream's modelled
  // clock, never later than the call); `error` is the failure of the work it closes, if any.
  void complete(std::exception_ptr error, std::int64_t at_ns);

 private:
  const Device device_;
  const bool timing_;
  std::exception_ptr error_;
  std::int64_t time_ns_ = -1;
  std::atomic<std::uint32_t> done_{0};
};

}  // namespace tandem::detail
