// Per-stream scratch memory for the CUDA kernels' temporaries (im2col matrices, CUB's temporary
// storage, packed gemm operands, flags).
//
// Every op enqueued on one stream runs after the ops enqueued on it before, so one block per
// stream can serve every op on that stream in turn: an op's kernels are done with it before the
// next op's kernels start. The block only grows (cudaFreeAsync of the old block, cudaMallocAsync
// of a bigger one, both in stream order), so a steady loop of the same ops allocates nothing:
// no cudaMallocAsync per op, as PyTorch's caching allocator gives its ops the same block back.
//
// Two cases take a block of their own (cudaMallocAsync, cudaFreeAsync when the op's launch ends,
// counted as an allocation): a stream being captured into a CUDA Graph (the graph owns its
// memory nodes and may replay on another stream), and a second scratch of one op while its
// first is held.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>

namespace tandem::ops::cuda {

class ScratchArena {
 public:
  // The arena of `stream` (created on first use, kept for the process's life).
  static ScratchArena& of(cudaStream_t stream);

  // Takes the block, grown to at least `bytes`; nullptr when it is held already (the caller
  // then allocates on its own). Throws tandem::Error when the device has no memory for it.
  void* acquire(std::size_t bytes, cudaStream_t stream, int device, const char* op);
  void release() noexcept { held_.store(false, std::memory_order_release); }

  std::size_t capacity() const { return capacity_; }

 private:
  std::atomic<bool> held_{false};
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace tandem::ops::cuda
