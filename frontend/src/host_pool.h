// Host memory for arrays: 64-byte aligned, with a cache of freed large blocks.
//
// A loop that makes an array of the same size each iteration (y = x + 1) then reuses the same
// already-mapped pages instead of mapping and faulting in fresh ones from the kernel every time,
// which costs more than the arithmetic on them. Blocks are cached in size classes (each at most
// 12.5% larger than asked), up to a bound on cached bytes; past it, freed blocks go back to the
// system. Small blocks bypass the cache: malloc's own thread caches are fast for them.
//
// Thread-safe: blocks are allocated and freed by the engine's workers.
#pragma once

#include <cstddef>

namespace tandem::nd::detail {

// nullptr when the memory cannot be had.
void* host_allocate(std::size_t bytes) noexcept;
// `bytes` must be the size given to host_allocate.
void host_free(void* data, std::size_t bytes) noexcept;
// Returns every cached block to the system (tests, and programs that want their memory back).
void host_trim() noexcept;
// Bytes held in the cache right now.
std::size_t host_cached_bytes() noexcept;

}  // namespace tandem::nd::detail
