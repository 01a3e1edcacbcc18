// Events of the CUDA backend: CudaEvent (a DeviceEvent over a pooled cudaEvent_t), the per-device
// EventPool it comes from, and the DeviceClock that turns timing events into steady_clock times.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "stream_segment.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

// Recycles cudaEvent_t handles of one device: no cudaEventCreate/Destroy per record() in the
// steady state. A handle may be recorded again while an earlier record of it is still pending:
// cudaStreamWaitEvent and cudaEventQuery use the record current at their call, so a reused
// handle never affects an earlier wait.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A handle created with event_flags(timing).
  cudaEvent_t acquire(bool timing);
  void release(cudaEvent_t event, bool timing) noexcept;

 private:
  const int device_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> plain_;
  std::vector<cudaEvent_t> timed_;
};

// The flags of every event a stream records: cudaEventBlockingSync (host waits sleep, they never
// spin a core), plus cudaEventDisableTiming unless `timing`.
unsigned event_flags(bool timing);

// A device timestamp with the steady_clock time at which the device reached it: timing events
// measure cudaEventElapsedTime from it. Owned by the events that use it.
struct TimingReference {
  int device = 0;
  cudaEvent_t event = nullptr;
  std::int64_t host_ns = 0;
  ~TimingReference();
};

// Calibrates timing references: records an event on its own otherwise idle stream, waits for it
// and takes the midpoint of the host times around the wait (error: half the round trip, a few
// microseconds). cudaEventElapsedTime answers in float milliseconds, so a reference is renewed
// every second to keep that float's resolution well under a microsecond.
class DeviceClock {
 public:
  explicit DeviceClock(int device) : device_(device) {}
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  std::shared_ptr<const TimingReference> reference();

 private:
  const int device_;
  std::mutex mutex_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<const TimingReference> current_;
  std::chrono::steady_clock::time_point taken_{};
};

class CudaEvent final : public DeviceEvent {
 public:
  // `origin` identifies the recording stream (waiting on one's own event is a no-op);
  // `segment` is the closed segment's error state (null: nothing there can fail);
  // `reference` is set for timing events.
  CudaEvent(int device, const void* origin, std::shared_ptr<EventPool> pool, cudaEvent_t event,
            bool timing, std::shared_ptr<StreamSegment> segment,
            std::shared_ptr<const TimingReference> reference);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  bool query() override;
  void synchronize() override;
  std::exception_ptr error() override;
  std::int64_t time_ns() override;
  Device device() const override;

  cudaEvent_t handle() const { return event_; }
  const void* origin() const { return origin_; }
  const std::shared_ptr<StreamSegment>& segment() const { return segment_; }

 private:
  void set_cuda_error(std::exception_ptr error);

  const int device_;
  const void* const origin_;
  const std::shared_ptr<EventPool> pool_;
  const cudaEvent_t event_;
  const bool timing_;
  const std::shared_ptr<StreamSegment> segment_;
  const std::shared_ptr<const TimingReference> reference_;
  std::atomic<bool> done_{false};
  std::mutex mutex_;               // guards cuda_error_ and time_ns_
  std::exception_ptr cuda_error_;  // the runtime's error for the work before the event
  std::int64_t time_ns_ = -1;
};

}  // namespace tandem::detail
