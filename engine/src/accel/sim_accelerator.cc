#include "sim_accelerator.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim_memory.h"
#include "sim_stream.h"

namespace tandem::detail {

namespace {

// The sim counterpart of the CUDA runtime's current device (see Accelerator::bind_thread).
thread_local Device thread_device = tandem::cpu();

class SimAccelerator final : public Accelerator {
 public:
  SimAccelerator(int id, const AcceleratorConfig& config)
      : device_(sim(id)),
        config_(config),
        device_pool_(device_, "device memory",
                     std::make_unique<SimMemory>(config.sim_memory_mb << 20)),
        pinned_pool_(device_, "pinned host memory", std::make_unique<SimMemory>(0)) {
    const SimStreamModel compute{.flops_per_s = config.sim_gflops * 1e9,
                                 .bytes_per_s = config.sim_memory_gbps * 1e9,
                                 .latency = latency(config)};
    const SimStreamModel bus{.flops_per_s = config.sim_gflops * 1e9,
                             .bytes_per_s = config.sim_bus_gbps * 1e9,
                             .latency = latency(config)};
    const int n = std::max(1, config.compute_streams);
    for (int i = 0; i < n; ++i) {
      compute_.push_back(std::make_unique<SimStream>(device_, Queue::compute, i, compute));
    }
    h2d_ = std::make_unique<SimStream>(device_, Queue::copy_h2d, 0, bus);
    d2h_ = std::make_unique<SimStream>(device_, Queue::copy_d2h, 0, bus);
    peer_ = std::make_unique<SimStream>(device_, Queue::copy_d2d, 0, bus);
    comm_ = std::make_unique<SimStream>(device_, Queue::comm, 0, bus);
  }

  Device device() const override { return device_; }

  std::string description() const override {
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s: modelled accelerator, %.0f GFLOP/s, %.0f GB/s memory, %.1f GB/s bus, "
                  "%.1f us latency, %zu MB, %d compute streams",
                  to_string(device_).c_str(), config_.sim_gflops, config_.sim_memory_gbps,
                  config_.sim_bus_gbps, config_.sim_latency_us, config_.sim_memory_mb,
                  compute_streams());
    return text;
  }

  int compute_streams() const override { return static_cast<int>(compute_.size()); }

  Stream& stream(Queue queue, int index) override {
    switch (queue) {
      case Queue::compute: {
        const int n = compute_streams();
        return *compute_[static_cast<std::size_t>(((index % n) + n) % n)];
      }
      case Queue::copy_h2d:
        return *h2d_;
      case Queue::copy_d2h:
        return *d2h_;
      case Queue::copy_d2d:
        return *peer_;
      case Queue::comm:
        return *comm_;
    }
    return *compute_[0];
  }

  MemoryPool& device_pool() override { return device_pool_; }
  MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return config_.sim_memory_mb << 20; }
  void bind_thread() override { thread_device = device_; }

  void synchronize() override {
    std::exception_ptr first;
    auto sync = [&](Stream& s) {
      try {
        s.synchronize();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    };
    for (auto& s : compute_) sync(*s);
    for (Stream* s : {h2d_.get(), d2h_.get(), peer_.get(), comm_.get()}) sync(*s);
    if (first) std::rethrow_exception(first);
  }

 private:
  static std::chrono::nanoseconds latency(const AcceleratorConfig& config) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(config.sim_latency_us * 1000.0));
  }

  const Device device_;
  const AcceleratorConfig config_;
  // The pools outlive the streams (declared first, destroyed last): stream items may free blocks.
  MemoryPool device_pool_;
  MemoryPool pinned_pool_;
  std::vector<std::unique_ptr<SimStream>> compute_;
  std::unique_ptr<SimStream> h2d_, d2h_, peer_, comm_;
};

}  // namespace

Device sim_device_bound_to_this_thread() {
  return thread_device;
}

std::unique_ptr<Accelerator> make_sim_accelerator(int id, const AcceleratorConfig& config) {
  return std::make_unique<SimAccelerator>(id, config);
}

}  // namespace tandem::detail
