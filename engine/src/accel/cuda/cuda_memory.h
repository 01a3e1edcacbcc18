// The raw allocators under a gpu(i)'s MemoryPools: device memory (cudaMalloc on that device)
// and pinned host memory (cudaHostAlloc, portable to every device's context). Out of memory is
// answered with nullptr, so that the pool releases its cache and retries before it reports the
// error; every other failure throws tandem::Error.
#pragma once

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

class CudaPinnedAllocator final : public RawAllocator {
 public:
  explicit CudaPinnedAllocator(int device) : device_(device) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* data, std::size_t bytes) noexcept override;

 private:
  const int device_;  // whose pool it is (for messages; the memory serves every device)
};

}  // namespace tandem::detail
