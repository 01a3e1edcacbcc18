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
//   OutOfMemoryError naming the device and the size.
// - Thread-safe.
#pragma once

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
  std::uint64_t cache_hits = 0;   // requests served from the cache
  std::uint64_t oom_retries = 0;  // times the cache was emptied to retry an allocation
  std::size_t bytes_in_use = 0;   // handed out and not freed
  std::size_t bytes_cached = 0;   // freed, kept for reuse
  std::size_t peak_bytes_in_use = 0;
};

class MemoryPool {
 public:
  MemoryPool(Device device, std::string what, std::unique_ptr<RawAllocator> raw);
  ~MemoryPool();  // returns every cached block; blocks still in use are reported and leaked
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Zero bytes gives a null block. Throws OutOfMemoryError after the release-and-retry.
  MemoryBlock allocate(std::size_t bytes);
  void free(MemoryBlock block) noexcept;
  // Returns every cached block to the raw allocator.
  void release_cached() noexcept;
  MemoryPoolStats stats() const;
  Device device() const { return device_; }
  static std::size_t size_class(std::size_t bytes);

 private:
  const Device device_;
  const std::string what_;  // "device memory", "pinned host memory"
  std::unique_ptr<RawAllocator> raw_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> cached_;  // size class -> free blocks
  MemoryPoolStats stats_;
};

}  // namespace tandem
