#include "host_pool.h"

#include <bit>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tandem::nd::detail {

namespace {

constexpr std::align_val_t kAlignment{64};
constexpr std::size_t kCachedFrom = 16 * 1024;
constexpr std::size_t kCacheLimit = std::size_t{1} << 30;

// The size a request is served with: a multiple of 1/8 of its power of two.
std::size_t size_class(std::size_t bytes) {
  if (bytes < kCachedFrom) return bytes == 0 ? 1 : bytes;
  const std::size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

class HostPool {
 public:
  void* allocate(std::size_t bytes) noexcept {
    const std::size_t size = size_class(bytes);
    if (size >= kCachedFrom) {
      std::lock_guard lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* block = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        return block;
      }
    }
    return ::operator new(size, kAlignment, std::nothrow);
  }

  void free(void* data, std::size_t bytes) noexcept {
    if (data == nullptr) return;
    const std::size_t size = size_class(bytes);
    if (size >= kCachedFrom) {
      std::lock_guard lock(mutex_);
      if (cached_ + size <= kCacheLimit) {
        try {
          free_[size].push_back(data);
          cached_ += size;
          return;
        } catch (...) {
          // No room to remember the block: give it back instead.
        }
      }
    }
    ::operator delete(data, kAlignment);
  }

  void trim() noexcept {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* block : blocks) ::operator delete(block, kAlignment);
    }
    free_.clear();
    cached_ = 0;
  }

  std::size_t cached() noexcept {
    std::lock_guard lock(mutex_);
    return cached_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_ = 0;
};

// Never destroyed: engine deleters may free blocks during static destruction.
HostPool& pool() {
  static HostPool* instance = new HostPool;
  return *instance;
}

}  // namespace

void* host_allocate(std::size_t bytes) noexcept {
  return pool().allocate(bytes);
}

void host_free(void* data, std::size_t bytes) noexcept {
  pool().free(data, bytes);
}

void host_trim() noexcept {
  pool().trim();
}

std::size_t host_cached_bytes() noexcept {
  return pool().cached();
}

}  // namespace tandem::nd::detail
