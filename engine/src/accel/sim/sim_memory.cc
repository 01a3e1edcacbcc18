#include "sim_memory.h"

#include <cstdlib>

namespace tandem::detail {

void* SimMemory::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (capacity_ != 0) {
    // Reserve first, so two threads cannot both take the last bytes.
    const std::size_t before = allocated_.fetch_add(rounded, std::memory_order_relaxed);
    if (before + rounded > capacity_) {
      allocated_.fetch_sub(rounded, std::memory_order_relaxed);
      return nullptr;
    }
  }
  void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data == nullptr && capacity_ != 0) allocated_.fetch_sub(rounded, std::memory_order_relaxed);
  return data;
}

void SimMemory::deallocate(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
  std::free(data);
  if (capacity_ != 0) {
    allocated_.fetch_sub((bytes + kAlignment - 1) / kAlignment * kAlignment,
                         std::memory_order_relaxed);
  }
}

}  // namespace tandem::detail
