// Host memory for arrays: 64-byte aligned; large blocks go through a caching MemoryPool (the
// engine's allocator design, tandem/accel/memory_pool.h) over plain host memory.
//
// A loop that makes an array of the same size each iteration (y = x + 1) then reuses the same
// already-mapped pages instead of mapping and faulting in fresh ones from the kernel every time,
// which costs more than the arithmetic on them. The pool caches freed blocks by size class up to
// a bound on cached bytes; past it, freed blocks go back to the system. Small blocks bypass the
// pool: malloc's own thread caches are faster for them than the pool's lock.
//
// Thread-safe: blocks are allocated and freed by the engine's workers.
#pragma once

#include <cstddef>

namespace tandem::nd::detail {

// nullptr when the memory cannot be had.
void* host_allocate(std::size_t bytes) noexcept;
// `bytes` must be the size given to host_allocate.
void host_free(void* data, std::size_t bytes) noexcept;

}  // namespace tandem::nd::detail
