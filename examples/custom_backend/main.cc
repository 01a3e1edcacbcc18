// A backend of your own, in one file: `host(i)`, an accelerator whose memory is host memory
// and whose streams are real in-order queues, each served by a thread of its own. It uses the
// installed headers only, as a user outside tandem would (docs/design.md, "How to add a
// backend"):
//
//   1. the device: a Stream (an in-order queue with events and error segments), an Accelerator
//      (its streams in a StreamSet, two MemoryPools over a RawAllocator);
//   2. the row: tandem::register_backend(Backend{name, device_count, create, hints});
//   3. the kernels: its memory is host memory, so the CPU kernels run as host items of its
//      streams: ops::register_kernels(kind, ops::host_stream_kernels()).
//
// Then every nd:: op, autograd, copies to and from the cpu and between host(0) and host(1) run
// on it with no other change. The program checks its results against the cpu, bit for bit,
// and that an error on the device surfaces at the sync point; it prints "ok" and exits 0.
#include <tandem/accel/accelerator.h>
#include <tandem/accel/backend.h>
#include <tandem/accel/memory_pool.h>
#include <tandem/accel/stream.h>
#include <tandem/accel/stream_set.h>
#include <tandem/ops/kernels.h>
#include <tandem/tandem.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using tandem::Device;
using tandem::EventRef;
using tandem::Queue;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Completed by its stream's thread when the thread reaches it.
class HostEvent final : public tandem::DeviceEvent {
 public:
  HostEvent(Device device, bool timing) : device_(device), timing_(timing) {}

  void complete(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      error_ = std::move(error);
      time_ns_ = timing_ ? now_ns() : -1;
      done_ = true;
    }
    done_cv_.notify_all();
  }
  bool query() override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void synchronize() override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() override {
    std::lock_guard lock(mutex_);
    return done_ ? error_ : nullptr;
  }
  std::int64_t time_ns() override {
    std::lock_guard lock(mutex_);
    return time_ns_;
  }
  Device device() const override { return device_; }

 private:
  const Device device_;
  const bool timing_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::int64_t time_ns_ = -1;
};

// An in-order queue served by one thread. The error segment (the first failure since the last
// record) is the thread's alone; `unreported_` (the first failure since synchronize) is shared.
class HostStream final : public tandem::Stream {
 public:
  HostStream(Device device, Queue queue, int index, std::string name)
      : device_(device), queue_(queue), index_(index), name_(std::move(name)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~HostStream() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    items_cv_.notify_one();
    thread_.join();
  }

  Device device() const override { return device_; }
  Queue queue() const override { return queue_; }
  int index() const override { return index_; }
  const char* name() const override { return name_.c_str(); }

  // The wait runs on this stream's thread: the caller does not block. An event recorded on
  // another stream before this call completes without waiting for this one, so no cycle.
  void wait(const EventRef& event) override {
    enqueue([this, event] {
      try {
        event->synchronize();
      } catch (...) {
        fail(std::current_exception());  // skip the work up to the next record
      }
    });
  }
  void wait_for_order(const EventRef& event) override {
    enqueue([event] {
      try {
        event->synchronize();
      } catch (...) {  // ordering only: the failure stays the event's
      }
    });
  }
  EventRef record(bool timing) override {
    auto event = std::make_shared<HostEvent>(device_, timing);
    enqueue([this, event] { event->complete(std::exchange(segment_error_, nullptr)); });
    return event;
  }
  void enqueue_host(std::function<void()> work, tandem::WorkCost) override {
    enqueue([this, work = std::move(work)] {
      if (segment_error_) return;
      try {
        work();
      } catch (...) {
        fail(std::current_exception());
      }
    });
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    enqueue([this, dst, src, bytes] {
      if (!segment_error_ && bytes != 0) std::memcpy(dst, src, bytes);
    });
  }
  void synchronize() override {
    const EventRef done = record(false);
    try {
      done->synchronize();
    } catch (...) {  // reported below, with the stream's first failure
    }
    std::exception_ptr error;
    {
      std::lock_guard lock(mutex_);
      error = std::exchange(unreported_, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  void enqueue(std::function<void()> item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
    }
    items_cv_.notify_one();
  }
  void serve() {
    for (;;) {
      std::function<void()> item;
      {
        std::unique_lock lock(mutex_);
        items_cv_.wait(lock, [this] { return stopping_ || !items_.empty(); });
        if (items_.empty()) return;  // stopping, and everything enqueued has run
        item = std::move(items_.front());
        items_.pop_front();
      }
      item();
    }
  }
  void fail(std::exception_ptr error) {
    if (!segment_error_) segment_error_ = error;
    std::lock_guard lock(mutex_);
    if (!unreported_) unreported_ = std::move(error);
  }

  const Device device_;
  const Queue queue_;
  const int index_;
  const std::string name_;
  std::mutex mutex_;
  std::condition_variable items_cv_;
  std::deque<std::function<void()>> items_;  // under mutex_
  bool stopping_ = false;                    // under mutex_
  std::exception_ptr unreported_;            // under mutex_
  std::exception_ptr segment_error_;         // the serving thread's
  std::thread thread_;                       // last: starts once the rest exists
};

// Host memory, aligned like device memory.
class HostMemory final : public tandem::RawAllocator {
 public:
  static constexpr std::size_t kAlignment = 256;
  void* allocate(std::size_t bytes) override {
    return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  void deallocate(void* data, std::size_t) noexcept override { std::free(data); }
};

class HostAccelerator final : public tandem::Accelerator {
 public:
  HostAccelerator(Device device, int compute_streams)
      : device_(device),
        device_pool_(device, "device memory", std::make_unique<HostMemory>()),
        pinned_pool_(device, "pinned host memory", std::make_unique<HostMemory>()),
        streams_(device, compute_streams, [device](Queue queue, int index, std::string name) {
          return std::make_unique<HostStream>(device, queue, index, std::move(name));
        }) {}

  Device device() const override { return device_; }
  std::string description() const override {
    return tandem::to_string(device_) + ": host memory, one thread per stream";
  }
  int compute_streams() const override { return streams_.compute_streams(); }
  tandem::Stream& stream(Queue queue, int index) override { return streams_.stream(queue, index); }
  tandem::MemoryPool& device_pool() override { return device_pool_; }
  tandem::MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return std::size_t{1} << 34; }
  void synchronize() override { streams_.synchronize(); }
  void bind_thread() override {}  // nothing is current per thread

 private:
  const Device device_;
  tandem::MemoryPool device_pool_;  // outlive the streams: declared first
  tandem::MemoryPool pinned_pool_;
  tandem::StreamSet streams_;
};

// The row, and the kernels: once, before the first use of a host device.
tandem::DeviceKind register_host_backend() {
  tandem::Backend row;
  row.name = "host";
  row.device_count = [](const tandem::AcceleratorConfig&) { return 2; };
  row.create = [](Device device,
                  const tandem::AcceleratorConfig& config) -> std::unique_ptr<tandem::Accelerator> {
    return std::make_unique<HostAccelerator>(device, config.compute_streams);
  };
  row.more_devices_hint = "(this example makes host(0) and host(1))";
  const tandem::DeviceKind kind = tandem::register_backend(std::move(row));
  tandem::ops::register_kernels(kind, tandem::ops::host_stream_kernels());
  return kind;
}

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "FAILED: " << what << "\n";
    ++failures;
  }
}

}  // namespace

