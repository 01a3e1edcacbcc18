#include "cuda_event.h"

#include <utility>

#include "cuda_check.h"
#include "tandem/errors.h"

namespace tandem::detail {

namespace {

// How long CudaEvent::synchronize polls before it sleeps in cudaEventSynchronize.
constexpr std::chrono::microseconds kSpinBeforeSleep{50};

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Destruction paths run at exit too, possibly after the runtime has begun unloading; their
// failures have nobody to report to and must not leave a stale "last error" behind.
void destroy_quietly(cudaError_t error) {
  if (error != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

EventPool::~EventPool() {
  for (cudaEvent_t event : plain_) destroy_quietly(cudaEventDestroy(event));
  for (cudaEvent_t event : timed_) destroy_quietly(cudaEventDestroy(event));
}

cudaEvent_t EventPool::acquire(bool timing) {
  {
    std::lock_guard lock(mutex_);
    auto& free = timing ? timed_ : plain_;
    if (!free.empty()) {
      cudaEvent_t event = free.back();
      free.pop_back();
      return event;
    }
  }
  DeviceGuard guard(device_);
  cudaEvent_t event = nullptr;
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&event, event_flags(timing)), device_);
  return event;
}

unsigned event_flags(bool timing) {
  // Blocking sync: a host thread in cudaEventSynchronize sleeps until the device signals,
  // instead of spinning a core (the default); the CPU workers and deleters that wait for GPU
  // results need those cores. It costs the waiter some wake-up latency, not the device.
  // Events that skip timing are cheaper to record and to wait on (CUDA runtime documentation,
  // cudaEventCreateWithFlags); timing events keep timing, since the profiler reads their times.
  return cudaEventBlockingSync | (timing ? 0u : cudaEventDisableTiming);
}

void EventPool::release(cudaEvent_t event, bool timing) noexcept {
  std::lock_guard lock(mutex_);
  try {
    (timing ? timed_ : plain_).push_back(event);
  } catch (...) {  // out of host memory: give the handle back to the runtime instead
    destroy_quietly(cudaEventDestroy(event));
  }
}

TimingReference::~TimingReference() {
  if (event != nullptr) destroy_quietly(cudaEventDestroy(event));
}

DeviceClock::~DeviceClock() {
  if (stream_ != nullptr) destroy_quietly(cudaStreamDestroy(stream_));
}

std::shared_ptr<const TimingReference> DeviceClock::reference() {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (current_ && now - taken_ < std::chrono::seconds(1)) return current_;

  DeviceGuard guard(device_);
  if (stream_ == nullptr) {
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), device_);
  }
  auto reference = std::make_shared<TimingReference>();
  reference->device = device_;
  // Spinning on purpose: the reference's host time is the midpoint of this wait, and a
  // blocking wait would add the wake-up latency to it. One short wait per second at most.
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&reference->event, cudaEventDefault), device_);
  const std::int64_t before = steady_now_ns();
  TANDEM_CUDA_CHECK(cudaEventRecord(reference->event, stream_), device_);
  TANDEM_CUDA_CHECK(cudaEventSynchronize(reference->event), device_);
  const std::int64_t after = steady_now_ns();
  reference->host_ns = before + (after - before) / 2;
  current_ = std::move(reference);
  taken_ = now;
  return current_;
}

CudaEvent::CudaEvent(int device, const void* origin, std::shared_ptr<EventPool> pool,
                     cudaEvent_t event, bool timing, std::shared_ptr<StreamSegment> segment,
                     std::shared_ptr<const TimingReference> reference)
    : device_(device),
      origin_(origin),
      pool_(std::move(pool)),
      event_(event),
      timing_(timing),
      segment_(std::move(segment)),
      reference_(std::move(reference)) {}

CudaEvent::~CudaEvent() {
  pool_->release(event_, timing_);
}

void CudaEvent::set_cuda_error(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!cuda_error_) cuda_error_ = std::move(error);
}

bool CudaEvent::query() {
  if (done_.load(std::memory_order_acquire)) return true;
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    // Not an error, but the runtime keeps it as the thread's last error: clear it, or the next
    // kernel launch check on this thread would report it.
    (void)cudaGetLastError();
    return false;
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    // The work before the event ended with a device or runtime error (it is over either way).
    set_cuda_error(
        std::make_exception_ptr(Error(cuda_error_message("cudaEventQuery", device_, status))));
  }
  done_.store(true, std::memory_order_release);
  return true;
}

void CudaEvent::synchronize() {
  if (!done_.load(std::memory_order_acquire)) {
    // Spin on cudaEventQuery for a short while before sleeping: the events are blocking-sync
    // (event_flags), whose wake-up costs tens of microseconds, more than a small kernel takes.
    // A `wait_to_read` after each tiny op then costs what PyTorch's spinning synchronize does
    // (issue 22, item 2); a long wait spins kSpinBeforeSleep, then sleeps as before.
    const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (!query() && std::chrono::steady_clock::now() < spin_until) {
    }
  }
  if (!done_.load(std::memory_order_acquire)) {
    const cudaError_t status = cudaEventSynchronize(event_);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      set_cuda_error(std::make_exception_ptr(
          Error(cuda_error_message("cudaEventSynchronize", device_, status))));
    }
    done_.store(true, std::memory_order_release);
  }
  if (std::exception_ptr failure = error()) std::rethrow_exception(failure);
}

std::exception_ptr CudaEvent::error() {
  if (!query()) return nullptr;
  {
    std::lock_guard lock(mutex_);
    if (cuda_error_) return cuda_error_;
  }
  return segment_ ? segment_->final_error() : nullptr;
}

std::int64_t CudaEvent::time_ns() {
  if (!timing_ || reference_ == nullptr || !query()) return -1;
  std::lock_guard lock(mutex_);
  if (time_ns_ >= 0 || cuda_error_) return time_ns_;
  float ms = 0.0f;
  const cudaError_t status = cudaEventElapsedTime(&ms, reference_->event, event_);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;  // a failed context has no times; the error itself is reported by error()
  }
  time_ns_ = reference_->host_ns + static_cast<std::int64_t>(static_cast<double>(ms) * 1e6);
  return time_ns_;
}

Device CudaEvent::device() const {
  return tandem::cuda(device_);
}

}  // namespace tandem::detail
