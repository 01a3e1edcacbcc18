// The raw allocators under a gpu(i)'s MemoryPools: device memory (cudaMalloc on that device)
// and pinned host memory (cudaHostAlloc, portable to every device's context). Out of memory is
// answered with nullptr, so that the pool releases its cache and retries before it reports the
// error; every other failure throws tandem::Error.
#pragma once

#include <atomic>
#include <cstddef>

#include "tandem/accel/memory_pool.h"

namespace tandem::detail {

class CudaDeviceAllocator final : public RawAllocator {
 public:
  explicit CudaDeviceAllocator(int device) : device_(device) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* data, std::size_t bytes) noexcept override;

 private:
  const int device_;
};

// True while the calling thread runs a host item of a CudaStream (a cudaLaunchHostFunc
// callback), where no CUDA call is allowed: the runtime may deadlock or answer
// cudaErrorNotPermitted.
bool in_host_callback() noexcept;

// Marks the calling thread as inside a host callback for its lifetime (run_host_item holds one
// around the item's work and its destruction, which may free pinned stages).
class HostCallbackScope {
 public:
  HostCallbackScope() noexcept;
  ~HostCallbackScope();
  HostCallbackScope(const HostCallbackScope&) = delete;
  HostCallbackScope& operator=(const HostCallbackScope&) = delete;

 private:
  bool outer_;
};

// Pinned memory can be freed from a host callback: a stream item that holds the last reference
// to a staging block is destroyed there, and the pool hands the block to deallocate() when it
// cannot cache it (out of host memory). cudaFreeHost is then deferred: the block goes on a
// lock-free list threaded through the blocks themselves (pinned blocks are host memory of at
// least a pointer's size, so deferring allocates nothing), and the next allocate() or
// deallocate() outside a callback, or the destructor, frees it.
class CudaPinnedAllocator final : public RawAllocator {
 public:
  explicit CudaPinnedAllocator(int device) : device_(device) {}
  ~CudaPinnedAllocator() override;
  CudaPinnedAllocator(const CudaPinnedAllocator&) = delete;
  CudaPinnedAllocator& operator=(const CudaPinnedAllocator&) = delete;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* data, std::size_t bytes) noexcept override;
  // Blocks freed in a callback and not yet returned to the runtime (for tests).
  std::size_t deferred_frees() const noexcept;

 private:
  struct DeferredBlock {
    DeferredBlock* next;
  };
  // Returns the deferred blocks to the runtime. Never from a callback.
  void free_deferred() noexcept;
  void free_now(void* data) noexcept;

  const int device_;  // whose pool it is (for messages; the memory serves every device)
  std::atomic<DeferredBlock*> deferred_{nullptr};
  std::atomic<std::size_t> deferred_count_{0};
};

}  // namespace tandem::detail
