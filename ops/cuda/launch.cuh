// What every CUDA kernel of tandem_ops shares: the device guard, launch check and launch
// counters, grid sizes for grid-stride loops, StridedIndexer (strided views walked by a flat
// row-major index, common/strided_indexer.h), and stream-ordered scratch memory.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "common/strided_indexer.h"  // StridedIndexer, make_indexer
#include "scratch_arena.h"
#include "tandem/accel/cuda.h"
#include "tandem/accel/cuda_check.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/launch_counters.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

// Every CUDA call of the kernels is checked with the engine's helper: a failure is a
// tandem::Error "tandem: <what> on gpu(0) failed: <description> (<name>)".
using tandem::detail::check_cublas;
using tandem::detail::check_cuda;

// The launch context of one op: its stream's device is current while it lives (kernels and
// cudaMallocAsync go to the current device), `launched` checks and counts a kernel launch (or
// a memset), and `library_call` counts a cuBLAS / CUB call (tandem/launch_counters.h: the
// profiler's per-op counters, which sim's adapters model with the same numbers).
class Launch {
 public:
  Launch(tandem::Stream& stream, const char* op)
      : op_(op), device_(stream.device().id), stream_(tandem::cuda_stream(stream)) {
    check_cuda(cudaGetDevice(&previous_), op_, device_);
    if (previous_ != device_) {
      check_cuda(cudaSetDevice(device_), op_, device_);
    } else {
      previous_ = -1;
    }
  }
  ~Launch() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  const char* op() const { return op_; }
  // After every <<<...>>>: a bad configuration or a missing kernel image shows up here.
  void launched() const {
    check_cuda(cudaGetLastError(), op_, device_);
    count_kernel_launches();
  }
  void library_call() const { count_library_calls(); }

 private:
  const char* op_;
  int device_;
  cudaStream_t stream_;
  int previous_ = -1;
};

inline constexpr int kThreads = 256;

// The most blocks a grid-stride kernel gets on the current device: four waves of as many
// kThreads-blocks as its SMs hold at once (SM count x blocks per SM), as PyTorch sizes its
// grids; a bigger array then has each thread do several items. Read once per device.
inline std::int64_t max_grid_blocks() {
  constexpr int kMaxDevices = 64;
  constexpr int kWaves = 4;
  static std::atomic<std::int64_t> cached[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    (void)cudaGetLastError();
    return 65536;
  }
  std::int64_t blocks = cached[device].load(std::memory_order_relaxed);
  if (blocks != 0) return blocks;
  int sms = 0, threads_per_sm = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
          cudaSuccess ||
      sms <= 0 || threads_per_sm < kThreads) {
    (void)cudaGetLastError();
    return 65536;
  }
  blocks = std::int64_t{sms} * (threads_per_sm / kThreads) * kWaves;
  cached[device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

// Blocks for a grid-stride loop over n items: one per kThreads items, at most
// max_grid_blocks() (the device full for a few waves).
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, max_grid_blocks()));
}

// Device memory for one op's temporaries, in stream order: the stream's scratch arena
// (scratch_arena.h), which a steady loop reuses without allocating. While the stream is being
// captured into a graph, or when the arena is held by another Scratch of the same op, the block
// is the op's own: cudaMallocAsync now, cudaFreeAsync when the scope ends (after the kernels
// that use it were enqueued, before they ran: the free is stream-ordered too).
class Scratch {
 public:
  Scratch(const Launch& launch, std::size_t bytes) : launch_(launch) {
    if (bytes == 0) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(launch.stream(), &capture), "cudaStreamIsCapturing",
               launch.device());
    if (capture == cudaStreamCaptureStatusNone) {
      arena_ = &ScratchArena::of(launch.stream());
      data_ = arena_->acquire(bytes, launch.stream(), launch.device(), launch.op());
      if (data_ != nullptr) return;
      arena_ = nullptr;
    }
    check_cuda(cudaMallocAsync(&data_, bytes, launch.stream()), "cudaMallocAsync", launch.device());
    count_device_allocations();
  }
  ~Scratch() {
    if (arena_ != nullptr) {
      arena_->release();
    } else if (data_ != nullptr && cudaFreeAsync(data_, launch_.stream()) != cudaSuccess) {
      (void)cudaGetLastError();
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }
  template <class T>
  T* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data_) + byte_offset);
  }

 private:
  const Launch& launch_;
  ScratchArena* arena_ = nullptr;
  void* data_ = nullptr;
};

}  // namespace tandem::ops::cuda
