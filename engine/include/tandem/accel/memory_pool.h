// MemoryPool: a caching allocator over one kind of raw memory (a device's memory, pinned host
// memory), the seeds' memory pool: after warm-up a program allocates and frees without calling
// cudaMalloc/cudaFree (or their sim and pinned counterparts) at all.
//
//   tandem::MemoryBlock block = pool.allocate(bytes);   // throws OutOfMemoryError
//   ...
//   pool.free(block);                                   // back to the cache, not to the device
//
// Invariants:
// - Requests are rounded up to a size class (powers of two split in four steps above 1 MiB,
//   512-byte multiples below), and a freed block is cached under its class; a request takes a
//   cached block of its class before asking the raw allocator.
// - A block is reused only after `free`: the caller frees only once every op that used the block
//   has finished (in tandem, freeing is a write op on the array's var), so no stream tracking
//   is needed.
// - Out of memory: release every cached block back to the raw allocator, retry once, then throw
//   OutOfMemoryError naming the device and the size, and telling the bytes of live blocks from
//   those whose free is already queued.
// - The cache holds at most `cache_limit` bytes (unbounded unless the constructor says).
// - Pending frees: a block whose free is queued behind ops that still use it (an array's last
//   handle is gone, its deleter has not run yet) is announced with `expect_free` and freed with
//   `free_expected`. `allocate_or_wait` waits for such frees before it gives up, so memory that
//   is about to come back never makes an allocation fail.
// - Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/device.h"
#include "tandem/errors.h"

namespace tandem {

class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(Device device, std::size_t bytes, const std::string& detail);
  Device device() const { return device_; }
  std::size_t bytes() const { return bytes_; }

 private:
  Device device_;
  std::size_t bytes_;
};

struct MemoryBlock {
  void* data = nullptr;
  std::size_t bytes = 0;  // the size class (≥ the bytes asked for)
};

// The memory underneath a pool. `allocate` returns nullptr when there is no memory left (it
// may throw tandem::Error for other failures). Both calls must be thread-safe: the pool calls
// them outside its own lock, so that a slow device allocation never stalls threads that only
// hit the cache or free.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* data, std::size_t bytes) noexcept = 0;
};

struct MemoryPoolStats {
  std::uint64_t raw_allocations = 0;  // calls to the raw allocator that succeeded
  std::uint64_t raw_frees = 0;
  std::uint64_t cache_hits = 0;        // requests served from the cache
  std::uint64_t oom_retries = 0;       // times the cache was emptied to retry an allocation
  std::size_t bytes_in_use = 0;        // handed out and not freed (pending frees included)
  std::size_t bytes_pending_free = 0;  // in use, announced by expect_free, not freed yet
  std::size_t bytes_cached = 0;        // freed, kept for reuse
  std::uint64_t waits_for_frees = 0;   // times allocate_or_wait waited for a pending free
  std::size_t peak_bytes_in_use = 0;
};

class MemoryPool {
 public:
  static constexpr std::size_t kUnboundedCache = ~std::size_t{0};

  // `cache_limit`: freed bytes kept for reuse at most; a block freed past it goes back to the
  // raw allocator (host memory pools bound their cache; device pools keep everything).
  MemoryPool(Device device, std::string what, std::unique_ptr<RawAllocator> raw,
             std::size_t cache_limit = kUnboundedCache);
  ~MemoryPool();  // returns every cached block; blocks still in use are reported and leaked
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Zero bytes gives a null block. Throws OutOfMemoryError after the release-and-retry.
  MemoryBlock allocate(std::size_t bytes);
  // allocate(), but when memory is short while frees are pending, waits for the next pending
  // free and retries, until the allocation succeeds or no free is pending; then throws
  // OutOfMemoryError. It blocks until queued ops have run: never call it from inside an op
  // (tandem::inside_op()), where the free it waits for may be queued behind the caller.
  MemoryBlock allocate_or_wait(std::size_t bytes);
  void free(MemoryBlock block) noexcept;
  // `block` (in use) will be freed with free_expected by an op already queued.
  void expect_free(MemoryBlock block) noexcept;
  // Frees a block announced with expect_free, and wakes allocate_or_wait.
  void free_expected(MemoryBlock block) noexcept;
  // The free announced for `block` will not happen after all (the block stays in use, e.g.
  // leaked because the engine refused the deletion): stop counting it as pending.
  void cancel_expected_free(MemoryBlock block) noexcept;
  // Returns every cached block to the raw allocator.
  void release_cached() noexcept;
  MemoryPoolStats stats() const;
  Device device() const { return device_; }
  static std::size_t size_class(std::size_t bytes);

 private:
  const Device device_;
  const std::string what_;  // "device memory", "pinned host memory"
  std::unique_ptr<RawAllocator> raw_;
  const std::size_t cache_limit_;
  mutable std::mutex mutex_;
  // nullptr when the raw allocator has no memory left even after releasing the cache.
  MemoryBlock try_allocate(std::size_t bytes);
  [[noreturn]] void throw_out_of_memory(std::size_t bytes) const;
  // Throws OutOfMemoryError when fault injection fails this allocation.
  void inject_fault(std::size_t bytes) const;
  // Takes the block out of use and into the cache; false when the cache had no room (the
  // caller then returns it to the raw allocator). Under mutex_.
  bool cache_locked(MemoryBlock block) noexcept;

  std::unordered_map<std::size_t, std::vector<void*>> cached_;  // size class -> free blocks
  MemoryPoolStats stats_;
  std::condition_variable freed_;     // signalled by free_expected
  std::uint64_t expected_freed_ = 0;  // free_expected calls so far, under mutex_
  // Blocks handed out and not freed (data -> size class), under mutex_: kept only in builds with
  // internal assertions (TANDEM_ASSERTIONS), to check that a block comes back to its own pool,
  // once, with its size.
  std::unordered_map<void*, std::size_t> live_;
  void note_allocated_locked(MemoryBlock block);
  void note_freed_locked(MemoryBlock block, bool pending_only);
};

}  // namespace tandem
