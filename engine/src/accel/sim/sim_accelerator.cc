#include "sim_accelerator.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim_memory.h"
#include "sim_shared_rate.h"
#include "sim_stream.h"
#include "tandem/accel/stream_set.h"

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
        pinned_pool_(device_, "pinned host memory", std::make_unique<SimMemory>(0)),
        streams_(
            device_, std::max(1, config.compute_streams),
            [this](Queue queue, int index, std::string name) {
              // Compute streams are bound by device memory and share the device's rate; the
              // others are bound by the bus and have their rate to themselves.
              const bool compute = queue == Queue::compute;
              const SimStreamModel model{
                  .flops_per_s = config_.sim_gflops * 1e9,
                  .bytes_per_s = (compute ? config_.sim_memory_gbps : config_.sim_bus_gbps) * 1e9,
                  .latency = latency(config_),
                  .shared_rate = compute ? compute_rate_ : nullptr};
              return std::make_unique<SimStream>(device_, queue, index, std::move(name), model);
            }) {}

  Device device() const override { return device_; }

  std::string description() const override {
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s: modelled accelerator, %.0f GFLOP/s, %.0f GB/s memory, %.1f GB/s bus, "
                  "%.1f us latency, %zu MB, %d compute streams sharing the rate",
                  to_string(device_).c_str(), config_.sim_gflops, config_.sim_memory_gbps,
                  config_.sim_bus_gbps, config_.sim_latency_us, config_.sim_memory_mb,
                  compute_streams());
    return text;
  }

  int compute_streams() const override { return streams_.compute_streams(); }
  Stream& stream(Queue queue, int index) override { return streams_.stream(queue, index); }
  Stream& staging_stream(Queue direction) override { return streams_.staging(direction); }
  MemoryPool& device_pool() override { return device_pool_; }
  MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return config_.sim_memory_mb << 20; }
  void bind_thread() override { thread_device = device_; }
  void synchronize() override { streams_.synchronize(); }

 private:
  static std::chrono::nanoseconds latency(const AcceleratorConfig& config) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(config.sim_latency_us * 1000.0));
  }

  const Device device_;
  const AcceleratorConfig config_;
  // What the compute streams share (declared before streams_, which are made with it).
  const std::shared_ptr<SimSharedRate> compute_rate_ = std::make_shared<SimSharedRate>();
  // The pools outlive the streams (declared first, destroyed last): stream items may free blocks.
  MemoryPool device_pool_;
  MemoryPool pinned_pool_;
  StreamSet streams_;
};

}  // namespace

Device sim_device_bound_to_this_thread() {
  return thread_device;
}

Backend sim_backend() {
  Backend row;
  row.kind = DeviceKind::sim;
  row.name = "sim";
  row.device_count = [](const AcceleratorConfig& config) {
    return std::max(0, config.sim_devices);
  };
  row.create = [](Device device, const AcceleratorConfig& config) -> std::unique_ptr<Accelerator> {
    return std::make_unique<SimAccelerator>(device.id, config);
  };
  row.more_devices_hint = "(set TANDEM_SIM_DEVICES or AcceleratorConfig::sim_devices for more)";
  row.no_devices_reason = "no sim devices are configured";
  row.no_devices_fix = "set TANDEM_SIM_DEVICES or AcceleratorConfig::sim_devices";
  return row;
}

}  // namespace tandem::detail
