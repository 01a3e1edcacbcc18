#include "cuda_stream.h"

#include <exception>
#include <set>
#include <utility>

#include "base/logging.h"
#include "cuda_check.h"
#include "cuda_device_graph.h"
#include "cuda_memory.h"
#include "tandem/errors.h"

namespace tandem::detail {

namespace {

// A host item in flight: the work, the segment it belongs to (to skip it after an upstream
// failure and to fail the next event if it throws) and the stream's unreported error.
struct HostItem {
  std::function<void()> work;
  std::shared_ptr<StreamSegment> segment;
  std::size_t upstream_before = 0;
  std::shared_ptr<FirstError> unreported;
};

// Runs on a thread of the CUDA runtime, in stream order. It must not call CUDA (the runtime
// may deadlock or answer cudaErrorNotPermitted; cudaLaunchHostFunc documentation), so errors are
// only recorded here, never reported through CUDA.
void run_host_item(void* data) noexcept {
  // Declared first, so it also covers the item's destruction, which may free a pinned stage
  // held by the work's captures: frees there are deferred (CudaPinnedAllocator).
  HostCallbackScope no_cuda_here;
  std::unique_ptr<HostItem> item(static_cast<HostItem*>(data));
  if (item->segment->error_before(item->upstream_before)) return;  // skipped: upstream failed
  try {
    item->work();
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    item->segment->fail(error);
    item->unreported->set(error);
  }
}

// Peer access between two devices makes cudaMemcpyPeerAsync a direct copy over NVLink/PCIe;
// without it the copy still works, staged through host memory by the driver. So peer access is
// an optimization, tried once per ordered pair: a pair is recorded only once the attempt has
// answered (enabled, already enabled, or not possible), and a refusal is logged, never thrown.
// A failed query is not recorded, so a later copy tries again.
void enable_peer_access(int from, int to) noexcept {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  try {
    std::lock_guard lock(mutex);
    if (tried.count({from, to}) != 0) return;
    int possible = 0;
    cudaError_t status = cudaDeviceCanAccessPeer(&possible, from, to);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      log().warn("tandem: {}; copies between gpu({}) and gpu({}) go without peer access",
                 cuda_error_message("cudaDeviceCanAccessPeer", from, status), from, to);
      return;
    }
    if (possible) {
      DeviceGuard guard(from);
      status = cudaDeviceEnablePeerAccess(to, 0);
      if (status != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: later launch checks must not see it
        if (status != cudaErrorPeerAccessAlreadyEnabled) {
          log().warn("tandem: {}; copies from gpu({}) to gpu({}) are staged through the host",
                     cuda_error_message("cudaDeviceEnablePeerAccess", from, status), from, to);
        }
      }
    }
    tried.insert({from, to});
  } catch (const std::exception& e) {  // DeviceGuard, or no memory for the set
    log().warn("tandem: peer access from gpu({}) to gpu({}) not enabled: {}", from, to, e.what());
  }
}

// The device that owns `pointer`, or -1 for host memory (pinned, pageable or managed).
int owning_device(const void* pointer, int device) {
  cudaPointerAttributes attributes{};
  TANDEM_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer), device);
  return attributes.type == cudaMemoryTypeDevice ? attributes.device : -1;
}

// cuBLAS documentation (cublasSetWorkspace): 32 MiB recommended on Hopper, 4 MiB before.
std::size_t cublas_workspace_bytes(int device) {
  int major = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                    device);
  return major >= 9 ? std::size_t{32} << 20 : std::size_t{4} << 20;
}

}  // namespace

CudaStream::CudaStream(int device, Queue queue, int index, std::string name,
                       std::shared_ptr<EventPool> events, std::shared_ptr<DeviceClock> clock,
                       CudaLibraryOptions options)
    : device_(device),
      queue_(queue),
      index_(index),
      name_(std::move(name)),
      events_(std::move(events)),
      clock_(std::move(clock)),
      options_(options) {
  DeviceGuard guard(device_);
  // Non-blocking: no implicit synchronization with the legacy default stream, so work that
  // some library puts there does not serialize tandem's streams.
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), device_);
}

