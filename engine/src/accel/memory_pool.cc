// MemoryPool: the caching allocator of tandem/accel/memory_pool.h.
//
// One mutex guards the cache and the statistics. The raw allocator is called outside it: a
// cudaMalloc can take milliseconds and must not stall threads that only free or hit the cache.
// Stats therefore count a raw allocation when it has succeeded, never before.
#include "tandem/accel/memory_pool.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>
#include <utility>

#include "../logging.h"

namespace tandem {

namespace {

constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kLargeFrom = std::size_t{1} << 20;  // 1 MiB
constexpr int kStepsPerPowerOfTwo = 4;

std::string describe_bytes(std::size_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MiB", mib);
  return std::to_string(bytes) + " bytes (" + text + ")";
}

}  // namespace

OutOfMemoryError::OutOfMemoryError(Device device, std::size_t bytes, const std::string& detail)
    : Error("tandem: out of memory on " + to_string(device) + ": cannot allocate " +
            describe_bytes(bytes) + (detail.empty() ? std::string() : "; " + detail)),
      device_(device),
      bytes_(bytes) {}

MemoryPool::MemoryPool(Device device, std::string what, std::unique_ptr<RawAllocator> raw)
    : device_(device), what_(std::move(what)), raw_(std::move(raw)) {}

MemoryPool::~MemoryPool() {
  release_cached();
  if (stats_.bytes_in_use > 0) {
    // Freeing them here could pull memory from under an op still running; leaking is safe.
    detail::log().warn("tandem: {} pool of {} destroyed with {} still in use; leaked", what_,
                       to_string(device_), describe_bytes(stats_.bytes_in_use));
  }
}

std::size_t MemoryPool::size_class(std::size_t bytes) {
  if (bytes == 0) return 0;
  if (bytes < kLargeFrom) return (bytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  const std::size_t step = std::bit_floor(bytes) / kStepsPerPowerOfTwo;
  return (bytes + step - 1) / step * step;
}

MemoryBlock MemoryPool::allocate(std::size_t bytes) {
  if (bytes == 0) return {};
  const std::size_t size = size_class(bytes);
  {
    std::lock_guard lock(mutex_);
    auto it = cached_.find(size);
    if (it != cached_.end() && !it->second.empty()) {
      void* data = it->second.back();
      it->second.pop_back();
      ++stats_.cache_hits;
      stats_.bytes_cached -= size;
      stats_.bytes_in_use += size;
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      return {data, size};
    }
  }
  void* data = raw_->allocate(size);
  if (data == nullptr) {
    // Cached blocks of other size classes may be what the device lacks: give them all back,
    // then try once more.
    {
      std::lock_guard lock(mutex_);
      ++stats_.oom_retries;
    }
    release_cached();
    data = raw_->allocate(size);
  }
  if (data == nullptr) {
    const MemoryPoolStats now = stats();
    throw OutOfMemoryError(device_, bytes,
                           what_ + " exhausted after releasing the cache (" +
                               describe_bytes(now.bytes_in_use) +
                               " in use by live arrays, size class " + describe_bytes(size) +
                               "); free arrays, sync more often, or use smaller batches");
  }
  std::lock_guard lock(mutex_);
  ++stats_.raw_allocations;
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return {data, size};
}

void MemoryPool::free(MemoryBlock block) noexcept {
  if (block.data == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= block.bytes;
    try {
      cached_[block.bytes].push_back(block.data);
      stats_.bytes_cached += block.bytes;
      return;
    } catch (...) {
      // No room to remember the block: return it to the raw allocator below.
    }
  }
  raw_->deallocate(block.data, block.bytes);
  std::lock_guard lock(mutex_);
  ++stats_.raw_frees;
}

void MemoryPool::release_cached() noexcept {
  std::unordered_map<std::size_t, std::vector<void*>> blocks;
  {
    std::lock_guard lock(mutex_);
    blocks.swap(cached_);
    stats_.bytes_cached = 0;
  }
  std::uint64_t freed = 0;
  for (auto& [size, list] : blocks) {
    for (void* data : list) {
      raw_->deallocate(data, size);
      ++freed;
    }
  }
  std::lock_guard lock(mutex_);
  stats_.raw_frees += freed;
}

MemoryPoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tandem
