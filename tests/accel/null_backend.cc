#include "null_backend.h"

#include <tandem/accel/accelerator.h>
#include <tandem/accel/backend.h>
#include <tandem/accel/memory_pool.h>
#include <tandem/accel/stream.h>
#include <tandem/accel/stream_set.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace tandem_test {

namespace {

using tandem::Device;
using tandem::EventRef;
using tandem::Queue;

thread_local Device bound_device = tandem::cpu();

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Complete from birth: the work it closes has already run.
class NullEvent final : public tandem::DeviceEvent {
 public:
  NullEvent(Device device, std::exception_ptr error, std::int64_t time_ns)
      : device_(device), error_(std::move(error)), time_ns_(time_ns) {}
  bool query() override { return true; }
  void synchronize() override {
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() override { return error_; }
  std::int64_t time_ns() override { return time_ns_; }
  Device device() const override { return device_; }

 private:
  const Device device_;
  const std::exception_ptr error_;
  const std::int64_t time_ns_;
};

class NullStream final : public tandem::Stream {
 public:
  NullStream(Device device, Queue queue, int index, std::string name)
      : device_(device), queue_(queue), index_(index), name_(std::move(name)) {}

  Device device() const override { return device_; }
  Queue queue() const override { return queue_; }
  int index() const override { return index_; }
  const char* name() const override { return name_.c_str(); }

  void wait(const EventRef& event) override {
    // Every event is complete: a wait only carries a failure over.
    if (std::exception_ptr error = event->error()) fail(std::move(error));
  }
  void wait_for_order(const EventRef&) override {}

  EventRef record(bool timing) override {
    std::lock_guard lock(mutex_);
    auto event = std::make_shared<NullEvent>(device_, std::exchange(segment_error_, nullptr),
                                             timing ? now_ns() : -1);
    return event;
  }

  void enqueue_host(std::function<void()> work, tandem::WorkCost) override {
    if (failed()) return;
    try {
      work();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (failed() || bytes == 0) return;
    std::memcpy(dst, src, bytes);
  }

  void synchronize() override {
    std::exception_ptr error;
    {
      std::lock_guard lock(mutex_);
      error = std::exchange(unreported_, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  bool failed() {
    std::lock_guard lock(mutex_);
    return segment_error_ != nullptr;
  }
  void fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!segment_error_) segment_error_ = error;
    if (!unreported_) unreported_ = std::move(error);
  }

  const Device device_;
  const Queue queue_;
  const int index_;
  const std::string name_;
  std::mutex mutex_;
  std::exception_ptr segment_error_;  // first failure since the last record(), under mutex_
  std::exception_ptr unreported_;     // first failure since synchronize(), under mutex_
};

// Host memory, aligned like device memory; no capacity limit.
class NullMemory final : public tandem::RawAllocator {
 public:
  static constexpr std::size_t kAlignment = 256;
  void* allocate(std::size_t bytes) override {
    return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  void deallocate(void* data, std::size_t) noexcept override { std::free(data); }
};

class NullAccelerator final : public tandem::Accelerator {
 public:
  NullAccelerator(Device device, int compute_streams)
      : device_(device),
        device_pool_(device, "device memory", std::make_unique<NullMemory>()),
        pinned_pool_(device, "pinned host memory", std::make_unique<NullMemory>()),
        streams_(device, compute_streams, [device](Queue queue, int index, std::string name) {
          return std::make_unique<NullStream>(device, queue, index, std::move(name));
        }) {}

  Device device() const override { return device_; }
  std::string description() const override {
    return tandem::to_string(device_) + ": null test accelerator, work runs at once";
  }
  int compute_streams() const override { return streams_.compute_streams(); }
  tandem::Stream& stream(Queue queue, int index) override { return streams_.stream(queue, index); }
  tandem::MemoryPool& device_pool() override { return device_pool_; }
  tandem::MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return std::size_t{1} << 40; }
  void synchronize() override { streams_.synchronize(); }
  void bind_thread() override { bound_device = device_; }

 private:
  const Device device_;
  tandem::MemoryPool device_pool_;  // outlive the streams: declared first
  tandem::MemoryPool pinned_pool_;
  tandem::StreamSet streams_;
};

}  // namespace

tandem::DeviceKind register_null_backend(int devices) {
  static const tandem::DeviceKind kind = [devices] {
    tandem::Backend row;
    row.name = "null";
    row.device_count = [devices](const tandem::AcceleratorConfig&) { return devices; };
    row.create =
        [](Device device,
           const tandem::AcceleratorConfig& config) -> std::unique_ptr<tandem::Accelerator> {
      return std::make_unique<NullAccelerator>(device, config.compute_streams);
    };
    row.more_devices_hint = "(tandem_test::register_null_backend(devices) sets the count)";
    return tandem::register_backend(std::move(row));
  }();
  return kind;
}

Device null_device(int id) {
  return Device{register_null_backend(), id};
}

Device null_device_bound_to_this_thread() {
  return bound_device;
}

}  // namespace tandem_test