CudaStream::~CudaStream() {
  // Also runs at exit, possibly while the runtime unloads: failures are dropped quietly.
  auto quiet = [](bool failed) {
    if (failed) (void)cudaGetLastError();
  };
  if (cublas_ != nullptr) quiet(cublasDestroy(cublas_) != CUBLAS_STATUS_SUCCESS);
  if (cublas_workspace_ != nullptr) quiet(cudaFree(cublas_workspace_) != cudaSuccess);
  if (stream_ != nullptr) quiet(cudaStreamDestroy(stream_) != cudaSuccess);
}

Device CudaStream::device() const {
  return tandem::cuda(device_);
}

StreamSegment& CudaStream::open_segment() {
  if (!segment_) segment_ = std::make_shared<StreamSegment>();
  return *segment_;
}

void CudaStream::wait(const EventRef& event) {
  wait_on(event, /*inherit_error=*/true);
}

void CudaStream::wait_for_order(const EventRef& event) {
  wait_on(event, /*inherit_error=*/false);
}

void CudaStream::wait_on(const EventRef& event, bool inherit_error) {
  refuse_in_capture(inherit_error ? "wait" : "wait_for_order");
  if (!event) return;
  auto* cuda_event = dynamic_cast<CudaEvent*>(event.get());
  if (cuda_event == nullptr) {
    throw Error("tandem: " + name_ + " cannot wait on an event of " + to_string(event->device()) +
                ": a gpu stream waits only on gpu events (synchronize on the event instead)");
  }
  // Stream order already covers an event of this stream, but a failure before it must still
  // flow into this segment: the next record() closes it, and the segment the event closed is
  // not this one.
  const bool same_stream = cuda_event->origin() == this;
  // An event of this stream whose segment cannot fail (no host item, no wait there) leaves
  // nothing to do: stream order covers it, and device errors are the context's. Skipping the
  // cudaEventQuery saves a driver call per op in a chain of dependent ops on one stream
  // (issue 22, item 2); ordering-only waits on this stream need nothing either.
  if (same_stream && (!inherit_error || !cuda_event->segment())) return;
  if (event->query()) {
    // Complete: no device-side wait needed; a failure still flows downstream.
    if (std::exception_ptr failure = event->error(); failure && inherit_error) {
      std::lock_guard lock(mutex_);
      open_segment().fail(failure);
    }
    return;
  }
  if (!same_stream) {
    DeviceGuard guard(device_);
    // The wait uses the event's most recent record at this call (CUDA runtime documentation,
    // cudaStreamWaitEvent); the event may belong to another device.
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream_, cuda_event->handle(), 0), device_);
  }
  if (inherit_error && cuda_event->segment()) {
    std::lock_guard lock(mutex_);
    open_segment().add_upstream(cuda_event->segment());
  }
}

EventRef CudaStream::record(bool timing) {
  refuse_in_capture("record");
  // The reference is taken (and completed) before the event is recorded, so elapsed times
  // from it are never negative.
  std::shared_ptr<const TimingReference> reference = timing ? clock_->reference() : nullptr;
  const cudaEvent_t handle = events_->acquire(timing);
  std::lock_guard lock(mutex_);
  try {
    DeviceGuard guard(device_);
    TANDEM_CUDA_CHECK(cudaEventRecord(handle, stream_), device_);
  } catch (...) {
    events_->release(handle, timing);
    throw;
  }
  auto event = std::make_shared<CudaEvent>(device_, this, events_, handle, timing,
                                           std::move(segment_), std::move(reference));
  segment_.reset();
  return event;
}

void CudaStream::enqueue_host(std::function<void()> work, WorkCost) {
  refuse_in_capture("enqueue_host");
  auto item = std::make_unique<HostItem>();
  item->work = std::move(work);
  item->unreported = unreported_;
  std::lock_guard lock(mutex_);
  StreamSegment& segment = open_segment();
  item->segment = segment_;
  item->upstream_before = segment.upstream_count();
  DeviceGuard guard(device_);
  TANDEM_CUDA_CHECK(cudaLaunchHostFunc(stream_, &run_host_item, item.get()), device_);
  // From here the runtime owns the item: run_host_item deletes it. (If the context fails
  // first, the runtime never calls it and the item is lost with the context.)
  item.release();
}

