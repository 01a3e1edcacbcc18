// CudaStream: the Stream of a gpu(i) queue, over one non-blocking cudaStream_t.
//
// - record(): a pooled event recorded on the stream; it closes the current StreamSegment.
// - wait(e): cudaStreamWaitEvent on the device, the host never blocks; an event already
//   complete needs no device wait, only its error is carried over. An event of this stream
//   needs no wait either, but its failure is carried over all the same.
// - wait_for_order(e): the same wait, without carrying a failure over.
// - enqueue_host(): cudaLaunchHostFunc; an exception fails the segment (the next event) and is
//   remembered for synchronize().
// - copy(): cudaMemcpyAsync(cudaMemcpyDefault) (unified addressing tells the direction);
//   the peer and comm streams use cudaMemcpyPeerAsync between two devices' memory.
// - compute streams own a cuBLAS handle bound to the stream with its own workspace.
// - begin_graph_capture()/end_graph_capture(): a CUDA Graph by stream capture
//   (cuda_device_graph.h). The cuBLAS handle is created before the capture starts, so that its
//   workspace is allocated (cudaMalloc) outside it and cuBLAS calls in the capture use that
//   user-set workspace rather than allocating one per capture. While capturing, wait(),
//   wait_for_order(), record() and enqueue_host() throw tandem::Error: their bookkeeping
//   (events of this stream's segments, host items freed after one run) is per launch, not per
//   graph.
//
// Enqueuing methods may be called from any thread but not concurrently on one stream with
// cuBLAS use (the engine drives a stream from one thread at a time).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "cuda_event.h"
#include "stream_segment.h"
#include "tandem/accel/cuda.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

class CudaStream final : public Stream {
 public:
  // `name`: the profiler's lane name (StreamSet::name).
  // `options`: AcceleratorConfig::allow_tf32 (the math mode of its cuBLAS handle) and
  // ::use_cudnn, which the kernels read through library_options().
  CudaStream(int device, Queue queue, int index, std::string name,
             std::shared_ptr<EventPool> events, std::shared_ptr<DeviceClock> clock,
             CudaLibraryOptions options = {});
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Device device() const override;
  Queue queue() const override { return queue_; }
  int index() const override { return index_; }
  const char* name() const override { return name_.c_str(); }

  void wait(const EventRef& event) override;
  void wait_for_order(const EventRef& event) override;
  EventRef record(bool timing = false) override;
  void enqueue_host(std::function<void()> work, WorkCost cost) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;

  bool supports_graph_capture() const override { return true; }
  void begin_graph_capture() override;
  std::unique_ptr<DeviceGraph> end_graph_capture() override;
  void abort_graph_capture() noexcept override;

  cudaStream_t handle() const { return stream_; }
  // The stream's cuBLAS handle, created on first use (compute streams only).
  cublasHandle_t cublas();
  const CudaLibraryOptions& library_options() const { return options_; }

 private:
  StreamSegment& open_segment();  // the current segment, created when first needed
  // wait() and wait_for_order(): the device-side wait, and with `inherit_error` the failure of
  // the event's segment carried into this stream's open segment.
  void wait_on(const EventRef& event, bool inherit_error);
  // Throws tandem::Error naming `call` while a graph capture is open.
  void refuse_in_capture(const char* call) const;

  const int device_;
  const Queue queue_;
  const int index_;
  const std::string name_;
  const std::shared_ptr<EventPool> events_;
  const std::shared_ptr<DeviceClock> clock_;
  cudaStream_t stream_ = nullptr;

  std::mutex mutex_;  // guards segment_
  // Errors of the work since the last record(); null while nothing in it can fail (the common
  // kernel-only case allocates nothing per record).
  std::shared_ptr<StreamSegment> segment_;
  // First failure of a host item since the last synchronize(), shared with the host items.
  const std::shared_ptr<FirstError> unreported_ = std::make_shared<FirstError>();

  // A graph capture is open: set and read by the thread that drives the stream.
  bool capturing_ = false;

  const CudaLibraryOptions options_;
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
};

}  // namespace tandem::detail
