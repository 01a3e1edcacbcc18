// CudaAccelerator: gpu(i) behind the Accelerator interface. Per device: N compute streams, one
// stream per copy direction, one peer-copy stream and one comm stream (all non-blocking, so
// copies overlap compute and each other), an event pool, a clock for timing events, and the
// caching pools over cudaMalloc and cudaHostAlloc.
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/logging.h"
#include "cuda_check.h"
#include "cuda_event.h"
#include "cuda_factory.h"
#include "cuda_memory.h"
#include "cuda_stream.h"
#include "tandem/accel/cuda.h"
#include "tandem/accel/stream_set.h"
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
                     std::make_unique<CudaPinnedAllocator>(id)),
        streams_(tandem::cuda(id), config.compute_streams,
                 [this, options = CudaLibraryOptions{.allow_tf32 = config.allow_tf32,
                                                     .use_cudnn = config.use_cudnn}](
                     Queue queue, int index, std::string name) {
                   return std::make_unique<CudaStream>(id_, queue, index, std::move(name), events_,
                                                       clock_, options);
                 }) {
    cudaDeviceProp properties{};
    TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&properties, id), id);
    capacity_ = properties.totalGlobalMem;
    description_ = to_string(device()) + ": " + properties.name + ", " +
                   std::to_string(capacity_ >> 20) + " MiB, compute capability " +
                   std::to_string(properties.major) + "." + std::to_string(properties.minor);
    log().info("tandem: {} ready with {} compute streams", description_, compute_streams());
  }

  Device device() const override { return tandem::cuda(id_); }
  std::string description() const override { return description_; }
  int compute_streams() const override { return streams_.compute_streams(); }
  Stream& stream(Queue queue, int index) override { return streams_.stream(queue, index); }
  Stream& staging_stream(Queue direction) override { return streams_.staging(direction); }

  MemoryPool& device_pool() override { return device_pool_; }
  MemoryPool& pinned_pool() override { return pinned_pool_; }
  std::size_t memory_capacity() const override { return capacity_; }
  void bind_thread() override { TANDEM_CUDA_CHECK(cudaSetDevice(id_), id_); }

  // Every stream is drained, even after a failure; the first error is thrown at the end.
  void synchronize() override { streams_.synchronize(); }

 private:
  const int id_;
  std::string description_;
  std::size_t capacity_ = 0;
  const std::shared_ptr<EventPool> events_;
  const std::shared_ptr<DeviceClock> clock_;
  // Declared before the streams: destroyed after them, so nothing enqueued can still use them.
  MemoryPool device_pool_;
  MemoryPool pinned_pool_;
  StreamSet streams_;
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

// The first handle asked for on a device makes every compute stream's handle. Each costs a
// cublasCreate and a cudaMalloc of its workspace (milliseconds, and cudaMalloc waits for the
// device); made one stream at a time, the second stream's landed in the middle of a loop of
// products the first time the stream chooser picked that stream: one source of the spread of
// dot's speed from one call of a program to the next (3-19 TFLOP/s at 1024 on an H100).
cublasHandle_t cublas_handle(Stream& stream) {
  CudaStream& own = cuda_stream_of(stream, "cublas_handle");
  const int device = stream.device().id;
  constexpr int kMaxDevices = 64;
  static std::once_flag all_made[kMaxDevices];
  if (device >= 0 && device < kMaxDevices) {
    std::call_once(all_made[device], [&stream] {
      Accelerator& accelerator = tandem::accelerator(stream.device());
      for (int i = 0; i < accelerator.compute_streams(); ++i) {
        (void)cuda_stream_of(accelerator.stream(Queue::compute, i), "cublas_handle").cublas();
      }
    });
  }
  return own.cublas();
}

CudaLibraryOptions library_options(Stream& stream) {
  return cuda_stream_of(stream, "library_options").library_options();
}

}  // namespace detail

cudaStream_t cuda_stream(Stream& stream) {
  return detail::cuda_stream_of(stream, "cuda_stream").handle();
}

}  // namespace tandem