void CudaStream::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(device_);
  if (queue_ == Queue::copy_d2d || queue_ == Queue::comm) {
    const int dst_device = owning_device(dst, device_);
    const int src_device = owning_device(src, device_);
    if (dst_device >= 0 && src_device >= 0 && dst_device != src_device) {
      enable_peer_access(dst_device, src_device);
      enable_peer_access(src_device, dst_device);
      TANDEM_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream_),
                        device_);
      return;
    }
  }
  // With unified virtual addressing the runtime infers the direction from the pointers.
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), device_);
}

void CudaStream::synchronize() {
  EventRef event = record(false);
  try {
    event->synchronize();  // this segment's error, or the device's
  } catch (...) {
    (void)unreported_->take();  // reported now (or superseded by a device error)
    throw;
  }
  // A host item of an earlier segment that failed since the last synchronize().
  if (std::exception_ptr earlier = unreported_->take()) std::rethrow_exception(earlier);
}

void CudaStream::refuse_in_capture(const char* call) const {
  if (!capturing_) return;
  throw Error("tandem: " + name_ + " is capturing a CUDA graph: " + call +
              " cannot be captured (only kernels, copies and cuBLAS calls on the stream can)");
}

void CudaStream::begin_graph_capture() {
  if (capturing_) {
    throw Error("tandem: " + name_ + " is already capturing a CUDA graph: end that capture first");
  }
  if (queue_ == Queue::compute) (void)cublas();  // its workspace is allocated outside the capture
  DeviceGuard guard(device_);
  TANDEM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), device_);
  capturing_ = true;
}

std::unique_ptr<DeviceGraph> CudaStream::end_graph_capture() {
  if (!capturing_) throw Error("tandem: " + name_ + " has no CUDA graph capture to end");
  capturing_ = false;
  DeviceGuard guard(device_);
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  if (status != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    // Names the refusal, e.g. a capture invalidated by a cudaMalloc or a legacy-stream sync.
    check_cuda(status, "cudaStreamEndCapture", device_);
  }
  return std::make_unique<CudaDeviceGraph>(device_, graph);  // instantiates it
}

void CudaStream::abort_graph_capture() noexcept {
  if (!capturing_) return;
  capturing_ = false;
  try {
    DeviceGuard guard(device_);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph != nullptr) {
      (void)cudaGraphDestroy(graph);
    }
  } catch (...) {
  }
  (void)cudaGetLastError();  // an invalidated capture's error is not for later checks
}

cublasHandle_t CudaStream::cublas() {
  if (queue_ != Queue::compute) {
    throw Error("tandem: " + name_ + " has no cuBLAS handle: only compute streams have one");
  }
  // call_once leaves the flag unset when the initializer throws, so a later call retries.
  std::call_once(cublas_once_, [this] {
    DeviceGuard guard(device_);
    cublasHandle_t handle = nullptr;
    TANDEM_CUBLAS_CHECK(cublasCreate(&handle), device_);
    void* workspace = nullptr;
    try {
      const std::size_t bytes = cublas_workspace_bytes(device_);
      // cublasSetStream resets the workspace to cuBLAS's default pool (cuBLAS documentation,
      // cublasSetStream), so the workspace is set after it.
      TANDEM_CUBLAS_CHECK(cublasSetStream(handle, stream_), device_);
      TANDEM_CUDA_CHECK(cudaMalloc(&workspace, bytes), device_);
      TANDEM_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, bytes), device_);
      // Strict fp32 unless TF32 was asked for (AcceleratorConfig::allow_tf32); set here once,
      // never per call.
      TANDEM_CUBLAS_CHECK(cublasSetMathMode(handle, options_.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                        : CUBLAS_DEFAULT_MATH),
                          device_);
    } catch (...) {
      cublasDestroy(handle);
      if (workspace != nullptr) cudaFree(workspace);
      throw;
    }
    cublas_ = handle;
    cublas_workspace_ = workspace;
  });
  return cublas_;
}

}  // namespace tandem::detail
