// The raw memory under a sim device's pools: aligned host memory. Device memory has a modelled
// capacity (AcceleratorConfig::sim_memory_mb) so that running out of it, and the pool's
// release-and-retry path, happen on sim as they do on a GPU.
#pragma once

#include <atomic>
#include <cstddef>

#include "tandem/accel/memory_pool.h"

namespace tandem::detail {

class SimMemory final : public RawAllocator {
 public:
  // Alignment of every block, like cudaMalloc's.
  static constexpr std::size_t kAlignment = 256;

  // `capacity`: bytes that may be allocated at once; 0 means unbounded (pinned host memory).
  explicit SimMemory(std::size_t capacity) : capacity_(capacity) {}

  void* allocate(std::size_t bytes) override;
  void deallocate(void* data, std::size_t bytes) noexcept override;
  std::size_t capacity() const { return capacity_; }

 private:
  const std::size_t capacity_;
  std::atomic<std::size_t> allocated_{0};
};

}  // namespace tandem::detail
