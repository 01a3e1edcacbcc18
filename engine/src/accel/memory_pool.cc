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

#include "base/assertions.h"
#include "base/logging.h"
#include "tandem/detail/fault_injection.h"
#include "tandem/launch_counters.h"

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

MemoryPool::MemoryPool(Device device, std::string what, std::unique_ptr<RawAllocator> raw,
                       std::size_t cache_limit)
    : device_(device), what_(std::move(what)), raw_(std::move(raw)), cache_limit_(cache_limit) {}

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

MemoryBlock MemoryPool::try_allocate(std::size_t bytes) {
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
      note_allocated_locked({data, size});
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
  if (data == nullptr) return {};
  // The profiler's per-op counters (launch_counters.h): accelerator pools only (device and
  // pinned memory), not the host pool of CPU arrays.
  if (device_.is_accelerator()) count_device_allocations();
  std::lock_guard lock(mutex_);
  ++stats_.raw_allocations;
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  note_allocated_locked({data, size});
  return {data, size};
}

void MemoryPool::note_allocated_locked([[maybe_unused]] MemoryBlock block) {
#if TANDEM_ASSERTIONS_ON
  TANDEM_ASSERT(live_.emplace(block.data, block.bytes).second,
                "a memory pool handed out a block that was still in use");
#endif
}

void MemoryPool::note_freed_locked([[maybe_unused]] MemoryBlock block,
                                   [[maybe_unused]] bool pending_only) {
#if TANDEM_ASSERTIONS_ON
  const auto it = live_.find(block.data);
  TANDEM_ASSERT(it != live_.end(), "a block freed to a pool that did not hand it out (or twice)");
  TANDEM_ASSERT(it->second == block.bytes, "a block freed with another size than its own");
  if (!pending_only) live_.erase(it);
#endif
}

void MemoryPool::throw_out_of_memory(std::size_t bytes) const {
  const MemoryPoolStats now = stats();
  const std::size_t live =
      now.bytes_in_use > now.bytes_pending_free ? now.bytes_in_use - now.bytes_pending_free : 0;
  throw OutOfMemoryError(
      device_, bytes,
      what_ + " exhausted after releasing the cache (size class " +
          describe_bytes(size_class(bytes)) + "; " + describe_bytes(live) +
          " in use by live arrays, " + describe_bytes(now.bytes_pending_free) +
          " by freed arrays whose free waits for queued ops); free arrays, sync more often, or "
          "use smaller batches");
}

// Test-only (tandem/detail/fault_injection.h): an accelerator pool's allocation fails as if the
// device were full.
void MemoryPool::inject_fault(std::size_t bytes) const {
  if (!device_.is_accelerator() || !detail::inject_fault(testing::FaultKind::device_allocation)) {
    return;
  }
  throw OutOfMemoryError(
      device_, bytes, what_ + detail::injected_fault_note(testing::FaultKind::device_allocation));
}

MemoryBlock MemoryPool::allocate(std::size_t bytes) {
  if (bytes == 0) return {};
  if (detail::faults_armed()) inject_fault(bytes);
  const MemoryBlock block = try_allocate(bytes);
  if (block.data == nullptr) throw_out_of_memory(bytes);
  return block;
}

MemoryBlock MemoryPool::allocate_or_wait(std::size_t bytes) {
  if (bytes == 0) return {};
  if (detail::faults_armed()) inject_fault(bytes);
  for (;;) {
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(mutex_);
      seen = expected_freed_;
    }
    const MemoryBlock block = try_allocate(bytes);
    if (block.data != nullptr) return block;
    std::unique_lock lock(mutex_);
    // A pending free that happened since the attempt: its block is back, retry at once.
    if (expected_freed_ != seen) continue;
    if (stats_.bytes_pending_free == 0) break;
    // Memory is coming back: wait for the next pending free, then try again. Each round sees
    // one more block back, so the loop ends.
    ++stats_.waits_for_frees;
    freed_.wait(lock, [&] { return expected_freed_ != seen; });
  }
  throw_out_of_memory(bytes);
}

void MemoryPool::expect_free(MemoryBlock block) noexcept {
  if (block.data == nullptr) return;
  std::lock_guard lock(mutex_);
  note_freed_locked(block, /*pending_only=*/true);
  stats_.bytes_pending_free += block.bytes;
}

bool MemoryPool::cache_locked(MemoryBlock block) noexcept {
  note_freed_locked(block, /*pending_only=*/false);
  stats_.bytes_in_use -= block.bytes;
  if (block.bytes > cache_limit_ - std::min(cache_limit_, stats_.bytes_cached)) return false;
  try {
    cached_[block.bytes].push_back(block.data);
    stats_.bytes_cached += block.bytes;
    return true;
  } catch (...) {
    return false;  // no room to remember the block: the caller returns it to the raw allocator
  }
}

void MemoryPool::free(MemoryBlock block) noexcept {
  if (block.data == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    if (cache_locked(block)) return;
  }
  raw_->deallocate(block.data, block.bytes);
  std::lock_guard lock(mutex_);
  ++stats_.raw_frees;
}

void MemoryPool::cancel_expected_free(MemoryBlock block) noexcept {
  if (block.data == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    note_freed_locked(block, /*pending_only=*/true);
    stats_.bytes_pending_free -= block.bytes;
    ++expected_freed_;  // waiters look again: if nothing else is pending, they give up
  }
  freed_.notify_all();
}

// A waiter retries once expected_freed_ moves, so it moves only once the block can be had
// again: in the cache, or back with the raw allocator.
void MemoryPool::free_expected(MemoryBlock block) noexcept {
  if (block.data == nullptr) return;
  bool cached = false;
  {
    std::lock_guard lock(mutex_);
    cached = cache_locked(block);
    if (cached) {
      stats_.bytes_pending_free -= block.bytes;
      ++expected_freed_;
    }
  }
  if (!cached) {
    raw_->deallocate(block.data, block.bytes);
    std::lock_guard lock(mutex_);
    ++stats_.raw_frees;
    stats_.bytes_pending_free -= block.bytes;
    ++expected_freed_;
  }
  freed_.notify_all();
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