int main() {
  namespace nd = tandem::nd;
  const tandem::DeviceKind kind = register_host_backend();
  const Device host0{kind, 0}, host1{kind, 1};
  std::cout << tandem::to_string(host0) << " and " << tandem::to_string(host1) << " registered\n";

  // A small network step on the cpu and on host(0): forward, loss, gradients.
  const auto step = [](Device device) {
    nd::random::seed(1);  // the same data for both devices, drawn on the cpu
    nd::NDArray x = nd::random::uniform({8, 6}).copyto(device);
    nd::NDArray w = nd::random::normal({6, 4}).copyto(device);
    const nd::NDArray labels =
        nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 3, 3, 2, 1, 0}, {8}, device);
    const nd::NDArray rows =
        nd::from_vector(std::vector<std::int64_t>{7, 0, 3, 3, -1}, {5}, device);
    w.attach_grad();
    nd::NDArray loss;
    {
      auto recording = tandem::autograd::record();
      const nd::NDArray logits = nd::dot(nd::tanh(x), w);
      loss =
          nd::mean(nd::softmax_cross_entropy(nd::take(logits, rows, 0), nd::take(labels, rows, 0)));
      loss.backward();
    }
    return std::pair{loss.to_vector<float>(), w.grad().to_vector<float>()};
  };
  const auto on_cpu = step(tandem::cpu());
  const auto on_host = step(host0);
  check(on_cpu == on_host, "host(0) gives the cpu's loss and gradient bit for bit");

  // Copies between the two host devices and back to the cpu.
  const nd::NDArray a = nd::arange(0, 12, 1, nd::float32, host0).reshape({3, 4});
  const nd::NDArray b = a.copyto(host1) * 2.0;
  check(b.device() == host1, "the product lives on host(1)");
  check(b.copyto(tandem::cpu()).to_vector<float>() ==
            (nd::arange(0, 12, 1, nd::float32) * 2.0).to_vector<float>(),
        "host(0) -> host(1) -> cpu copies");

  // A kernel error on the device (an index out of range) surfaces at the sync point.
  const nd::NDArray bad = nd::take(a, nd::from_vector(std::vector<std::int64_t>{9}, {1}, host0), 1);
  try {
    (void)bad.to_vector<float>();
    check(false, "the out-of-range index is reported");
  } catch (const tandem::Error& e) {
    check(std::string(e.what()).find("index 9 is out of range for axis 1 of size 4") !=
              std::string::npos,
          std::string("the error names the index: ") + e.what());
  }
  // A device that does not exist is a clear error.
  try {
    (void)nd::zeros({2}, nd::float32, Device{kind, 5});
    check(false, "host(5) is refused");
  } catch (const tandem::Error& e) {
    std::cout << "host(5): " << e.what() << "\n";
  }
  nd::waitall();

  if (failures != 0) return 1;
  std::cout << "ok\n";
  return 0;
}
