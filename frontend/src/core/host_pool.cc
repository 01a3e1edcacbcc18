#include "core/host_pool.h"

#include <tandem/accel/memory_pool.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

#include "tandem/nd/detail/host_allocation_count.h"

namespace tandem::nd::detail {

namespace {

constexpr std::align_val_t kAlignment{64};
// Below this, blocks come from malloc's thread caches directly.
constexpr std::size_t kPooledFrom = 16 * 1024;
// Freed bytes the pool keeps for reuse at most; past it, blocks go back to the system.
constexpr std::size_t kCacheLimit = std::size_t{1} << 30;

class AlignedHostMemory final : public RawAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    return ::operator new(bytes, kAlignment, std::nothrow);
  }
  void deallocate(void* data, std::size_t) noexcept override {
    ::operator delete(data, kAlignment);
  }
};

// Never destroyed: engine deleters may free blocks during static destruction.
MemoryPool& pool() {
  static MemoryPool* instance = new MemoryPool(tandem::cpu(), "host memory",
                                               std::make_unique<AlignedHostMemory>(), kCacheLimit);
  return *instance;
}

}  // namespace

namespace {
std::atomic<std::uint64_t> host_allocations{0};
}  // namespace

std::uint64_t host_allocation_count() noexcept {
  return host_allocations.load(std::memory_order_relaxed);
}

void* host_allocate(std::size_t bytes) noexcept {
  host_allocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes < kPooledFrom) return ::operator new(bytes == 0 ? 1 : bytes, kAlignment, std::nothrow);
  try {
    return pool().allocate(bytes).data;
  } catch (...) {
    return nullptr;  // out of memory (OutOfMemoryError), or no memory for the pool's books
  }
}

void host_free(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
  if (bytes < kPooledFrom) {
    ::operator delete(data, kAlignment);
    return;
  }
  pool().free({data, MemoryPool::size_class(bytes)});
}

}  // namespace tandem::nd::detail
