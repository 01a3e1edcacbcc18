// CudaAccelerator: gpu(i) behind the Accelerator interface. Per device: N compute streams, one
// stream per copy direction, one peer-copy stream and one comm stream (all non-blocking, so
// copies overlap compute and each other), an event pool, a clock for timing events, and the
// caching pools over cudaMalloc and cudaHostAlloc.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "accel/cuda_factory.h"
#include "cuda_check.h"
#include "cuda_event.h"
#include "cuda_memory.h"
#include "cuda_stream.h"
#include "logging.h"
#include "tandem/accel/cuda.h"
#include "tandem/errors.h"

namespace tandem {

namespace detail {

namespace {

class CudaAccelerator final : public Accelerator {
 public:
  CudaAccelerator(int id, const AcceleratorConfig& config)
      : id_(id),
        events_(std::make_shared<EventPool>(id)),
        clock_(std::make_shared<DeviceClock>(id)),
        device_pool_(tandem::cuda(id), "device memory", std::make_unique<CudaDeviceAllocator>(id)),
        pinned_pool_(tandem::cuda(id), "pinned host memory",
                     std::make_unique<CudaPinnedAllocator>(id)) {
    if (config.compute_streams < 1) {
      throw Error("tandem: " + to_string(device()) + ": compute_streams must be at least 1, got " +
                  std::to_string(config.compute_streams));
    }
    cudaDeviceProp properties{};
    TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&properties, id), id);
    capacity_ = properties.totalGlobalMem;
    description_ = to_string(device()) + ": " + properties.name + ", " +
                   std::to_string(capacity_ >> 20) + " MiB, compute capability " +
                   std::to_string(properties.major) + "." + std::to_string(properties.minor);
    for (int i = 0; i < config.compute_streams; ++i) {
      compute_.push_back(std::make_unique<CudaStream>(id, Queue::compute, i, events_, clock_));
    }
    h2d_ = std::make_unique<CudaStream>(id, Queue::copy_h2d, 0, events_, clock_);
    d2h_ = std::make_unique<CudaStream>(id, Queue::copy_d2h, 0, events_, clock_);
    peer_ = std::make_unique<CudaStream>(id, Queue::copy_d2d, 0, events_, clock_);
    comm_ = std::make_unique<CudaStream>(id, Queue::comm, 0, events_, clock_);
    log().info("tandem: {} ready with {} compute streams", description_, compute_.size());
  }

  Device device() const override { return tandem::cuda(id_); }
  std::string description() const override { return description_; }
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
        break;
    }
    return *comm_;
  }

  MemoryPool& device_pool() override { return device_pool_; }
  MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return capacity_; }
  void bind_thread() override { TANDEM_CUDA_CHECK(cudaSetDevice(id_), id_); }

  void synchronize() override {
    // Every stream is drained, even after a failure; the first error is thrown at the end.
    std::exception_ptr first;
    auto drain = [&](CudaStream& stream) {
      try {
        stream.synchronize();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    };
    for (auto& stream : compute_) drain(*stream);
    drain(*h2d_);
    drain(*d2h_);
    drain(*peer_);
    drain(*comm_);
    if (first) std::rethrow_exception(first);
  }

 private:
  const int id_;
  std::string description_;
  std::size_t capacity_ = 0;
  const std::shared_ptr<EventPool> events_;
  const std::shared_ptr<DeviceClock> clock_;
  // Declared before the streams: destroyed after them, so nothing enqueued can still use them.
  MemoryPool device_pool_;
  MemoryPool pinned_pool_;
  std::vector<std::unique_ptr<CudaStream>> compute_;
  std::unique_ptr<CudaStream> h2d_, d2h_, peer_, comm_;
};

CudaStream& cuda_stream_of(Stream& stream, const char* what) {
  auto* cuda = dynamic_cast<CudaStream*>(&stream);
  if (cuda == nullptr) {
    throw Error(std::string("tandem: ") + what + ": " + stream.name() +
                " is not a gpu stream (the op runs on " + to_string(stream.device()) + ")");
  }
  return *cuda;
}

}  // namespace

int cuda_device_count() {
  static const int count = [] {
    int n = 0;  // left untouched when the call fails (docs/toolchain.md)
    const cudaError_t status = cudaGetDeviceCount(&n);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      // No driver (cudaErrorInsufficientDriver), no device (cudaErrorNoDevice), the driver
      // stub (cudaErrorStubLibrary)...: a machine without usable GPUs, not a failure.
      log().info(
          "tandem: no CUDA devices: cudaGetDeviceCount answered {} ({}); gpu(i) devices are "
          "unavailable",
          cudaGetErrorString(status), cudaGetErrorName(status));
      return 0;
    }
    return n;
  }();
  return count;
}

std::unique_ptr<Accelerator> make_cuda_accelerator(int id, const AcceleratorConfig& config) {
  const int count = cuda_device_count();
  if (id < 0 || id >= count) {
    throw Error("tandem: " + to_string(tandem::cuda(id)) + " does not exist: this machine has " +
                std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                (count == 0 ? " (no GPU or no driver; see TANDEM_LOG_LEVEL=info for why)" : ""));
  }
  return std::make_unique<CudaAccelerator>(id, config);
}

cublasHandle_t cublas_handle(Stream& stream) {
  return cuda_stream_of(stream, "cublas_handle").cublas();
}

}  // namespace detail

cudaStream_t cuda_stream(Stream& stream) {
  return detail::cuda_stream_of(stream, "cuda_stream").handle();
}

}  // namespace tandem
